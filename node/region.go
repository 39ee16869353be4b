package node

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/marketd/marketd/config"
	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/bus"
	"github.com/marketd/marketd/readmodel/store"
)

// A node of a region (--hub-domain, docs/tier.md#regions): its NATS server
// is the region's leaf node, whose JetStream (a domain of its own) keeps
// mirrors of the hub domain's streams under their names (bus/mirror.go).
// Everything the node reads at run time, the projector, the lag monitor
// and readiness, reads the region's JetStream, so a cut link changes
// nothing it checks: the mirrors stand still, the node stays ready and
// serves what it applied, and it applies the rest when the mirrors catch
// up. Only what Region reports, how far the region is behind the hub,
// asks across the link, bounded by a short deadline. The views snapshot
// is the region's own (published by the region's nodes to its JetStream);
// a region's first node restores the hub's, across the link, once.

// regionAskTimeout bounds a question to the hub across the link (a scrape,
// /admin/sources): a cut link answers "no responders" at once, a link
// that drops packets takes this long.
const regionAskTimeout = time.Second

// setUpRegion sets up the region's mirrors of cfg.HubDomain's streams in
// js (bus.SetUpMirrors), reaching the hub through nc to wait for new
// mirrors.
func setUpRegion(ctx context.Context, nc *nats.Conn, js jetstream.JetStream, cfg config.Config, log zerolog.Logger) error {
	hub, err := jetstream.NewWithDomain(nc, cfg.HubDomain)
	if err != nil {
		return err
	}
	return bus.SetUpMirrors(ctx, js, hub, cfg.HubDomain, cfg.StreamReplicas, log.With().Str("part", "region").Logger())
}

// Region is a serve node's view of its region: how far the region's
// mirrors are behind the hub domain's streams. Safe for concurrent use.
type Region struct {
	domain  string
	js, hub jetstream.JetStream
	reached atomic.Bool // the mirrors once heard from the hub (or held messages)
}

// newRegion returns the region of a node whose bus is js, mirroring
// domain.
func newRegion(js jetstream.JetStream, domain string) (*Region, error) {
	hub, err := jetstream.NewWithDomain(js.Conn(), domain)
	if err != nil {
		return nil, fmt.Errorf("jetstream of domain %s: %w", domain, err)
	}
	return &Region{domain: domain, js: js, hub: hub}, nil
}

// RegionStatus is the "region" of GET /admin/sources on a region's node.
type RegionStatus struct {
	HubDomain string `json:"hubDomain"`
	// HubReachable says the hub's streams answered across the link just
	// now; false: the region is cut off, and Streams say since when.
	HubReachable bool              `json:"hubReachable"`
	Streams      []bus.MirrorState `json:"streams,omitempty"`
	Error        string            `json:"error,omitempty"` // the region's own JetStream could not be read
}

// Status says how far the region's mirrors are behind the hub, asking
// the hub for at most regionAskTimeout.
func (r *Region) Status(ctx context.Context) RegionStatus {
	ctx, cancel := context.WithTimeout(ctx, regionAskTimeout+time.Second)
	defer cancel()
	out := RegionStatus{HubDomain: r.domain}
	ms, reachable, err := bus.Mirrors(ctx, r.js, askHub{r.hub})
	if err != nil {
		out.Error = err.Error()
		return out
	}
	out.HubReachable, out.Streams = reachable, ms
	return out
}

// Unreached is the readiness check of a region's node whose mirrors all
// hold nothing and never heard from the hub (a new region whose link was down
// from the start): it has nothing to serve, and says why. Once they have,
// it never objects again, whatever the link does; it leaves a region's
// bus that cannot be asked to the other checks.
func (r *Region) Unreached() string {
	if r.reached.Load() {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), regionAskTimeout)
	defer cancel()
	ms, _, err := bus.Mirrors(ctx, r.js, nil)
	if err != nil {
		return ""
	}
	for _, m := range ms {
		if m.Head > 0 || m.SinceContact >= 0 {
			r.reached.Store(true)
			return ""
		}
	}
	return fmt.Sprintf("region's mirrors have not reached the hub (domain %s) yet: nothing to serve", r.domain)
}

// askHub is the hub's JetStream with each stream lookup bounded by
// regionAskTimeout, so that a link that drops packets does not hold the
// local half of a status.
type askHub struct{ jetstream.JetStream }

func (h askHub) Stream(ctx context.Context, name string) (jetstream.Stream, error) {
	ctx, cancel := context.WithTimeout(ctx, regionAskTimeout)
	defer cancel()
	return h.JetStream.Stream(ctx, name)
}

// join returns the views' join of a region's node: the region's snapshot
// (local) when there is one, else the hub's, read across the link, when
// the region's mirrors already hold the positions it was taken at (its
// positions are the hub's sequences, which the mirrors keep); else the
// streams from their start.
func (r *Region) join(local *bus.Snapshots, sopts store.Options, log zerolog.Logger) func(ctx context.Context, dir string) bool {
	return func(ctx context.Context, dir string) bool {
		snaps := local
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := local.Latest(lctx)
		cancel()
		if errors.Is(err, bus.ErrNoSnapshot) {
			if hs := r.hubSnapshot(ctx, log); hs != nil {
				snaps = hs
			}
		}
		return restoreViews(ctx, snaps, dir, sopts, log)
	}
}

// hubSnapshot returns the hub's views snapshot when there is one that the
// region's mirrors can continue from, else nil.
func (r *Region) hubSnapshot(ctx context.Context, log zerolog.Logger) *bus.Snapshots {
	hs := bus.NewSnapshots(r.hub, 1)
	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	meta, err := hs.Latest(actx)
	if err != nil {
		log.Info().Err(err).Str("hub_domain", r.domain).Msg("no views snapshot in the region, none from the hub")
		return nil
	}
	heads, err := bus.Heads(actx, r.js)
	if err != nil || !heads.Covers(readmodel.Position{State: meta.State, Sales: meta.Sales}) {
		log.Info().Uint64("snapshot_state", meta.State).Uint64("mirror_state", heads.State).
			Msg("the hub's views snapshot is ahead of the region's mirrors: not restoring it")
		return nil
	}
	log.Info().Str("hub_domain", r.domain).Msg("no views snapshot in the region yet: restoring the hub's, across the link")
	return hs
}

// regionCollector exposes, at scrape time, how far the region is behind
// the hub.
type regionCollector struct {
	r                          *Region
	reachable, behind, contact *prometheus.Desc
}

func registerRegionMetrics(reg prometheus.Registerer, r *Region) {
	hub := prometheus.Labels{"hub_domain": r.domain}
	reg.MustRegister(&regionCollector{r: r,
		reachable: prometheus.NewDesc("marketd_region_hub_reachable",
			"1 when the hub's streams answered across the region's leaf link at this scrape, 0 when the region is cut off.", nil, hub),
		behind: prometheus.NewDesc("marketd_region_behind_messages",
			"Sequences of the hub's stream the region's mirror does not hold yet: exact while the hub answers, as of the mirror's last contact while cut off.", []string{"stream"}, hub),
		contact: prometheus.NewDesc("marketd_region_hub_contact_age_seconds",
			"Seconds since the region's mirror last heard from the hub (a message, or its heartbeat every second while the link is up).", []string{"stream"}, hub),
	})
}

func (c *regionCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.reachable
	ch <- c.behind
	ch <- c.contact
}

func (c *regionCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.r.Status(context.Background())
	if st.Error != "" {
		return
	}
	up := 0.0
	if st.HubReachable {
		up = 1
	}
	ch <- prometheus.MustNewConstMetric(c.reachable, prometheus.GaugeValue, up)
	for _, m := range st.Streams {
		ch <- prometheus.MustNewConstMetric(c.behind, prometheus.GaugeValue, float64(m.Behind), m.Stream)
		if m.SinceContact >= 0 {
			ch <- prometheus.MustNewConstMetric(c.contact, prometheus.GaugeValue, m.SinceContact.Seconds(), m.Stream)
		}
	}
}

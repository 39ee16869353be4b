package node

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/marketd/marketd/config"
	"github.com/marketd/marketd/httpapi"
	"github.com/marketd/marketd/internal/pace"
	"github.com/marketd/marketd/readmodel/bus"
	"github.com/marketd/marketd/readmodel/projector"
	"github.com/marketd/marketd/readmodel/store"
)

// Serving is the serving side of a node: its Views, the public API over
// them, the tier's views snapshot (published on schedule and on request,
// restored when the views directory is empty) and the lag monitor.
// OpenServing opens it as parts of a Node, which closes them.
type Serving struct {
	Views *Views
	// Region is how far a region's node (--hub-domain) is behind the hub;
	// nil on a node that reads the hub's streams.
	Region *Region
	snap   *snapshotter
	gate   *pace.Gate
}

// ServingOptions is what OpenServing needs besides the settings.
type ServingOptions struct {
	Registry *prometheus.Registry // the node's metrics
	Ready    *Readiness           // the node's; OpenServing adds the views' checks to it
	// Fed says this process's own ingest feeds the views (`all`): the
	// node is ready once its first cycle is projected, which the ingest
	// side marks; otherwise it is ready once the views caught up with the
	// streams, which OpenServing watches for.
	Fed bool
	// HoldFirstCycle: `all` on its embedded server holds renders until its
	// first cycle is projected (projector.Options.HoldFirstCycle).
	HoldFirstCycle bool
}

// snapshotDeadline bounds POST /admin/snapshot: at 100,000 collections x
// 100 tokens inside a 3 GiB memory cgroup a publish took about 3 minutes.
const snapshotDeadline = 15 * time.Minute

// OpenServing opens the serving side of a node into n, in DESIGN's
// shutdown order: the views' store (closed after HTTP), the public API
// listener on cfg.HTTPAddr, the views and their projector (drained before
// HTTP closes, healing themselves when damaged: heal.go), and the
// snapshot schedule. Views are fed from js. The reads of the API give way
// to background work through a pace.Gate (Yield). It fails when the API
// cannot be built, the listener cannot open, or the views cannot be
// opened for a reason other than damage.
func OpenServing(ctx context.Context, n *Node, js jetstream.JetStream, cfg config.Config, opts ServingOptions, log zerolog.Logger) (*Serving, error) {
	reg, ready := opts.Registry, opts.Ready
	// Background work gives way to the reads this process serves.
	s := &Serving{gate: pace.New(0, 0, 0)}
	registerPaceMetrics(reg, s.gate)
	sopts := store.Options{GCShare: cfg.ViewsGCShare, FeedEvents: cfg.FeedEvents, MarketEvents: cfg.MarketEvents}
	snaps := bus.NewSnapshots(js, cfg.StreamReplicas)
	s.Views = NewViews(cfg.DataDir, js, sopts, projector.Options{
		RowRetention:   cfg.RowRetention,
		HoldFirstCycle: opts.HoldFirstCycle,
		Yield:          s.gate.Yield,
	}, reg, log)
	if cfg.HubDomain != "" {
		r, err := newRegion(js, cfg.HubDomain)
		if err != nil {
			return nil, err
		}
		s.Region = r
		registerRegionMetrics(reg, r)
	}
	if cfg.Join == "snapshot" {
		s.Views.join = func(ctx context.Context, dir string) bool { return restoreViews(ctx, snaps, dir, sopts, log) }
		if s.Region != nil {
			s.Views.join = s.Region.join(snaps, sopts, log)
		}
	}
	registerStoreMetrics(reg, s.Views)
	lag := newLagMonitor(s.Views, js, cfg.PollInterval)
	api, err := httpapi.New(httpapi.Config{
		RateList: cfg.RateList, RateItem: cfg.RateItem, RateIPv6Prefix: cfg.RateIPv6Prefix,
		TrustedProxies: cfg.TrustedProxies,
		CursorKey:      []byte(cfg.CursorKey), CursorTTL: cfg.CursorTTL,
		RowRetention: cfg.RowRetention,
		Registry:     reg,
		OnRequest:    s.gate.Request,
		Status:       &publicStatus{views: s.Views, lag: lag, ready: ready},
	}, s.Views, log.With().Str("part", "api").Logger())
	if err != nil {
		return nil, fmt.Errorf("api: %w", err)
	}
	if cfg.CursorKey == "" {
		log.Warn().Msg("no --cursor-key set: cursors are signed with a random per-process key and will not verify on other nodes or after a restart")
	}
	ln, err := n.Listen("http", cfg.HTTPAddr)
	if err != nil {
		return nil, err
	}
	n.Add("badger", s.Views.CloseStore)
	n.Serve("http", func() error { return api.Listen(ln) }, api.Shutdown)
	if err := s.Views.Open(ctx); err != nil {
		return nil, fmt.Errorf("open views: %w", err)
	}
	n.Add("projector", s.Views.Stop)
	s.snap = newSnapshotter(snaps, s.Views, ID(cfg.NodeID), cfg.SnapshotEvery, ready.Ready, s.gate.Yield, reg, log)
	if err := s.snap.Open(ctx); err != nil {
		return nil, err
	}
	n.Add("snapshot", s.snap.Close)

	registerProjectorMetrics(reg, s.Views, js)
	go lag.run(ctx)
	ready.Require(s.Views.NotReady)
	if s.Region != nil {
		ready.Require(s.Region.Unreached)
	}
	ready.RequireServing(lag.reason)
	if !opts.Fed {
		ready.Until(func() string { return "catching up with the streams: " + lag.progress() })
		go s.readyWhenCaughtUp(ctx, ready, log)
	}
	return s, nil
}

// Yield is what background work of this process (ingest, in `all`)
// calls between units of work to give way to arriving reads.
func (s *Serving) Yield() { s.gate.Yield() }

// readyWhenCaughtUp marks the node ready once its views have applied what
// the streams held when their projector opened.
func (s *Serving) readyWhenCaughtUp(ctx context.Context, ready *Readiness, log zerolog.Logger) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		if s.Views.CaughtUp() {
			ready.MarkReady()
			log.Info().Msg("projector caught up; ready")
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// PublishSnapshot publishes this node's views as the tier's snapshot now:
// POST /admin/snapshot, bounded by snapshotDeadline (its error is then
// the context's: 504).
func (s *Serving) PublishSnapshot(ctx context.Context) (any, error) {
	ctx, cancel := context.WithTimeout(ctx, snapshotDeadline)
	defer cancel()
	return s.snap.PublishNow(ctx)
}

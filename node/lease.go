package node

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/marketd/marketd/config"
	"github.com/marketd/marketd/readmodel/bus"
)

// Lease is an ingest node's part in the ingest lease (bus.Lease, a
// JetStream key-value bucket): several `marketd ingest` may run on a
// tier, and the one holding the lease polls. OpenLease runs it until
// shutdown, Lead runs the first cycle of each term the node acquires,
// and NotReady is its readiness check. Safe for concurrent use.
type Lease struct {
	*bus.Lease
	log      zerolog.Logger // the role's: Lead's lines
	changed  chan struct{}  // a value whenever this node gains or loses the lease
	leadTerm atomic.Uint64  // the term whose first cycle this node published (Lead)
}

// releaseWait bounds the release of the lease on shutdown, so a bus
// that stops answering meanwhile leaves the parts closed after it their
// share of the shutdown.
const releaseWait = 2 * time.Second

// OpenLease opens the ingest lease as ID(cfg.NodeID), with period
// cfg.IngestLease, and runs it until shutdown, when it is released (after
// ingest stopped: parts close in reverse order) so a standby takes over
// at once (not when NATS is unreachable then: the key lapses on its
// own). Gaining and losing it are logged. It fails when the bucket
// cannot be opened.
func OpenLease(ctx context.Context, n *Node, js jetstream.JetStream, cfg config.Config, log zerolog.Logger) (*Lease, error) {
	l := &Lease{log: log, changed: make(chan struct{}, 1)}
	pl := log.With().Str("part", "lease").Logger()
	lease, err := bus.OpenLease(ctx, js, bus.LeaseOptions{Holder: ID(cfg.NodeID), Period: cfg.IngestLease, Replicas: cfg.StreamReplicas,
		OnChange: func(s bus.LeaseState) {
			if s.Held {
				pl.Info().Str("node", s.Node).Uint64("term", s.Term).Uint64("revision", s.Revision).Msg("ingest lease acquired; this node polls")
			} else {
				pl.Info().Str("node", s.Node).Str("holder", s.Holder).Msg("ingest lease held elsewhere; this node stands by")
			}
			select {
			case l.changed <- struct{}{}:
			default:
			}
		}})
	if err != nil {
		return nil, fmt.Errorf("ingest lease: %w", err)
	}
	l.Lease = lease
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() { defer close(done); lease.Run(rctx) }()
	n.Add("lease", func(ctx context.Context) error {
		cancel()
		<-done
		if nc := js.Conn(); nc != nil && !nc.IsConnected() {
			// Nothing can reach the bucket: the key lapses on its TTL, a
			// period from the last renewal, and a standby takes over then.
			pl.Warn().Msg("NATS unreachable: the ingest lease is not released; it lapses within one period")
			return nil
		}
		ctx, cancel := context.WithTimeout(ctx, releaseWait)
		defer cancel()
		return lease.Release(ctx)
	})
	return l, nil
}

// Lead runs cycle at once whenever this node acquires the lease (so a
// standby that took over does not wait for the next scheduled cycle),
// retrying a failed one, and marks ready once it has published a first
// cycle or knows it is a standby. It returns when ctx ends.
func (l *Lease) Lead(ctx context.Context, ready *Readiness, cycle func(context.Context) error) {
	var term uint64
	for {
		if l.Held() && l.Term() != term {
			start, t := time.Now(), l.Term()
			if err := cycle(ctx); err != nil {
				if ctx.Err() != nil {
					return
				}
				l.log.Error().Err(err).Msg("first cycle of this lease term failed; retrying")
			} else {
				term = t // a failed first cycle is retried, or the node would never turn ready
				l.published(t)
				ready.MarkReady()
				l.log.Info().Dur("took", time.Since(start)).Msg("first cycle of this lease term published; ready")
			}
		} else if !l.Held() && l.State().Holder != "" && !ready.Marked() {
			ready.MarkReady()
			l.log.Info().Str("holder", l.State().Holder).Msg("standby ingest; ready")
		}
		select {
		case <-ctx.Done():
			return
		case <-l.changed:
		case <-time.After(l.Period() / 4):
		}
	}
}

// published records that this node published the first cycle of lease
// term t: it is ready while it holds that term.
func (l *Lease) published(t uint64) { l.leadTerm.Store(t) }

// NotReady says why an ingest that takes part in the lease is not ready,
// "" when it is: it holds the lease and has published the first cycle of
// that term (Lead), or it stands by behind another holder. An ingest
// whose lease lapsed (the bus was unreachable for longer than its hold)
// and that has not taken it back is neither: it would refuse
// POST /admin/ingest and publish nothing, so it is not ready, even once
// NATS is reachable again.
func (l *Lease) NotReady() string {
	s := l.State()
	switch {
	case s.Held && l.leadTerm.Load() == s.Term:
		return ""
	case s.Held:
		return fmt.Sprintf("ingest lease acquired (term %d): its first cycle is not yet published", s.Term)
	case s.Holder != "" && s.Holder != s.Node:
		return "" // a standby
	default:
		return "ingest lease not held and no other holder seen: acquiring it"
	}
}

// LeaseView is who holds the ingest lease as a node sees it: its own
// Lease when it takes part, else the bucket's (BucketLease).
type LeaseView interface {
	// LeaseState returns the lease's state, or why it cannot be read.
	LeaseState(ctx context.Context) (bus.LeaseState, error)
}

// LeaseState is this node's own view of the lease (no bus round trip).
func (l *Lease) LeaseState(context.Context) (bus.LeaseState, error) { return l.State(), nil }

// BucketLease reads who holds the ingest lease from its bucket: the view
// of a node that does not take part in it.
type BucketLease struct{ JS jetstream.JetStream }

// LeaseState reads the bucket (bus.ReadLease).
func (b BucketLease) LeaseState(ctx context.Context) (bus.LeaseState, error) {
	return bus.ReadLease(ctx, b.JS)
}

// RegisterLeaseMetrics exposes who holds the ingest lease as v sees it
// (marketd_ingest_lease_holder, and marketd_ingest_lease_holders, 0 when
// nobody holds it) and, when v is this node's own Lease,
// whether this node (named node) holds it (marketd_ingest_lease_held).
func RegisterLeaseMetrics(reg prometheus.Registerer, v LeaseView, node string) {
	reg.MustRegister(&leaseCollector{v: v,
		held: prometheus.NewDesc("marketd_ingest_lease_held", "1 when this node holds the ingest lease (polls and publishes), 0 when it stands by.",
			nil, prometheus.Labels{"node": node}),
		holder:  prometheus.NewDesc("marketd_ingest_lease_holder", "The node that holds the ingest lease, as this node last saw it (value 1).", []string{"holder"}, nil),
		holders: prometheus.NewDesc("marketd_ingest_lease_holders", "How many nodes hold the ingest lease as this node last saw it: 1, or 0 when none does (nothing polls the upstreams).", nil, nil),
	})
}

// leaseCollector reads the lease at scrape time.
type leaseCollector struct {
	v                     LeaseView
	held, holder, holders *prometheus.Desc
}

func (c *leaseCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.held
	ch <- c.holder
	ch <- c.holders
}

func (c *leaseCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	s, err := c.v.LeaseState(ctx)
	if err != nil {
		return
	}
	if isOwn(c.v) {
		v := 0.0
		if s.Held {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(c.held, prometheus.GaugeValue, v)
	}
	holders := 0.0
	if s.Holder != "" {
		holders = 1
		ch <- prometheus.MustNewConstMetric(c.holder, prometheus.GaugeValue, 1, s.Holder)
	}
	ch <- prometheus.MustNewConstMetric(c.holders, prometheus.GaugeValue, holders)
}

// MayRun is nil while this node holds the lease, else why it may not run
// a cycle, as far as it knows: another node holds it, or none does (this
// node's hold lapsed, or nobody took it yet) and this node is taking it.
func (l *Lease) MayRun() error {
	s := l.State()
	switch {
	case s.Held:
		return nil
	case s.Holder != "" && s.Holder != s.Node:
		return fmt.Errorf("standby: the ingest lease is held by %q; run the cycle there", s.Holder)
	case s.Holder == s.Node:
		return errors.New("this node's hold on the ingest lease lapsed and no other holder is seen: it is taking the lease back; try again in a few seconds")
	default:
		return errors.New("nobody holds the ingest lease yet: this node is acquiring it; try again in a few seconds")
	}
}

// LeaseSummary is what /admin/sources says of the ingest lease as v sees
// it: this node's own state when v is its Lease, else the holder and
// revision the bucket names; nil when it cannot be read.
func LeaseSummary(ctx context.Context, v LeaseView) any {
	s, err := v.LeaseState(ctx)
	switch {
	case err != nil:
		return nil
	case isOwn(v):
		return s
	}
	return map[string]any{"holder": s.Holder, "revision": s.Revision}
}

func isOwn(v LeaseView) bool { _, own := v.(*Lease); return own }

package node

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/marketd/marketd/config"
	"github.com/marketd/marketd/ingest"
	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/bus"
)

// Feed is the ingest side of a node: ingest polling the upstreams and
// publishing to the streams through bus, the cycles the node runs on its
// own to turn ready (Lead) and those POST /admin/ingest asks for.
// OpenFeed opens it as a part of a Node. Safe for concurrent use.
type Feed struct {
	in       *ingest.Ingest
	js       jetstream.JetStream
	log      zerolog.Logger
	deadline time.Duration // of POST /admin/ingest (cycleDeadline)
	lease    *Lease        // nil when the node runs alone
	serving  *Serving      // nil on a node without views
}

// FeedOptions is what OpenFeed needs besides the settings.
type FeedOptions struct {
	Registry *prometheus.Registry // the node's metrics
	// Lease is the ingest lease the feed polls under (OpenLease); nil when
	// the node runs alone (`all` on its embedded server).
	Lease *Lease
	// Serving is the node's own serving side (`all`): a cycle is answered
	// once its views applied it, and ingest gives way to its reads. nil on
	// a node without views (`ingest`).
	Serving *Serving
	// Memory, when set, is held while each cycle runs (Memory.Hold).
	Memory *Memory
}

// Admin deadlines of POST /admin/ingest (cycleDeadline).
const (
	minCycleDeadline = 30 * time.Second
	maxCycleDeadline = 5 * time.Minute
)

// cycleDeadline bounds POST /admin/ingest: the poll interval, within
// [minCycleDeadline, maxCycleDeadline]. The node's own start-up cycles are
// not bounded by it (startupCycle).
func cycleDeadline(cfg config.Config) time.Duration {
	return min(max(cfg.PollInterval, minCycleDeadline), maxCycleDeadline)
}

// OpenFeed opens ingest over cfg's sources as a part of n, publishing to
// js, with its metrics. It fails when a source is unknown or has no base
// URL, or ingest cannot open.
func OpenFeed(ctx context.Context, n *Node, js jetstream.JetStream, cfg config.Config, opts FeedOptions, log zerolog.Logger) (*Feed, error) {
	pollDuration := newPollDuration(opts.Registry)
	var lease ingest.Lease // a nil *Lease must not be a non-nil ingest.Lease
	if opts.Lease != nil {
		lease = opts.Lease
	}
	var yield func()
	if opts.Serving != nil {
		yield = opts.Serving.Yield
	}
	in, err := NewIngest(cfg, js, lease, log, ingest.Hooks{
		OnCycle: func(sum ingest.Summary) { observeCycle(pollDuration, sum) }, Yield: yield,
		// A nil Memory holds nothing (Memory.Hold).
		Busy: func() func() { return opts.Memory.Hold("an ingest cycle runs") }})
	if err != nil {
		return nil, err
	}
	if err := in.Open(ctx); err != nil {
		return nil, fmt.Errorf("ingest: %w", err)
	}
	n.Add("ingest", in.Close)
	registerIngestMetrics(opts.Registry, in)
	return &Feed{in: in, js: js, log: log, deadline: cycleDeadline(cfg), lease: opts.Lease, serving: opts.Serving}, nil
}

// NewIngest builds ingest over cfg's sources, publishing to js through
// bus, reading the state stream back and keeping the polls' resume
// points on the bus; lease is nil or the lease it polls under.
func NewIngest(cfg config.Config, js jetstream.JetStream, lease ingest.Lease, log zerolog.Logger, hooks ingest.Hooks) (*ingest.Ingest, error) {
	srcs := map[readmodel.Source]ingest.SourceConfig{}
	for name, s := range cfg.Sources {
		src, ok := readmodel.ParseSource(name)
		if !ok {
			return nil, fmt.Errorf("unknown source %q", name)
		}
		if s.BaseURL == "" {
			return nil, fmt.Errorf("no base URL for source %s: set --source-%s-url", name, name)
		}
		srcs[src] = ingest.SourceConfig{BaseURL: s.BaseURL, Interval: s.Interval, Timeout: s.Timeout}
	}
	state := bus.NewState(js, cfg.StreamReplicas)
	icfg := ingest.Config{Sources: srcs, Hooks: hooks, State: state, Marks: state, Lease: lease}
	return ingest.New(icfg, bus.NewPublisher(js), log.With().Str("part", "ingest").Logger())
}

// Lead runs the node's first cycle and marks ready, and returns when ctx
// ends. Under a lease it runs the first cycle of every term it acquires
// (Lease.Lead); alone, it runs one once the views are open and marks ready
// when it is projected. A failed cycle alone is left to the schedule.
func (f *Feed) Lead(ctx context.Context, ready *Readiness) {
	if f.lease != nil {
		f.lease.Lead(ctx, ready, f.startupCycle)
		return
	}
	if f.serving != nil && f.serving.Views.WaitOpen(ctx) != nil {
		return // shut down while the views were rebuilt
	}
	if err := f.startupCycle(ctx); err != nil {
		if ctx.Err() == nil {
			f.log.Error().Err(err).Msg("first ingest cycle failed; the schedule will retry")
		}
		return // a shutdown cut the first cycle short: not ready
	}
	ready.MarkReady()
	f.log.Info().Msg("first cycle projected; ready")
}

// Standby reports whether this node runs with a lease it does not hold.
func (f *Feed) Standby() bool { return f.in.Standby() }

// Sources is ingest's per-source poll status, as this node last polled.
func (f *Feed) Sources() any { return f.in.Sources() }

// RunIngest runs one ingest cycle now and returns its summary once this
// node's views (if it has any) applied everything it published. It is
// POST /admin/ingest, so it is bounded by the admin deadline: past it the
// cycle is cancelled and the error is the context's (504). A standby
// refuses, naming the holder. With NATS unreachable it refuses, and a
// cycle cut off from NATS fails, with one sentence saying so and that the
// lease's state is unknown (unreachableError). The node's own cycles are not bounded: see
// startupCycle.
func (f *Feed) RunIngest(ctx context.Context) (any, error) {
	ctx, cancel := f.adminDeadline(ctx)
	defer cancel()
	return f.run(ctx, false, false)
}

// RunFullIngest is RunIngest republishing every row: POST
// /admin/ingest?full=true. With purge (&purge=true) the state stream's
// messages are purged first: a server whose stream blocks hold garbage
// can loop forever storing a message whose subject's older message sits
// in a damaged block (nats-server 2.15's per-subject limit), so
// republishing into it hangs; a purge removes the blocks, keeps the
// sequence numbering (nodes' positions stay valid, their views are kept)
// and the full cycle then refills the stream with every subject.
func (f *Feed) RunFullIngest(ctx context.Context, purge bool) (any, error) {
	ctx, cancel := f.adminDeadline(ctx)
	defer cancel()
	return f.run(ctx, true, purge)
}

// startupCycle is the cycle a node runs on its own to turn ready: the first
// one of `all` and `ingest`, and the first of each lease term. It runs until
// it is done or ctx (shutdown) ends. The admin deadline is for a caller
// waiting on an answer; at 100,000 collections x 100 tokens a first cycle
// takes longer than its five minutes, and cutting it left the node unready
// until the next scheduled cycle, which does the same.
func (f *Feed) startupCycle(ctx context.Context) error {
	_, err := f.run(ctx, false, false)
	return err
}

// busDown is "" while the node's NATS connection is up, else its state
// ("reconnecting", "closed").
func (f *Feed) busDown() string {
	nc := f.js.Conn()
	if nc == nil || nc.IsConnected() {
		return ""
	}
	return strings.ToLower(nc.Status().String())
}

// unreachableError is a cycle refused or cut short because the node
// cannot reach NATS: its message is one plain sentence of what is known
// (nothing can be published, and whether this node still holds the
// ingest lease cannot be known) instead of the error the cycle met
// first, which may blame the lease. It wraps that error (nil when the
// cycle did not start), so a deadline stays a deadline.
type unreachableError struct {
	what   string // what became of the cycle
	status string // the connection's state
	err    error
}

func (e *unreachableError) Error() string {
	return fmt.Sprintf("NATS is unreachable (connection %s), so this node can publish nothing and cannot know who holds the ingest lease: %s.", e.status, e.what)
}

func (e *unreachableError) Unwrap() error { return e.err }

// adminDeadline bounds ctx by the admin deadline (none when it is 0).
func (f *Feed) adminDeadline(ctx context.Context) (context.Context, context.CancelFunc) {
	if f.deadline <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, f.deadline)
}

func (f *Feed) run(ctx context.Context, full, purge bool) (any, error) {
	if down := f.busDown(); down != "" {
		return nil, &unreachableError{what: "no cycle was run", status: down}
	}
	if f.lease != nil {
		if err := f.lease.MayRun(); err != nil {
			return nil, err
		}
	}
	if purge {
		if err := bus.PurgeState(ctx, f.js); err != nil {
			return nil, err
		}
		f.log.Warn().Str("stream", bus.StateStream).Msg("state stream purged; the full cycle publishes every subject again")
	}
	run := f.in.RunCycle
	if full {
		run = f.in.RunFullCycle
	}
	sum, err := run(ctx)
	if err != nil {
		// A cycle cut off from the bus fails on whatever it met first
		// (the lease's fence, a publish): say what happened instead.
		if down := f.busDown(); down != "" {
			return nil, &unreachableError{what: "the cycle stopped before it was published in full", status: down, err: err}
		}
		return nil, err
	}
	if f.serving != nil {
		if err := f.serving.Views.WaitFor(ctx, sum.Position); err != nil {
			return nil, fmt.Errorf("wait for projection: %w", err)
		}
	}
	return sum, nil
}

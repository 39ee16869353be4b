package main

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/marketd/marketd/config"
	"github.com/marketd/marketd/httpapi"
	"github.com/marketd/marketd/ingest"
	"github.com/marketd/marketd/ingest/sim"
	"github.com/marketd/marketd/internal/pace"
	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/bus"
	"github.com/marketd/marketd/readmodel/projector"
	"github.com/marketd/marketd/readmodel/render"
	"github.com/marketd/marketd/readmodel/store"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/rs/zerolog"
)

// The views served answer the change feed (GET /v1/collections/{id}/events)
// from the store.
var _ httpapi.EventReader = (*healer)(nil)

func (h *healer) Events(ctx context.Context, id string, after uint64, afterID string, limit int, types uint8) (render.EventPage, error) {
	return read(h, "events", func(v *views) (render.EventPage, error) {
		return v.Events(ctx, id, after, afterID, limit, types)
	})
}

// parts says which components a role runs.
type parts struct {
	embedded bool // embedded NATS server under <data-dir>/nats
	api      bool // store, projector, public API
	sim      bool // built-in upstream simulator
	ingest   bool // ingestors
}

// runNode opens the parts of a long-running role, serves until ctx is
// cancelled, then closes them in DESIGN's shutdown order.
func runNode(ctx context.Context, cfg config.Config, log zerolog.Logger, want parts) error {
	return withNode(log, func(n *node) error { return openAndServe(ctx, n, cfg, log, want) })
}

// openAndServe opens the parts a role wants into n, then serves until ctx
// is cancelled; the caller closes n.
func openAndServe(ctx context.Context, n *node, cfg config.Config, log zerolog.Logger, want parts) error {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	registerBuildInfo(reg)
	pollDuration := newPollDuration(reg)
	adm := &admin{log: log}
	if want.api {
		// Until it is first ready a node with views builds them and
		// serves no reads: its heap gets the larger share (memory.go).
		adm.onReady = buildingMemory(cfg, "/", debug.SetMemoryLimit, log)
	}
	// Background work gives way to the reads this process serves
	// (internal/pace); a process without the API has none to give way to.
	var gate *pace.Gate
	if want.api {
		gate = pace.New(0, 0, 0)
		registerPaceMetrics(reg, gate)
	}

	// 1. NATS: embedded (all) or a client of --nats.
	url := cfg.NatsURL
	if want.embedded {
		emb, err := bus.StartEmbedded(ctx, bus.EmbeddedOptions{StoreDir: natsDir(cfg.DataDir), Host: "127.0.0.1", Port: -1})
		if err != nil {
			return fmt.Errorf("start embedded NATS: %w", err)
		}
		n.add("nats-server", emb.Close)
		url = emb.ClientURL()
	}
	nc, err := connectNATS(url, "marketd", log)
	if err != nil {
		return err
	}
	n.add("nats-conn", func(ctx context.Context) error { return nc.Drain() })
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncTimeout(publishAckWait))
	if err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	if err := reconcileStreams(ctx, js, cfg.StreamReplicas, log); err != nil {
		return fmt.Errorf("ensure streams: %w", err)
	}
	adm.nc, adm.js, adm.cycleDeadline = nc, js, cycleDeadline(cfg)

	// 2. Badger views, the public API on top of them, and the projector,
	// which heal themselves when their files are damaged (heal.go).
	var hv *healer
	if want.api {
		sopts := store.Options{GCShare: cfg.ViewsGCShare, FeedEvents: cfg.FeedEvents}
		snaps := bus.NewSnapshots(js, cfg.StreamReplicas)
		hv = newHealer(cfg.DataDir, js, sopts, projector.Options{
			RowRetention: cfg.RowRetention,
			// `all` on its embedded server is ready once its first
			// cycle is projected: until then a cold start holds renders.
			HoldFirstCycle: want.ingest && want.embedded,
			Yield:          yieldOf(gate),
		}, reg, log)
		if cfg.Join == "snapshot" {
			hv.join = func(ctx context.Context, dir string) bool { return restoreViews(ctx, snaps, dir, sopts, log) }
		}
		registerStoreMetrics(reg, hv)
		api, err := httpapi.New(httpapi.Config{
			RateList: cfg.RateList, RateItem: cfg.RateItem, RateIPv6Prefix: cfg.RateIPv6Prefix,
			TrustedProxies: cfg.TrustedProxies,
			CursorKey:      []byte(cfg.CursorKey), CursorTTL: cfg.CursorTTL,
			RowRetention: cfg.RowRetention,
			Registry:     reg,
			OnRequest:    gate.Request,
		}, hv, log.With().Str("part", "api").Logger())
		if err != nil {
			return fmt.Errorf("api: %w", err)
		}
		if cfg.CursorKey == "" {
			log.Warn().Msg("no --cursor-key set: cursors are signed with a random per-process key and will not verify on other nodes or after a restart")
		}
		ln, err := n.listen("http", cfg.HTTPAddr)
		if err != nil {
			return err
		}
		n.add("badger", hv.closeStore)
		n.serve("http", func() error { return api.Listen(ln) }, api.Shutdown)
		if err := hv.start(ctx); err != nil {
			return fmt.Errorf("open views: %w", err)
		}
		n.add("projector", hv.stop)
		adm.views = hv
		// The tier's views snapshot (snapshot.go): published on schedule,
		// and restored above (hv.join) when the views directory is empty.
		sn := newSnapshotter(snaps, hv, nodeID(cfg), cfg.SnapshotEvery, adm.Ready, yieldOf(gate), reg, log)
		if err := sn.Open(ctx); err != nil {
			return err
		}
		n.add("snapshot", sn.Close)
		adm.snap = sn
	}

	// 3. The upstream simulator (all).
	if want.sim {
		s := sim.New(sim.Options{Seed: uint64(cfg.SimSeed), Collections: cfg.SimCollections, TokensPerCollection: cfg.SimTokens, TickEvery: cfg.SimTick, Anchor: cfg.SimAnchor})
		if err := s.Open(ctx); err != nil {
			return fmt.Errorf("simulator: %w", err)
		}
		ln, err := n.listen("sim", cfg.SimAddr)
		if err != nil {
			return err
		}
		simURL := "http://" + ln.Addr().String()
		for name, src := range cfg.Sources {
			if src.BaseURL == "" {
				src.BaseURL = simURL + "/" + name
				cfg.Sources[name] = src
			}
		}
		n.serveHTTP("sim", ln, s.Handler())
		n.add("sim-ticker", s.Close)
	}

	// 4. Ingest, with its first cycle at start-up.
	if want.ingest {
		// Several `marketd ingest` may run on a tier: a lease picks the one
		// that polls. `all` runs alone on its embedded server.
		var lease *bus.Lease
		leaseChanged := make(chan struct{}, 1)
		if !want.embedded {
			if lease, err = openLease(ctx, n, js, cfg, log, leaseChanged); err != nil {
				return err
			}
			adm.lease = lease
		}
		in, err := newIngest(cfg, js, lease, log, func(sum ingest.Summary) { observeCycle(pollDuration, sum) }, yieldOf(gate))
		if err != nil {
			return err
		}
		if err := in.Open(ctx); err != nil {
			return fmt.Errorf("ingest: %w", err)
		}
		n.add("ingest", in.Close)
		adm.ingest = in
		registerIngestMetrics(reg, in)
		first := make(chan struct{})
		if lease != nil {
			registerLeaseMetrics(reg, adm, nodeID(cfg))
			n.add("first-cycle", func(context.Context) error { <-first; return nil })
			go func() { defer close(first); adm.lead(ctx, lease, leaseChanged) }()
		} else {
			n.add("first-cycle", func(context.Context) error { <-first; return nil })
			go func() {
				defer close(first)
				if hv != nil && hv.waitOpen(ctx) != nil {
					return // shut down while the views were rebuilt
				}
				if _, err := adm.startupCycle(ctx); err != nil {
					if ctx.Err() == nil {
						log.Error().Err(err).Msg("first ingest cycle failed; the schedule will retry")
					}
					return // a shutdown cut the first cycle short: not ready
				}
				adm.markReady()
				log.Info().Msg("first cycle projected; ready")
			}()
		}
	} else if hv != nil {
		go adm.readyWhenCaughtUp(ctx, hv)
	}
	if hv != nil {
		registerProjectorMetrics(reg, hv, js)
		adm.mon = newLagMonitor(hv, js, cfg.PollInterval)
		go adm.mon.run(ctx)
		if !want.ingest {
			registerLeaseMetrics(reg, adm, nodeID(cfg))
		}
	}

	// 5. The admin listener.
	ln, err := n.listen("admin", cfg.AdminAddr)
	if err != nil {
		return err
	}
	as := httpapi.NewAdmin(adm, reg, log.With().Str("part", "admin").Logger())
	n.serve("admin", func() error { return as.Listen(ln) }, as.Shutdown)
	ev := log.Info()
	for _, l := range []struct{ name, key, path string }{{"http", "api", "/v1"}, {"admin", "admin", ""}, {"sim", "sim", ""}} {
		if u, ok := n.urls[l.name]; ok {
			ev = ev.Str(l.key, u+l.path)
		}
	}
	ev.Msg("serving")

	<-ctx.Done()
	log.Info().Msg("shutting down")
	return nil
}

func newIngest(cfg config.Config, js jetstream.JetStream, lease *bus.Lease, log zerolog.Logger, onCycle func(ingest.Summary), yield func()) (*ingest.Ingest, error) {
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
	icfg := ingest.Config{Sources: srcs, OnCycle: onCycle, Yield: yield, State: state, Marks: state}
	if lease != nil {
		icfg.Lease = lease
	}
	return ingest.New(icfg, bus.NewPublisher(js), log.With().Str("part", "ingest").Logger())
}

// admin implements httpapi.Admin over whichever parts this role runs.
type admin struct {
	log    zerolog.Logger
	ready  atomic.Bool
	ingest *ingest.Ingest // nil in role serve
	views  *healer        // nil in role ingest

	nc            *nats.Conn
	js            jetstream.JetStream
	lease         *bus.Lease    // nil unless role ingest
	leadTerm      atomic.Uint64 // the lease term whose first cycle this node published (lead)
	mon           *lagMonitor   // nil in role ingest
	snap          *snapshotter  // nil in role ingest
	cycleDeadline time.Duration
	onReady       func() // called once, when the node is first ready (nil: nothing)
}

// markReady records that the node is ready; the first time, it calls
// onReady. Safe for concurrent use.
func (a *admin) markReady() {
	if !a.ready.Swap(true) && a.onReady != nil {
		a.onReady()
	}
}

// Ready reports whether the node serves current data: the first ingest
// cycle is projected (all), or the projector caught up with the streams
// (serve), or the first cycle is published (ingest).
func (a *admin) Ready() bool { ok, _ := a.Readiness(); return ok }

// RunIngest runs one full ingest cycle now and returns its summary once the
// projector (if this role has one) has applied everything it published.
// It is POST /admin/ingest, so it is bounded by the admin deadline
// (cycleDeadline): past it the cycle is cancelled and the error is the
// context's (504). The node's own cycles (the first at start-up, the first
// of a lease term) are not bounded: see startupCycle.
func (a *admin) RunIngest(ctx context.Context) (any, error) {
	ctx, cancel := a.adminDeadline(ctx)
	defer cancel()
	return a.runIngest(ctx, false, false)
}

// startupCycle is the cycle a node runs on its own to turn ready: the first
// one of `all` and `ingest`, and the first of each lease term. It runs until
// it is done or ctx (shutdown) ends. The admin deadline is for a caller
// waiting on an answer; at 100,000 collections x 100 tokens a first cycle
// takes longer than its five minutes, and cutting it left the node unready
// until the next scheduled cycle, which does the same.
func (a *admin) startupCycle(ctx context.Context) (any, error) {
	return a.runIngest(ctx, false, false)
}

// adminDeadline bounds ctx by cycleDeadline (none when it is 0).
func (a *admin) adminDeadline(ctx context.Context) (context.Context, context.CancelFunc) {
	if a.cycleDeadline <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, a.cycleDeadline)
}

// RunFullIngest is RunIngest republishing every row
// (httpapi.FullIngest): POST /admin/ingest?full=true. With purge
// (&purge=true) the state stream's messages are purged first: a server
// whose stream blocks hold garbage can loop forever storing a message
// whose subject's older message sits in a damaged block (nats-server
// 2.15's per-subject limit), so republishing into it hangs; a purge
// removes the blocks, keeps the sequence numbering (nodes' positions stay
// valid, their views are kept) and the full cycle then refills the
// stream with every subject.
func (a *admin) RunFullIngest(ctx context.Context, purge bool) (any, error) {
	ctx, cancel := a.adminDeadline(ctx)
	defer cancel()
	return a.runIngest(ctx, true, purge)
}

func (a *admin) runIngest(ctx context.Context, full, purge bool) (any, error) {
	if a.ingest == nil {
		return nil, errors.New("this role runs no ingest")
	}
	if a.lease != nil && !a.lease.Held() {
		return nil, fmt.Errorf("standby: the ingest lease is held by %q; run the cycle there", a.lease.State().Holder)
	}
	if purge {
		if err := purgeState(ctx, a.js, a.log); err != nil {
			return nil, err
		}
	}
	run := a.ingest.RunCycle
	if full {
		run = a.ingest.RunFullCycle
	}
	sum, err := run(ctx)
	if err != nil {
		return nil, err
	}
	if a.views != nil {
		if err := a.views.WaitFor(ctx, sum.Position); err != nil {
			return nil, fmt.Errorf("wait for projection: %w", err)
		}
	}
	return sum, nil
}

// snapshotDeadline bounds POST /admin/snapshot: at 100,000 collections x
// 100 tokens inside a 3 GiB memory cgroup a publish took about 3 minutes.
const snapshotDeadline = 15 * time.Minute

// PublishSnapshot publishes this node's views as the tier's snapshot now:
// POST /admin/snapshot, bounded by snapshotDeadline (504 past it).
func (a *admin) PublishSnapshot(ctx context.Context) (any, error) {
	if a.snap == nil {
		return nil, errors.New("this role keeps no views")
	}
	ctx, cancel := context.WithTimeout(ctx, snapshotDeadline)
	defer cancel()
	return a.snap.PublishNow(ctx)
}

// Sources reports per-source poll status: as this node's ingest last saw
// it when it holds the lease (or runs alone), else from the poll statuses
// in its views (a serve node, or a standby ingest that has none: then the
// answer names the holder), and who holds the ingest lease.
func (a *admin) Sources(ctx context.Context) (any, error) {
	ctx, cancel := context.WithTimeout(ctx, sourcesDeadline)
	defer cancel()
	out := map[string]any{}
	if l, err := a.leaseState(ctx); err == nil && l != nil {
		out["lease"] = l
		if a.lease == nil { // not taking part: only what the bucket says
			out["lease"] = map[string]any{"holder": l.Holder, "revision": l.Revision}
		}
	}
	if a.views != nil {
		out["bus"] = a.views.Gaps() // what the projector passed over (projector/gaps.go)
	}
	switch {
	case a.ingest != nil && !a.ingest.Standby():
		out["sources"] = a.ingest.Sources()
	case a.views != nil:
		srcs, err := sourcesFromViews(ctx, a.views)
		if err != nil {
			return nil, fmt.Errorf("poll statuses from the views: %w", err)
		}
		out["sources"] = srcs
	default:
		out["sources"] = a.ingest.Sources() // a standby: its own last polls, if any
	}
	return out, nil
}

func (a *admin) readyWhenCaughtUp(ctx context.Context, p *healer) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		if p.CaughtUp() {
			a.markReady()
			a.log.Info().Msg("projector caught up; ready")
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// views is the public API's Reader: the store, plus the collection index's
// poll status as the projector last applied it (httpapi.IndexStatus).
type views struct {
	*store.Store
	proj *projector.Projector

	mu     sync.Mutex
	at     uint64 // state position the cached status was read at
	read   bool
	status readmodel.PollStatus
	ok     bool

	polled atomic.Pointer[polledAt] // poll successes, per applied state position
}

// CollectionIndexStatus reads the status once per applied state position:
// GET /v1/collections asks on every request, and it only changes when the
// projector applies something. (The position is read before the status, so
// a status cached under a position is never older than that position.)
func (v *views) CollectionIndexStatus(ctx context.Context) (readmodel.PollStatus, bool, error) {
	at := v.proj.Applied().State
	v.mu.Lock()
	if v.read && v.at == at {
		st, ok := v.status, v.ok
		v.mu.Unlock()
		return st, ok, nil
	}
	v.mu.Unlock()
	st, ok, err := projector.SourceStatus(ctx, v.Store, readmodel.SourceCollectionIndex, "")
	if err != nil {
		return st, ok, err
	}
	v.mu.Lock()
	v.at, v.read, v.status, v.ok = at, true, st, ok
	v.mu.Unlock()
	return st, ok, nil
}

// polledAt is the poll successes read at one applied state position.
type polledAt struct {
	at    uint64
	times render.PollTimes
}

// pollTimes reads when each poll last succeeded once per applied state
// position (the healer's PollTimes, httpapi.PollClock): asOf is resolved
// on every request, and the times only change when the projector applies
// something. On a read failure it answers what was read last (asOf then
// lags; it never guesses ahead) with the error.
func (v *views) pollTimes(ctx context.Context) (*render.PollTimes, error) {
	at := v.proj.Applied().State
	cur := v.polled.Load()
	if cur != nil && cur.at == at {
		return &cur.times, nil
	}
	pt, err := projector.PollTimes(ctx, v.Store)
	if err != nil {
		if cur != nil {
			return &cur.times, err
		}
		return &noPollTimes, err
	}
	next := &polledAt{at: at, times: pt}
	v.polled.Store(next)
	return &next.times, nil
}

// noPollTimes knows no poll's success (every asOf of a healthy source is
// null); never modified.
var noPollTimes render.PollTimes

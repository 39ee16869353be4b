// Package projector applies the bus streams to a node's view store. Each
// node runs one Projector: an ordered consumer per stream starting after
// the position saved in the store (no server-side state per node). A
// message's view writes and the applied position (stream sequence and
// message id) commit in one Badger transaction; messages that are already
// buffered when one arrives share that transaction, which then carries the
// position of the last. A crash at any point therefore neither loses nor
// double-applies a message: on restart the consumer resumes after the last
// committed position, and applying a state message is idempotent anyway (it
// replaces its subject's state; sales are keyed by sale). How a stream's
// messages become applied batches, for the background loop (consume) and
// for ApplyAvailable and replay (drain) alike, is reader.go.
//
// At Open the saved position is checked against the stream: a stream whose
// last sequence is below it, or whose message at the saved sequence has
// another id, lost its tail and re-issued sequence numbers; its messages
// are then applied again from its start, over the views (never reset: a
// damaged stream would leave a partial index), and the views are
// incomplete until a full ingest cycle (gaps.go).
//
// A batch's walk through this package: for each message, load (batch.go:
// its collection's state, state.go, and the few other inputs it reads),
// renderBefore (rarely anything), apply (apply.go: the message changes
// that state in memory and marks what it makes stale), feed (events.go:
// the change feed diffs the new listing set); then finish renders each
// marked collection once (collection.go, listings.go, floor.go,
// tokens.go) and saves what changed (save). The store is reached through
// the two small interfaces of tx.go.
//
// View rules (SPEC §2, §4) are in readmodel's pure functions
// (readmodel/project.go); this package decides what to re-render when an
// input changes: a collection's detail, browse entries, listing snapshot
// and floor; token records when their document changes (the store renders
// token views on read, their native listing from the collection's order
// book, so neither an order-book change nor a listing expiring writes a
// token record); every collection's views when a source-wide status changes (a
// re-render job, batched and resumable); and, by the injected clock,
// snapshots at their deadline: a failing
// source's rows aging out, or an expiry that the API's request-time
// skipping of expired rows cannot absorb (readmodel.Snapshot.Deadline).
// No view depends on the USD rates: prepared bodies carry USD slots, and a
// rates change only replaces the store's quote (readmodel/usd.go).
package projector

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/bus"
	"github.com/marketd/marketd/readmodel/store"
)

// Options configures a Projector.
type Options struct {
	// Now is the clock of the expiry sweeper (row expiry, retention of a
	// failing source's rows). nil means time.Now.
	Now func() time.Time
	// RowRetention is how long after its LastGoodAt a failing listing
	// source's last good rows stay in the snapshot. 0 means 10 minutes.
	RowRetention time.Duration
	// SweepInterval is how often the background loop re-projects snapshots
	// whose deadline passed. 0 means 5 seconds.
	SweepInterval time.Duration
	// RerenderBatch is how many collections one transaction of a full
	// re-render (after a source-wide status) covers. 0 means 16.
	RerenderBatch int
	// MaxBatch is the most messages applied in one transaction. 0 means
	// 256 (and at most 2 MiB of payload). A batch holds what the stream
	// had already delivered, so its bounds vary with timing, and with them
	// the views' versions (one per transaction that renders); 1 makes
	// every key of the store, versions included, a function of the
	// streams alone, which comparing two builds byte for byte needs.
	MaxBatch int
	// HoldFirstCycle says the node is not ready before a full ingest
	// cycle has been projected (`marketd all`), so a cold start on
	// streams that are empty at Open holds renders until that cycle ends
	// (coldstart.go). Without it such a node counts as caught up at once,
	// and renders as it applies.
	HoldFirstCycle bool
	// ColdIdle is how long a cold start (coldstart.go) that holds renders
	// waits for a message before it renders them anyway. 0 means 3 s.
	ColdIdle time.Duration
	// OnDamage, when set, is called (from the background loop) with an
	// apply or sweep error that says the store is damaged
	// (store.Damaged), a panic in either included. The loop keeps
	// retrying meanwhile, as for any failure; the caller rebuilds the
	// views and closes this projector.
	OnDamage func(err error)
	// Yield is called between two messages of a batch and two collection
	// renders (applying, the expiry sweep, a full re-render), so that
	// reads served by the same process can go first. nil
	// means runtime.Gosched; cmd/marketd passes a pace.Gate's, which
	// sleeps briefly while reads arrive (internal/pace).
	Yield func()
}

const (
	iState = 0
	iSales = 1
)

var streamNames = [2]string{bus.StateStream, bus.SalesStream}

// Projector consumes the streams into a store. Open/Close bracket the
// background loop; ApplyAvailable is the synchronous alternative for tests
// and replay (do not mix the two on one Projector while it is open).
// Applied, CaughtUp and WaitFor are safe for concurrent use.
type Projector struct {
	js   jetstream.JetStream
	st   *store.Store
	opts Options
	log  zerolog.Logger

	applyMu sync.Mutex // serialises store writes
	pos     [2]store.StreamPos
	iters   [2]jetstream.MessagesContext
	// consuming counts the stream loops running, inClient those of them
	// waiting in nats.go (for a message, or to recreate a consumer): Close
	// tells a projector held by its client from one stuck elsewhere.
	consuming, inClient atomic.Int32
	loaded              bool

	mu      sync.Mutex
	applied readmodel.Position
	target  readmodel.Position // stream heads at Open
	opened  bool
	changed chan struct{}

	// held, during a replay build or a cold start, collects collection
	// renders until its end (see renderHeldLocked); nil otherwise.
	held *pending
	cold cold // a cold start (coldstart.go); guarded by applyMu
	// lastApply is when a batch was last applied (UnixNano), for a cold
	// start's idle end.
	lastApply atomic.Int64

	cancel context.CancelFunc
	wg     sync.WaitGroup
	rows   atomic.Int64 // rows applied (listing, token and sale rows; 1 per other message)
	// collections counts the collection states saved for the first time:
	// in a build from empty, the collections built so far.
	collections atomic.Int64

	gaps gapLog // sequences passed over (gaps.go)

	sweptListings, sweepNanos atomic.Int64 // see SweepStats
	afterSweepBatch           func()       // tests: runs after each batch of Sweep released the lock
}

// SweepStats is what the expiry sweeps have done since New: how many
// listing snapshots (with their floors) they re-rendered, and the time
// they took (Tokens stays 0: token views are rendered on read since store
// schema 10, and expire there). On a large market with many expiring listings
// the sweep is a steady share of the node's CPU; these say how much.
type SweepStats struct {
	Listings, Tokens int64
	Duration         time.Duration
}

// Swept returns the sweeps' totals so far. Safe for concurrent use.
func (p *Projector) Swept() SweepStats {
	return SweepStats{Listings: p.sweptListings.Load(), Duration: time.Duration(p.sweepNanos.Load())}
}

// New returns a Projector of js into st. It does no I/O.
func New(js jetstream.JetStream, st *store.Store, opts Options, log zerolog.Logger) *Projector {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.RowRetention <= 0 {
		opts.RowRetention = 10 * time.Minute
	}
	if opts.SweepInterval <= 0 {
		opts.SweepInterval = 5 * time.Second
	}
	if opts.RerenderBatch <= 0 {
		opts.RerenderBatch = 16
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = maxBatch
	}
	if opts.ColdIdle <= 0 {
		opts.ColdIdle = 3 * time.Second
	}
	return &Projector{js: js, st: st, opts: opts, log: log.With().Str("component", "projector").Logger(), changed: make(chan struct{})}
}

// Open loads the saved positions, verifies them against the streams
// (rebuilding when a stream re-issued sequences), finishes a pending
// re-render and starts consuming both streams in the background. Errors
// are *readmodel.Error (UpstreamError for NATS, Internal for the store).
func (p *Projector) Open(ctx context.Context) error {
	if err := p.load(ctx); err != nil {
		return err
	}
	heads, err := p.heads(ctx)
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.target = heads
	p.opened = true
	p.mu.Unlock()
	if err := p.runJob(ctx); err != nil {
		return err
	}
	if err := p.startCold(ctx); err != nil {
		return err
	}
	p.lastApply.Store(time.Now().UnixNano())
	for i := range p.iters {
		if err := p.startIter(ctx, i); err != nil {
			p.stopIters()
			return err
		}
	}
	lctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	for i := range p.iters {
		p.wg.Add(1)
		go p.consume(lctx, i)
	}
	p.wg.Add(1)
	go p.sweepLoop(lctx)
	return nil
}

// Close stops consuming, lets the message in hand finish its transaction
// and waits for the background goroutines.
func (p *Projector) Close(ctx context.Context) error {
	if p.cancel != nil {
		p.cancel()
	}
	// Stopping a stream's iterator waits while nats.go recreates its
	// consumer (seconds, when the servers are restarting or gone); the
	// loops end on the cancelled context without it, so Close waits for
	// them and lets the stops finish on their own.
	go p.stopIters()
	done := make(chan struct{})
	go func() { p.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		if n := p.consuming.Load(); n > 0 && p.inClient.Load() == n {
			return readmodel.Wrap(readmodel.Internal, errors.Join(ErrHeldByClient, ctx.Err()), "projector close")
		}
		return readmodel.Wrap(readmodel.Internal, ctx.Err(), "projector close")
	}
}

// ErrHeldByClient is the cause of a Close that ran out of time while every
// stream loop still running waited in nats.go (a consumer being recreated
// while the servers restart or are gone): nothing was being applied, and a
// batch commits with its position, so nothing in hand is lost.
var ErrHeldByClient = errors.New("projector: its stream loops are held by the NATS client")

// stopIters stops both streams' iterators; the stops run outside applyMu,
// which a stop that waits for nats.go would otherwise hold.
func (p *Projector) stopIters() {
	p.applyMu.Lock()
	its := p.iters
	p.iters = [2]jetstream.MessagesContext{}
	p.applyMu.Unlock()
	for _, it := range its {
		if it != nil {
			it.Stop()
		}
	}
}

// Applied is the position applied so far.
func (p *Projector) Applied() readmodel.Position {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.applied
}

// CaughtUp reports whether everything that was in the streams when Open
// was called has been applied.
func (p *Projector) CaughtUp() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.opened && p.applied.Covers(p.target)
}

// WaitFor returns nil once Applied covers pos, or ctx's error.
func (p *Projector) WaitFor(ctx context.Context, pos readmodel.Position) error {
	for {
		p.mu.Lock()
		ok, ch := p.applied.Covers(pos), p.changed
		p.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return readmodel.Wrap(readmodel.Internal, ctx.Err(), "wait for projection")
		}
	}
}

func (p *Projector) setApplied(i int, seq uint64) {
	p.mu.Lock()
	if i == iState {
		p.applied.State = max(p.applied.State, seq)
	} else {
		p.applied.Sales = max(p.applied.Sales, seq)
	}
	close(p.changed)
	p.changed = make(chan struct{})
	p.mu.Unlock()
}

// load reads the saved positions and checks them against the streams.
func (p *Projector) load(ctx context.Context) error {
	p.applyMu.Lock()
	defer p.applyMu.Unlock()
	if p.loaded {
		return nil
	}
	pos, err := p.st.Positions(ctx, streamNames[:]...)
	if err != nil {
		return err
	}
	for i, sp := range pos {
		ok, err := p.verify(ctx, streamNames[i], sp)
		if err != nil {
			return err
		}
		if !ok {
			// Applied again from its start over the views: applying a
			// state message replaces its subject's state, a sale is
			// keyed by sale, so the views stay whole meanwhile.
			p.log.Warn().Str("stream", streamNames[i]).Uint64("seq", sp.Seq).Msg("stream re-issued sequences below the applied position; applying it again from its start over the views")
			if err := p.st.Update(ctx, func(tx *store.Tx) error { tx.SetPosition(streamNames[i], store.StreamPos{}); return nil }); err != nil {
				return err
			}
			p.recordGap(i, p.reissuedFrom(ctx, i, sp.Seq), sp.Seq, GapReissued)
			pos[i] = store.StreamPos{}
		}
	}
	p.pos = [2]store.StreamPos{pos[0], pos[1]}
	p.mu.Lock()
	p.applied = readmodel.Position{State: pos[0].Seq, Sales: pos[1].Seq}
	p.mu.Unlock()
	p.loaded = true
	return nil
}

// verify reports whether saved position sp still names the same message
// in stream. A message that was since superseded (compaction) cannot be
// checked and is trusted when the stream has gone past it.
func (p *Projector) verify(ctx context.Context, stream string, sp store.StreamPos) (bool, error) {
	if sp.Seq == 0 {
		return true, nil
	}
	s, err := p.js.Stream(ctx, stream)
	if err != nil {
		return false, readmodel.Wrap(readmodel.UpstreamError, err, "stream "+stream)
	}
	info, err := s.Info(ctx)
	if err != nil {
		return false, readmodel.Wrap(readmodel.UpstreamError, err, "stream info "+stream)
	}
	if info.State.LastSeq < sp.Seq {
		return false, nil
	}
	raw, err := s.GetMsg(ctx, sp.Seq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return true, nil
	}
	if err != nil {
		return false, readmodel.Wrap(readmodel.UpstreamError, err, "get message "+stream)
	}
	if m, err := bus.Decode(raw.Data); err == nil {
		return m.ID == sp.ID, nil
	}
	return raw.Header.Get(jetstream.MsgIDHeader) == sp.ID, nil
}

func (p *Projector) heads(ctx context.Context) (readmodel.Position, error) {
	var h readmodel.Position
	for i, name := range streamNames {
		s, err := p.js.Stream(ctx, name)
		if err != nil {
			return h, readmodel.Wrap(readmodel.UpstreamError, err, "stream "+name)
		}
		info, err := s.Info(ctx)
		if err != nil {
			return h, readmodel.Wrap(readmodel.UpstreamError, err, "stream info "+name)
		}
		applied := p.Applied()
		if i == iState {
			h.State = info.State.LastSeq
			p.noteLost(i, info.State.Lost, applied.State)
		} else {
			h.Sales = info.State.LastSeq
			p.noteLost(i, info.State.Lost, applied.Sales)
		}
	}
	return h, nil
}

// startIter (re)creates stream i's ordered consumer after the applied
// position. It holds applyMu, so ctx must end with the loop: with the bus
// unreachable it would otherwise hold Close up for its whole timeout.
func (p *Projector) startIter(ctx context.Context, i int) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	// One attempt at recreating the consumer inside nats.go: its own
	// retries hold the iterator's lock between attempts (up to 10 s
	// apart), so stopping the iterator, and with it the node, waited for
	// them. A failed attempt comes back as an error from Next, and the
	// loops recreate the consumer themselves, on their context.
	cfg := jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy, MaxResetAttempts: 1}
	if seq := p.pos[i].Seq; seq > 0 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, seq+1
	}
	c, err := p.js.OrderedConsumer(ctx, streamNames[i], cfg)
	if err != nil {
		return readmodel.Wrap(readmodel.UpstreamError, err, "ordered consumer "+streamNames[i])
	}
	it, err := c.Messages(jetstream.PullMaxMessages(256))
	if err != nil {
		return readmodel.Wrap(readmodel.UpstreamError, err, "consume "+streamNames[i])
	}
	if ctx.Err() != nil { // closed meanwhile: stopIters has run
		go it.Stop()
		return nil
	}
	p.iters[i] = it
	return nil
}

// consume is the background loop of stream i (see reader.go). A batch
// decoded ahead is applied before the loop waits for the stream (a fetch
// that times out) or restarts its consumer, and dropped when an apply
// fails: the new consumer starts after the applied position, so it is
// delivered again.
func (p *Projector) consume(ctx context.Context, i int) {
	defer p.wg.Done()
	p.consuming.Add(1)
	defer p.consuming.Add(-1)
	log := p.log.With().Str("stream", streamNames[i]).Logger()
	r := &reader{p: p, i: i}
	defer r.close() // Close waits for every goroutine of the loop
	idle := 0
	var seen uint64 // the stream's head at the last stall check of this idle spell (stalled)
	restarts := 0   // consecutive failed restarts of the consumer
	// applyFailed re-consumes from the applied position after an apply
	// failed.
	applyFailed := func(it jetstream.MessagesContext, err error) {
		if ctx.Err() != nil {
			return
		}
		p.damaged(err)
		log.Error().Err(err).Msg("apply failed; re-consuming from the applied position")
		p.dropIter(i, it)
		sleep(ctx, time.Second)
	}
	fetchFailed := func(it jetstream.MessagesContext, err error) {
		log.Warn().Err(err).Msg("consumer failed; restarting after the applied position")
		p.dropIter(i, it)
		sleep(ctx, 200*time.Millisecond)
	}
	for ctx.Err() == nil {
		p.applyMu.Lock()
		it := p.iters[i]
		p.applyMu.Unlock()
		if it == nil {
			p.inClient.Add(1)
			err := p.restart(ctx, i)
			p.inClient.Add(-1)
			if err != nil {
				// Once an outage, then every 30 tries: the bus's own
				// state is in /readyz and /metrics meanwhile.
				if restarts++; restarts%30 == 1 {
					log.Warn().Err(err).Int("tries", restarts).Msg("restart consumer")
				}
				sleep(ctx, time.Second)
				continue
			}
			restarts = 0
			continue
		}
		p.inClient.Add(1)
		m, err := it.Next(jetstream.NextMaxWait(r.wait(time.Second)))
		p.inClient.Add(-1)
		if err != nil {
			if ctx.Err() != nil {
				continue
			}
			if ok, _ := r.pending(); ok {
				if aerr := r.settle(ctx); aerr != nil {
					applyFailed(it, aerr)
					continue
				}
				if errors.Is(err, nats.ErrTimeout) {
					continue // not idle: it was applying
				}
			}
			if errors.Is(err, nats.ErrTimeout) {
				// Watchdog: an idle consumer while the stream holds more than
				// we applied (its server died, a leader moved) is recreated.
				// Sequences that are gone (a damaged or purged stream,
				// or one that re-issued them) are passed over and
				// recorded instead (skipGone).
				if err := p.endColdIdle(ctx); err != nil {
					p.damaged(err)
					log.Error().Err(err).Msg("render the views held by the cold start")
				}
				if idle++; idle%stallChecks == 0 {
					if moved, err := p.skipGone(ctx, i); err == nil && moved {
						continue
					}
					if p.stalled(ctx, i, &seen) {
						log.Warn().Msg("consumer stalled behind the stream head; recreating it")
						p.dropIter(i, it)
						seen = 0
					}
				}
				continue
			}
			fetchFailed(it, err)
			continue
		}
		idle, seen = 0, 0
		switch ferr, aerr := r.take(ctx, it, m); {
		case aerr != nil:
			applyFailed(it, aerr)
		case ferr != nil:
			fetchFailed(it, ferr)
		}
	}
}

// stallChecks is how many idle waits (one second in the background
// loop, two in drain) pass between checks of whether a consumer stalled
// behind its stream's head. The background loop recreates a consumer
// behind the same head at two checks in a row (stalled), so after 6 to 9
// seconds of a stall.
const stallChecks = 3

// drainIdle is how many idle two-second waits drain accepts, with its
// consumer recreated every stallChecks of them, before it gives up on a
// stream that does not deliver up to its head.
const drainIdle = 15

// stalled is the background loop's watchdog check of stream i while its
// consumer is idle. It reports whether the consumer stalled: the head the
// stream had at the previous check of the idle spell, *seen, is still
// past the applied position. One check alone never decides: a message
// published just before it may still be on its way (a server busy
// storing a cycle delivers late), and recreating the consumer for it
// only redelivered it. stalled sets *seen to the head now (0 when the
// stream cannot be asked); the caller zeroes it when a message arrives.
func (p *Projector) stalled(ctx context.Context, i int, seen *uint64) bool {
	prev := *seen
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	h, err := p.heads(cctx)
	if err != nil {
		*seen = 0
		return false
	}
	*seen = []uint64{h.State, h.Sales}[i]
	p.applyMu.Lock()
	defer p.applyMu.Unlock()
	return stalledPast(prev, *seen, p.pos[i].Seq)
}

// stalledPast is stalled's rule: the head seen at the previous check
// (0: none) is past the applied position and the stream still holds it
// (a stream that lost its tail or re-issued its sequences since has a
// lower head now; skipGone handles those).
func stalledPast(prev, head, applied uint64) bool {
	return prev > applied && head >= prev
}

func (p *Projector) dropIter(i int, it jetstream.MessagesContext) {
	p.applyMu.Lock()
	mine := p.iters[i] == it
	if mine {
		p.iters[i] = nil
	}
	p.applyMu.Unlock()
	if mine {
		it.Stop()
	}
}

func (p *Projector) restart(ctx context.Context, i int) error {
	p.applyMu.Lock()
	defer p.applyMu.Unlock()
	if ctx.Err() != nil || p.iters[i] != nil {
		return nil
	}
	return p.startIter(ctx, i)
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// applyDecoded applies a decoded batch of stream i, minus the messages at
// or below the applied position (redeliveries), and returns how many it
// applied.
func (p *Projector) applyDecoded(ctx context.Context, i int, ds []decoded) (int, error) {
	p.applyMu.Lock()
	defer p.applyMu.Unlock()
	fresh := ds[:0]
	for _, d := range ds {
		if d.sp.Seq > p.pos[i].Seq {
			fresh = append(fresh, d)
		}
	}
	if len(fresh) == 0 {
		return 0, nil
	}
	from := p.pos[i].Seq
	if err := p.applyLocked(ctx, i, fresh); err != nil {
		return 0, err
	}
	p.lastApply.Store(time.Now().UnixNano())
	if err := p.runJobLocked(ctx); err != nil {
		return 0, err
	}
	if p.coldEnds(fresh) {
		if err := p.endColdLocked(ctx); err != nil {
			return 0, err
		}
	}
	p.checkDelivered(i, from, fresh)
	for _, d := range fresh {
		if d.fullEnd {
			p.healed()
		}
	}
	p.setApplied(i, fresh[len(fresh)-1].sp.Seq)
	return len(fresh), nil
}

// applyLocked applies a decoded batch of stream i in one transaction
// with the position of the last. A skipped message (nil msg) still
// advances the position so it never wedges the node.
func (p *Projector) applyLocked(ctx context.Context, i int, ds []decoded) error {
	apply := func(part []decoded, drained bool) error {
		var rows, created int64
		err := p.st.Update(ctx, func(tx *store.Tx) error {
			p.markCold(tx)
			a := &applier{tx: tx, retention: p.opts.RowRetention, yield: p.opts.Yield, coll: p.held, held: p.held != nil, drained: drained}
			for _, d := range part {
				if d.msg == nil {
					continue
				}
				a.pause()
				a.now, a.seq = d.msg.ObservedAt, d.sp.Seq
				if a.now.IsZero() {
					a.now = p.opts.Now()
				}
				if err := a.load(d.msg); err != nil {
					return err
				}
				if err := a.renderBefore(d.msg); err != nil {
					return err
				}
				want, err := a.feedWanted(d.msg)
				if err != nil {
					return err
				}
				if err := a.apply(d.msg); err != nil {
					return err
				}
				if want {
					if err := a.feed(d.msg); err != nil {
						return err
					}
				}
				rows += int64(1 + len(d.msg.Listings) + len(d.msg.Tokens) + len(d.msg.Sales))
			}
			if err := a.finish(); err != nil {
				return err
			}
			tx.SetPosition(streamNames[i], part[len(part)-1].sp)
			created = a.created
			return nil
		})
		if err == nil {
			p.rows.Add(rows)
			p.collections.Add(created)
			p.pos[i] = part[len(part)-1].sp
			p.cold.marked = p.cold.marked || p.cold.on
		}
		return err
	}
	// A build holding more renders than one transaction takes drains them
	// before a message that needs them rendered (errDrainHeld), then
	// applies the batch again (applying is idempotent).
	applyOrDrain := func(part []decoded) error {
		err := apply(part, false)
		if errors.Is(err, errDrainHeld) {
			if err = p.renderHeldLocked(ctx); err == nil {
				err = apply(part, true)
			}
		}
		return err
	}
	err := applyOrDrain(ds)
	if err == nil || !errors.Is(err, store.ErrTooBig) {
		return err
	}
	for k := range ds { // too big together: one transaction each
		err := applyOrDrain(ds[k : k+1])
		if err != nil && errors.Is(err, store.ErrTooBig) {
			p.log.Error().Err(err).Str("stream", streamNames[i]).Uint64("seq", ds[k].sp.Seq).Msg("message too large for one transaction; skipped")
			skip := ds[k]
			skip.msg = nil
			err = apply([]decoded{skip}, false)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// rerender renders the given parts of each collection of ids as of now
// in tx, yielding before each: the walks over many collections (the
// expiry sweep, a full re-render, Settle) give way to reads as applying
// does.
func (p *Projector) rerender(tx *store.Tx, now time.Time, ids []string, parts int) error {
	a := &applier{tx: tx, now: now, retention: p.opts.RowRetention, yield: p.opts.Yield}
	for _, cid := range ids {
		a.pause()
		if err := a.renderNow(cid, parts); err != nil {
			return err
		}
	}
	return a.save() // a render records the last good buyer floor and the detail's history
}

func (p *Projector) runJob(ctx context.Context) error {
	p.applyMu.Lock()
	defer p.applyMu.Unlock()
	return p.runJobLocked(ctx)
}

// runJobLocked processes a pending re-render to completion: one
// transaction per RerenderBatch collections (their detail, browse entries,
// listing snapshot and floor) that also records the job's progress. A
// crash resumes after the last batch committed (re-rendering is
// idempotent).
func (p *Projector) runJobLocked(ctx context.Context) error {
	for {
		done := false
		err := p.st.Update(ctx, func(tx *store.Tx) error {
			j, err := store.Get[job](tx, store.InJob, jobName)
			if err != nil || j == nil {
				done = true
				return err
			}
			if p.held != nil {
				// The job renders every collection as of now, after (and
				// so instead of) whatever a build holds.
				clear(p.held.parts)
				clear(p.held.at)
			}
			ids, err := tx.Collections(j.After, p.opts.RerenderBatch)
			if err != nil {
				return err
			}
			if err := p.rerender(tx, p.opts.Now(), ids, partDetail|partBrowse|partListings|partFloor); err != nil {
				return err
			}
			if len(ids) < p.opts.RerenderBatch {
				tx.Delete(store.InJob, jobName)
				done = true
				return nil
			}
			j.After = ids[len(ids)-1]
			tx.Put(store.InJob, j, jobName)
			return nil
		})
		if err != nil || done {
			return err
		}
	}
}

// renderHeldLocked renders the collection renders a replay build holds,
// heldInTxn collections per transaction, each as of its last message.
func (p *Projector) renderHeldLocked(ctx context.Context) error {
	if p.held == nil {
		return nil
	}
	ids := p.held.ids()
	if len(ids) > 0 {
		defer p.st.ReadAhead()() // reads each collection's inputs back in about their written order
	}
	for len(ids) > 0 {
		n := min(heldInTxn, len(ids))
		err := p.st.Update(ctx, func(tx *store.Tx) error {
			a := &applier{tx: tx, retention: p.opts.RowRetention, yield: p.opts.Yield, coll: p.held}
			if err := a.renderMarked(ids[:n]); err != nil {
				return err
			}
			return a.save()
		})
		if err != nil {
			return err
		}
		ids = ids[n:]
	}
	return nil
}

// Sweep re-projects, as of now, the listing snapshots and floors whose deadline is at or before now (a
// row expiring that the API cannot just skip, such as the floor's; a
// failing source's rows aging out: readmodel.Snapshot.Deadline). It
// returns how many views it re-projected.
//
// Sweep takes the projector's write lock one batch at a time (64
// collections, each batch one transaction), so the streams go
// on being applied between its batches: a large backlog of due views (a
// node that was down, a store whose pages the kernel evicted) delays
// applying by one batch, not by the whole walk. A view that a message
// re-renders between two batches may be rendered again by the sweep, from
// the inputs then stored; rendering is idempotent. Safe for concurrent use
// with the background loop; the caller must not hold the write lock.
func (p *Projector) Sweep(ctx context.Context, now time.Time) (int, error) {
	total := 0
	var at store.DueCursor
	n, err := p.sweepAll(true, &p.sweptListings, func() (int, error) {
		due, next, err := p.st.Due(ctx, now, at, 64)
		if err != nil || len(due) == 0 {
			return 0, err
		}
		at = next
		return len(due), p.st.Update(ctx, func(tx *store.Tx) error {
			return p.rerender(tx, now, due, partListings|partFloor)
		})
	})
	return total + n, err
}

// sweepAll runs batch (see sweepBatch) until it finds nothing due,
// adding the views it covered to counted, and returns their total.
func (p *Projector) sweepAll(lock bool, counted *atomic.Int64, batch func() (int, error)) (int, error) {
	total := 0
	for {
		n, err := p.sweepBatch(lock, batch)
		if err != nil || n == 0 {
			return total, err
		}
		total += n
		counted.Add(int64(n))
	}
}

// sweepBatch runs one batch of a sweep, under the write lock if lock (the
// caller holds it otherwise), and adds its time to the sweep total. It
// returns how many views the batch covered (0: nothing was due).
func (p *Projector) sweepBatch(lock bool, batch func() (int, error)) (int, error) {
	if lock {
		p.applyMu.Lock()
		defer func() {
			p.applyMu.Unlock()
			if p.afterSweepBatch != nil {
				p.afterSweepBatch()
			}
		}()
	}
	defer func(start time.Time) { p.sweepNanos.Add(int64(time.Since(start))) }(time.Now())
	return batch()
}

// Settle finishes a pending full re-render, re-renders every collection's
// listing snapshot and floor as of now and sweeps the token views at now,
// without consuming (it needs no NATS connection: New(nil, st, ...) is
// fine). Views that depend on the clock (row expiry, retention of a
// failing source's rows) are then as of now, so two stores settled at the
// same now hold the same digest exactly when they applied the same
// messages; use it before comparing digests of nodes that stopped at
// different times.
//
// The walk is needed because a running node re-renders a snapshot only at
// its deadline, not at each row's expiry (the API skips expired rows at
// request time; see readmodel.Snapshot.Deadline): two nodes that rendered
// a snapshot before and after a row expired serve the same listings but
// store different rows until both re-render it.
func (p *Projector) Settle(ctx context.Context, now time.Time) error {
	if err := p.runJob(ctx); err != nil {
		return err
	}
	p.applyMu.Lock()
	defer p.applyMu.Unlock()
	// Token views are rendered on read (the digest renders them as of
	// its own time): only listing snapshots and floors need settling.
	return p.renderAllListingsLocked(ctx, now)
}

// renderAllListingsLocked re-renders every collection's listing snapshot
// and floor as of now, RerenderBatch collections per transaction.
func (p *Projector) renderAllListingsLocked(ctx context.Context, now time.Time) error {
	after := ""
	for {
		var ids []string
		err := p.st.Update(ctx, func(tx *store.Tx) error {
			var err error
			if ids, err = tx.Collections(after, p.opts.RerenderBatch); err != nil {
				return err
			}
			return p.rerender(tx, now, ids, partListings|partFloor)
		})
		if err != nil || len(ids) < p.opts.RerenderBatch {
			return err
		}
		after = ids[len(ids)-1]
	}
}

func (p *Projector) sweepLoop(ctx context.Context) {
	defer p.wg.Done()
	t := time.NewTicker(p.opts.SweepInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := p.guarded("sweep", func() error { _, err := p.Sweep(ctx, p.opts.Now()); return err }); err != nil && ctx.Err() == nil {
				p.damaged(err)
				p.log.Warn().Err(err).Msg("sweep failed")
			}
		}
	}
}

// ApplyAvailable applies, synchronously, every message that is in the
// streams when it is called, then sweeps with the injected clock. It
// returns how many messages it applied. It is the test and replay hook:
// do not call it while the background loop runs (after Open).
func (p *Projector) ApplyAvailable(ctx context.Context) (int, error) {
	if err := p.load(ctx); err != nil {
		return 0, err
	}
	if err := p.runJob(ctx); err != nil {
		return 0, err
	}
	heads, err := p.heads(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for i := range p.iters {
		k, err := p.drain(ctx, i, []uint64{heads.State, heads.Sales}[i], nil)
		n += k
		if err != nil {
			return n, err
		}
	}
	_, err = p.Sweep(ctx, p.opts.Now())
	return n, err
}

// drain applies stream i up to sequence head, reporting each applied batch
// to progress (may be nil), with a reader (see reader.go). A batch decoded
// ahead is applied before drain returns, waits for the stream or restarts
// its consumer.
func (p *Projector) drain(ctx context.Context, i int, head uint64, progress func(applied int)) (int, error) {
	n, idle := 0, 0
	r := &reader{p: p, i: i, progress: func(k int) {
		n += k
		if progress != nil {
			progress(k)
		}
	}}
	defer r.close()
	for {
		if ok, last := r.pending(); ok && last >= head {
			// The batch decoded ahead reaches the head: apply it and
			// stop, without fetching past the head.
			if err := r.settle(ctx); err != nil {
				return n, err
			}
		}
		p.applyMu.Lock()
		at := p.pos[i].Seq
		it := p.iters[i]
		p.applyMu.Unlock()
		if at >= head {
			err := r.settle(ctx) // before n is read: settle counts into it
			return n, err
		}
		if it == nil {
			if err := r.settle(ctx); err != nil {
				return n, err
			}
			p.applyMu.Lock()
			err := p.startIter(ctx, i)
			it = p.iters[i]
			p.applyMu.Unlock()
			if err != nil {
				return n, err
			}
		}
		m, err := it.Next(jetstream.NextMaxWait(r.wait(2 * time.Second)))
		if err != nil {
			if ctx.Err() != nil {
				return n, readmodel.Wrap(readmodel.Internal, ctx.Err(), "apply available")
			}
			if ok, _ := r.pending(); ok {
				if err := r.settle(ctx); err != nil {
					return n, err
				}
				if errors.Is(err, nats.ErrTimeout) {
					continue // not idle: it was applying
				}
			}
			if errors.Is(err, nats.ErrTimeout) {
				// The head may have been removed (limits, purge): re-read it.
				h, herr := p.heads(ctx)
				if herr != nil {
					return n, herr
				}
				head = min(head, []uint64{h.State, h.Sales}[i])
				// Sequences up to the head that are gone are passed over
				// and recorded, not waited for.
				if skipped, err := p.skipGone(ctx, i); err == nil && skipped {
					idle = 0
					continue
				}
				if idle++; idle > drainIdle {
					return n, readmodel.Errorf(readmodel.UpstreamError, "stream %s: no delivery up to %d", streamNames[i], head)
				}
				if idle%stallChecks == 0 {
					// Like the background loop's watchdog: a consumer idle
					// behind the head (placed on a server still catching
					// up, lost in a leader move) is recreated.
					p.dropIter(i, it)
				}
				continue
			}
			p.applyMu.Lock()
			it.Stop()
			p.iters[i] = nil
			p.applyMu.Unlock()
			if idle++; idle > 5 {
				return n, readmodel.Wrap(readmodel.UpstreamError, err, "consume "+streamNames[i])
			}
			continue
		}
		idle = 0
		if ferr, aerr := r.take(ctx, it, m); aerr != nil || ferr != nil {
			return n, errors.Join(aerr, ferr)
		}
	}
}

// decodeID returns the id of an encoded message.
func decodeID(data []byte) (string, error) {
	m, err := bus.Decode(data)
	if err != nil {
		return "", err
	}
	return m.ID, nil
}

package projector

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/store"
)

// ReplayOptions configures Replay.
type ReplayOptions struct {
	// FromSeq, when > 0, starts each stream at this sequence on top of a
	// snapshot of the node's current views (instead of an empty store from
	// the start). Messages between the snapshot's position and FromSeq are
	// not applied: pick N at or below the snapshot's position.
	FromSeq uint64
	// Since, when set, starts each stream at its first message stored at or
	// after Since, on top of a snapshot of the node's current views.
	Since time.Time
	// Projector configures the projector that applies the messages.
	Projector Options
	// Store configures the new store.
	Store store.Options
	// Log receives progress and warnings.
	Log zerolog.Logger
	// BulkLimit bounds a replay from the start of the streams that builds
	// in memory (bulk.go): up to this many bytes stored in the streams it
	// does, above them it applies in batches into Badger. 0 means
	// DefaultBulkLimit, or less under a Go memory limit (bulkLimit);
	// negative always applies in batches.
	BulkLimit int64
	// OnPhase, when set, is called as each phase of the replay begins
	// (Phases), on the replay's goroutine.
	OnPhase func(phase string)
	// OnProgress, when set, receives where the replay stands at most once
	// a second and at the end of each phase, on the replay's goroutine,
	// whatever ProgressEvery says (a node shows it in /metrics).
	OnProgress func(Progress)
	// ProgressEvery is the interval between progress lines when progress
	// is not a terminal; 0 means 5 seconds (a terminal gets a line
	// rewritten four times a second).
	ProgressEvery time.Duration
}

// The phases of a replay, as its progress lines and OnPhase name them.
const (
	// PhaseApply applies the streams in batches into Badger.
	PhaseApply = "apply"
	// PhaseApplyMemory applies them into a store in memory (bulk.go).
	PhaseApplyMemory = "apply in memory"
	// PhaseWrite writes the store in memory into Badger.
	PhaseWrite = "write"
)

// Phases are the phases of a replay, in the order they may come.
var Phases = []string{PhaseApply, PhaseApplyMemory, PhaseWrite}

// Progress is where a replay stands, as OnProgress receives it.
type Progress struct {
	// Phase is the phase under way (Phases).
	Phase string
	// Done and Total count the phase's work: messages in the apply
	// phases, records in PhaseWrite. Total is 0 while it is unknown.
	Done, Total int64
	// Collections is how many collections the replay has built so far.
	Collections int64
	// Left estimates how long the phase still takes, at its rate so far;
	// negative while there is no rate to go by.
	Left time.Duration
}

func (o ReplayOptions) phase(ph string) {
	if o.OnPhase != nil {
		o.OnPhase(ph)
	}
}

// ReplayResult summarises a replay.
type ReplayResult struct {
	Messages int
	Rows     int64
	Elapsed  time.Duration
	// Bulk says the replay built in memory and wrote the store once
	// (bulk.go); Applied and Written are then its two phases' times.
	Bulk             bool
	Applied, Written time.Duration
	// Collections is how many collections the replay built.
	Collections int64
	// Gaps is what the replay passed over: sequences the streams no
	// longer hold (a damaged or purged stream), with their ranges. A
	// replay finishes through them; Gaps.Incomplete says whether a full
	// ingest cycle came after the last of them.
	Gaps Gaps
}

// Replay rebuilds the node's views in dataDir/badger from the streams: it
// builds a fresh store in dataDir/badger.new (from the start of the
// streams, or from a snapshot of the current store plus the messages from
// opts.FromSeq or opts.Since), applies everything that is in the streams
// when it starts, and swaps the build in atomically (see
// store.RecoverSwap). From the start of the streams it builds in memory
// and writes the store once (bulk.go) when the streams are small enough
// (opts.BulkLimit). The node must not be running (Badger's directory lock
// makes the snapshot step fail otherwise). Progress (the phase: apply,
// apply in memory, write; messages and rows per second, messages left,
// records written) goes to progress: rewritten in place on a terminal,
// one line per interval otherwise. A replay killed before the swap leaves
// an incomplete build that the next one removes.
func Replay(ctx context.Context, js jetstream.JetStream, dataDir string, opts ReplayOptions, progress io.Writer) error {
	_, err := ReplayWithResult(ctx, js, dataDir, opts, progress)
	return err
}

// ReplayWithResult is Replay returning its summary.
func ReplayWithResult(ctx context.Context, js jetstream.JetStream, dataDir string, opts ReplayOptions, progress io.Writer) (ReplayResult, error) {
	var res ReplayResult
	live := filepath.Join(dataDir, "badger")
	build := live + ".new"
	if err := store.RecoverSwap(live); err != nil {
		return res, err
	}
	snapshot := opts.FromSeq > 0 || !opts.Since.IsZero()
	// Replay must never swap a store out from under a running node: it
	// holds the views' directory lock from the start (after the snapshot
	// copy, which opens the views itself) until the swap, so no node can
	// start on them meanwhile.
	unlock := func() {}
	defer func() { unlock() }()
	lockLive := func() error {
		release, err := store.LockDir(live)
		if err != nil {
			return err
		}
		unlock = release
		return nil
	}
	if !snapshot {
		if err := lockLive(); err != nil {
			return res, err
		}
	}
	// A build that a crash or an error cut short is never swapped in
	// (SwapIn marks it complete first): the next replay starts over.
	if err := os.RemoveAll(build); err != nil {
		return res, readmodel.Wrap(readmodel.Internal, err, "clear replay build dir")
	}
	bopts := opts.Store
	bopts.NoSuperseded = true
	var err error
	bulk := false
	if !snapshot {
		if bulk, err = chooseBulk(ctx, js, opts, progress); err != nil {
			return res, err
		}
	}
	if bulk {
		res, err = replayBulk(ctx, js, build, bopts, opts, progress)
	} else {
		res, err = replayBatched(ctx, js, live, build, bopts, opts, snapshot, lockLive, progress)
	}
	if err != nil {
		return res, err
	}
	if err := store.SwapIn(live, build); err != nil {
		return res, err
	}
	ev := opts.Log.Info()
	if len(res.Gaps.Ranges) > 0 {
		ev = opts.Log.Warn().Interface("skipped", res.Gaps.Skipped).Interface("gaps", res.Gaps.Ranges).Bool("incomplete", res.Gaps.Incomplete)
		if progress != nil {
			for _, g := range res.Gaps.Ranges {
				fmt.Fprintf(progress, "replay: passed over %s %d-%d (%s)\n", g.Stream, g.From, g.To, g.Reason)
			}
			if res.Gaps.Incomplete {
				fmt.Fprintln(progress, "replay: the streams lack what these gaps took until a full ingest cycle republishes it (POST /admin/ingest?full=true)")
			}
		}
	}
	ev = ev.Int("messages", res.Messages).Int64("rows", res.Rows).Int64("elapsed_ms", res.Elapsed.Milliseconds()).Bool("bulk", res.Bulk)
	if res.Bulk {
		ev = ev.Int64("apply_ms", res.Applied.Milliseconds()).Int64("write_ms", res.Written.Milliseconds())
	}
	ev.Str("dir", live).Msg("replay complete")
	return res, nil
}

// replayBatched applies the streams into a Badger store in build, one
// transaction per batch, starting from a copy of the live store when
// snapshot is set (FromSeq, Since), and closes it.
func replayBatched(ctx context.Context, js jetstream.JetStream, live, build string, bopts store.Options, opts ReplayOptions, snapshot bool, lockLive func() error, progress io.Writer) (ReplayResult, error) {
	st, err := store.Open(ctx, build, bopts)
	if err != nil {
		return ReplayResult{}, err
	}
	closed := false
	defer func() {
		if !closed {
			_ = st.Close(context.Background())
		}
	}()
	p := New(js, st, opts.Projector, opts.Log)
	if snapshot {
		if err := p.seedFromSnapshot(ctx, live, opts); err != nil {
			return ReplayResult{}, err
		}
		if err := lockLive(); err != nil {
			return ReplayResult{}, err
		}
	}
	res, err := p.replay(ctx, opts, progress, PhaseApply)
	if err != nil {
		return res, err
	}
	closed = true
	return res, st.Close(ctx)
}

// ReplayInto applies to st, from its saved positions (an empty store:
// from the start of the streams), everything that is in the streams when
// it starts, as Replay does into its build: st may be a memory store
// (store.OpenMemory). Nothing else may write to st meanwhile. Errors are
// *readmodel.Error.
func ReplayInto(ctx context.Context, js jetstream.JetStream, st *store.Store, opts ReplayOptions, progress io.Writer) (ReplayResult, error) {
	return New(js, st, opts.Projector, opts.Log).replay(ctx, opts, progress, PhaseApply)
}

// replay applies the streams up to their heads at call time and stops
// the projector's stream readers. Its progress lines name phase.
func (p *Projector) replay(ctx context.Context, opts ReplayOptions, progress io.Writer, phase string) (ReplayResult, error) {
	opts.phase(phase)
	defer p.stopIters()
	var res ReplayResult
	start := time.Now()
	n, err := p.replayAll(ctx, newProgress(progress, opts, phase, p))
	res.Messages = n
	if err != nil {
		return res, err
	}
	res.Elapsed = time.Since(start)
	res.Rows = p.rows.Load()
	res.Collections = p.collections.Load()
	res.Gaps = p.Gaps()
	return res, nil
}

// seedFromSnapshot copies the live store into the build and positions the
// projector at FromSeq or Since.
func (p *Projector) seedFromSnapshot(ctx context.Context, live string, opts ReplayOptions) error {
	if _, err := os.Stat(live); err == nil {
		src, err := store.Open(ctx, live, opts.Store)
		if err != nil {
			return err
		}
		err = src.CopyTo(ctx, p.st)
		_ = src.Close(ctx)
		if err != nil {
			return err
		}
	} else {
		opts.Log.Warn().Str("dir", live).Msg("no views to start from; replaying onto an empty store")
	}
	saved, err := p.st.Positions(ctx, streamNames[:]...)
	if err != nil {
		return err
	}
	for i, name := range streamNames {
		first := opts.FromSeq
		if !opts.Since.IsZero() {
			if first, err = p.firstSince(ctx, name, opts.Since); err != nil {
				return err
			}
		}
		if first-1 > saved[i].Seq {
			opts.Log.Warn().Str("stream", name).Uint64("snapshot", saved[i].Seq).Uint64("from", first).Msg("gap between the snapshot and the replay start: those messages are not applied")
		}
		sp := store.StreamPos{Seq: first - 1}
		if sp.Seq > 0 {
			if s, err := p.js.Stream(ctx, name); err == nil {
				if raw, err := s.GetMsg(ctx, sp.Seq); err == nil {
					if m, err := decodeID(raw.Data); err == nil {
						sp.ID = m
					}
				}
			}
		}
		p.pos[i] = sp
		if err := p.st.Update(ctx, func(tx *store.Tx) error { tx.SetPosition(name, sp); return nil }); err != nil {
			return err
		}
	}
	p.mu.Lock()
	p.applied = readmodel.Position{State: p.pos[0].Seq, Sales: p.pos[1].Seq}
	p.mu.Unlock()
	p.loaded = true
	return nil
}

// firstSince returns the sequence of the first message of stream stored at
// or after since (the stream's next sequence when there is none).
func (p *Projector) firstSince(ctx context.Context, stream string, since time.Time) (uint64, error) {
	c, err := p.js.OrderedConsumer(ctx, stream, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverByStartTimePolicy, OptStartTime: &since})
	if err != nil {
		return 0, readmodel.Wrap(readmodel.UpstreamError, err, "ordered consumer "+stream)
	}
	m, err := c.Next(jetstream.FetchMaxWait(time.Second))
	if err == nil {
		meta, err := m.Metadata()
		if err != nil {
			return 0, readmodel.Wrap(readmodel.UpstreamError, err, "message metadata")
		}
		return meta.Sequence.Stream, nil
	}
	if !errors.Is(err, nats.ErrTimeout) && !errors.Is(err, context.DeadlineExceeded) {
		return 0, readmodel.Wrap(readmodel.UpstreamError, err, "first message since")
	}
	s, err := p.js.Stream(ctx, stream)
	if err != nil {
		return 0, readmodel.Wrap(readmodel.UpstreamError, err, "stream "+stream)
	}
	info, err := s.Info(ctx)
	if err != nil {
		return 0, readmodel.Wrap(readmodel.UpstreamError, err, "stream info "+stream)
	}
	return info.State.LastSeq + 1, nil
}

// replayAll applies both streams up to their heads at call time, reporting
// to pr.
func (p *Projector) replayAll(ctx context.Context, pr *progress) (int, error) {
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
	total, err := p.pendingMessages(ctx, heads)
	if err != nil {
		return 0, err
	}
	pr.total = total
	// A build serves nobody until it is swapped in, so it renders each
	// collection's views once, at the end, instead of after each of its
	// messages: in a first cycle a collection's document, stats,
	// analytics and two listing sets arrive far apart, each rendering the
	// same views again. Token views and sales are still written per batch.
	p.applyMu.Lock()
	p.held = newPending()
	p.applyMu.Unlock()
	defer func() {
		p.applyMu.Lock()
		p.held = nil
		p.applyMu.Unlock()
	}()
	n := 0
	for i := range p.iters {
		k, err := p.drain(ctx, i, []uint64{heads.State, heads.Sales}[i], func(k int) { pr.tick(k) })
		n += k
		if err != nil {
			return n, err
		}
	}
	p.applyMu.Lock()
	err = p.renderHeldLocked(ctx)
	p.applyMu.Unlock()
	if err != nil {
		return n, err
	}
	_, err = p.Sweep(ctx, p.opts.Now())
	pr.tick(-1)
	return n, err
}

// pendingMessages counts the messages (not stream sequences: the state
// stream is compacted, so most sequences below its head are gone) that a
// replay applies: those after each stream's applied position up to its
// head. It asks the server through a short-lived consumer per stream, whose
// NumPending is exactly that count when nothing is published meanwhile;
// messages published after the heads were read are subtracted as far as
// the sequences tell.
func (p *Projector) pendingMessages(ctx context.Context, heads readmodel.Position) (int64, error) {
	var total int64
	for i, name := range streamNames {
		head := []uint64{heads.State, heads.Sales}[i]
		from := p.pos[i].Seq + 1
		if from > head {
			continue
		}
		c, err := p.js.CreateConsumer(ctx, name, jetstream.ConsumerConfig{
			DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: from,
			AckPolicy: jetstream.AckNonePolicy, InactiveThreshold: time.Minute,
		})
		if err != nil {
			return 0, readmodel.Wrap(readmodel.UpstreamError, err, "count messages of "+name)
		}
		info := c.CachedInfo()
		n := int64(info.NumPending)
		if s, err := p.js.Stream(ctx, name); err == nil {
			if si, err := s.Info(ctx); err == nil && si.State.LastSeq > head {
				n -= int64(si.State.LastSeq - head) // an upper bound of what came after the head
			}
		}
		_ = p.js.DeleteConsumer(ctx, name, info.Name)
		total += max(n, 0)
	}
	return total, nil
}

type progress struct {
	w      io.Writer
	tty    bool
	every  time.Duration
	report func(Progress) // ReplayOptions.OnProgress
	total  int64          // messages the replay applies
	phase  string
	p      *Projector // counts rows and collections; nil in the write phase
	colls  int64      // collections built, when p is nil
	start  time.Time
	last   time.Time // of the last line printed
	lastR  time.Time // of the last report
	// applied is the messages applied so far.
	applied atomic.Int64
}

// newProgress reports phase to w and opts.OnProgress; p is the projector
// applying the messages (nil in the write phase).
func newProgress(w io.Writer, opts ReplayOptions, phase string, p *Projector) *progress {
	every := opts.ProgressEvery
	if every <= 0 {
		every = 5 * time.Second
	}
	pr := &progress{w: w, every: every, report: opts.OnProgress, phase: phase, p: p, start: time.Now()}
	pr.last, pr.lastR = pr.start, pr.start
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			pr.tty, pr.every = true, 250*time.Millisecond
		}
	}
	return pr
}

// due says whether a line (line) or a report is due at now; final
// (the phase's end) makes both due.
func (pr *progress) due(now time.Time, final bool) (line, report bool) {
	line = pr.w != nil && (final || now.Sub(pr.last) >= pr.every)
	report = pr.report != nil && (final || now.Sub(pr.lastR) >= time.Second)
	if line {
		pr.last = now
	}
	if report {
		pr.lastR = now
	}
	return line, report
}

// collections is how many collections the replay has built so far.
func (pr *progress) collections() int64 {
	if pr.p != nil {
		return pr.p.collections.Load()
	}
	return pr.colls
}

// eta estimates the time left to do left more units at the rate done
// took since the phase began; negative when nothing is done yet.
func eta(done, left int64, took time.Duration) time.Duration {
	switch {
	case left <= 0:
		return 0
	case done <= 0 || took <= 0:
		return -1
	}
	return time.Duration(float64(took) * float64(left) / float64(done))
}

// leftText is eta for a progress line.
func leftText(d time.Duration) string {
	if d < 0 {
		return "time left unknown"
	}
	return "about " + d.Round(time.Second).String() + " left"
}

// tick records k more applied messages; k < 0 marks the end.
func (pr *progress) tick(k int) {
	final := k < 0
	n := pr.applied.Add(int64(max(k, 0)))
	now := time.Now()
	line, report := pr.due(now, final)
	if !line && !report {
		return
	}
	// applied + left stays the total the replay started with; a message
	// the stream dropped meanwhile (compaction) is never applied, so the
	// last line says 0 rather than what it would have been.
	left := max(pr.total-n, 0)
	if final {
		left = 0
	}
	took := now.Sub(pr.start)
	in, colls := eta(n, left, took), pr.collections()
	if report {
		pr.report(Progress{Phase: pr.phase, Done: n, Total: pr.total, Collections: colls, Left: in})
	}
	if !line {
		return
	}
	secs := max(took.Seconds(), 1e-9)
	var rows int64
	if pr.p != nil {
		rows = pr.p.rows.Load()
	}
	pr.print(fmt.Sprintf("replay: %d messages, %.0f msgs/s, %.0f rows/s, %d messages left, %d collections, %s, phase %s",
		n, float64(n)/secs, float64(rows)/secs, left, colls, leftText(in), pr.phase), final)
}

// print writes line: rewritten in place on a terminal (final ends it),
// a line of its own otherwise.
func (pr *progress) print(line string, final bool) {
	switch {
	case pr.tty && final:
		fmt.Fprintf(pr.w, "\r%s\n", line)
	case pr.tty:
		fmt.Fprintf(pr.w, "\r%s", line)
	default:
		fmt.Fprintln(pr.w, line)
	}
}

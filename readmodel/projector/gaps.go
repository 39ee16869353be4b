package projector

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/store"
)

// A damaged or lost bus is said, not hidden. Stream sequences that are
// gone (garbage in the server's block files, messages deleted, a tail the
// server lost) are passed over instead of waited for, and recorded:
// how many per stream (Gaps.Skipped, the metric
// marketd_bus_skipped_total), which ranges and why (Gaps.Ranges, on the
// admin listener's /admin/sources), and that the views are incomplete
// until a full ingest cycle has been applied after them (Gaps.Incomplete,
// /readyz). The views are never reset because of it: the last good views
// keep being served whole, and a full cycle (readmodel.FullCycleEnd)
// brings back what the damage took.
//
// What is detected:
//   - a stream whose head is past its last readable message: the
//     consumer delivers nothing while the stream's last sequence says
//     there is more (GapMissing);
//   - a sales stream (append-only, nothing is ever removed from it) that
//     delivers a sequence past the next one (GapMissing);
//   - messages the server reports lost when it found a damaged block
//     (GapLost);
//   - undecodable messages (GapUndecodable);
//   - a stream whose head fell below the applied position, or whose
//     message there has another id: it lost its tail or was recreated,
//     and its sequences are re-issued. Its messages are applied again,
//     from its start, over the views (GapReissued; these sequences were
//     applied before, so they do not count as skipped).
//
// Missing sequences inside the state stream are normal (it keeps the
// last message per subject) and cannot be told from lost ones, unless the
// server says so (GapLost).

// Reasons of a Gap.
const (
	GapMissing     = "missing"
	GapLost        = "lost"
	GapUndecodable = "undecodable"
	GapReissued    = "reissued"
)

// Gap is a run of stream sequences [From, To] the projector passed over.
type Gap struct {
	Stream string    `json:"stream"`
	From   uint64    `json:"from"`
	To     uint64    `json:"to"`
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
}

// Gaps is what the projector passed over since it was created.
type Gaps struct {
	// Skipped counts, per stream, the sequences passed over without being
	// applied (GapReissued ranges are not counted: they had been applied).
	Skipped map[string]uint64 `json:"skipped"`
	// Ranges are the latest gaps, oldest first (at most maxGapRanges;
	// Dropped says how many older ones were let go).
	Ranges  []Gap `json:"ranges"`
	Dropped int   `json:"dropped,omitempty"`
	// Incomplete is true from a gap until a full ingest cycle is applied
	// after it: the views may lack or hold stale what the gap took.
	Incomplete bool `json:"incomplete"`
	// HealedAt is when a full cycle last made the views whole again after
	// a gap (zero if never).
	HealedAt time.Time `json:"healedAt,omitzero"`
}

// Reason says, in one line, why the views are incomplete ("" when they
// are not).
func (g Gaps) Reason() string {
	if !g.Incomplete {
		return ""
	}
	var parts []string
	for _, name := range streamNames {
		if n := g.Skipped[name]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s skipped %d", name, n))
		}
	}
	if len(g.Ranges) == 0 {
		return "bus damaged: serving the last good views until a full ingest cycle is applied (POST /admin/ingest?full=true on the ingest node)"
	}
	last := g.Ranges[len(g.Ranges)-1]
	return fmt.Sprintf("bus damaged: %s; last gap %s %d-%d (%s); serving the last good views until a full ingest cycle is applied (POST /admin/ingest?full=true on the ingest node)",
		strings.Join(append(parts, fmt.Sprintf("%d gaps", len(g.Ranges)+g.Dropped)), ", "), last.Stream, last.From, last.To, last.Reason)
}

const maxGapRanges = 100

// gapLog is the projector's record of gaps; its own lock, so decoding
// and the admin listener never wait for an apply.
type gapLog struct {
	mu         sync.Mutex
	skipped    [2]uint64
	ranges     []Gap
	dropped    int
	incomplete bool
	healedAt   time.Time
	lostAbove  [2]uint64 // server-reported lost sequences up to here are recorded
	foundAt    [2][2]uint64
	lowAt      [2]uint64 // the applied position a head below it was seen at
}

// Gaps returns what the projector passed over. Safe for concurrent use.
func (p *Projector) Gaps() Gaps {
	g := &p.gaps
	g.mu.Lock()
	defer g.mu.Unlock()
	out := Gaps{Skipped: map[string]uint64{}, Ranges: append([]Gap{}, g.ranges...), Dropped: g.dropped, Incomplete: g.incomplete, HealedAt: g.healedAt}
	for i, name := range streamNames {
		out.Skipped[name] = g.skipped[i]
	}
	return out
}

// Adopt adds g, what the replay that built this projector's store passed
// over, to its own record: views rebuilt from a damaged bus stay
// incomplete until a full cycle, as the live views were.
func (p *Projector) Adopt(g Gaps) {
	lg := &p.gaps
	lg.mu.Lock()
	defer lg.mu.Unlock()
	for i, name := range streamNames {
		lg.skipped[i] += g.Skipped[name]
	}
	lg.ranges = append(append([]Gap{}, g.Ranges...), lg.ranges...)
	lg.dropped += g.Dropped
	if n := len(lg.ranges) - maxGapRanges; n > 0 {
		lg.dropped += n
		lg.ranges = lg.ranges[n:]
	}
	lg.incomplete = lg.incomplete || g.Incomplete
}

// recordGap notes that stream i's sequences [from, to] were passed over.
func (p *Projector) recordGap(i int, from, to uint64, reason string) {
	if from > to {
		return
	}
	g := &p.gaps
	g.mu.Lock()
	if reason != GapReissued {
		g.skipped[i] += to - from + 1
	}
	if n := len(g.ranges); n > 0 && g.ranges[n-1].Stream == streamNames[i] && g.ranges[n-1].Reason == reason && g.ranges[n-1].To+1 == from {
		g.ranges[n-1].To = to // one run delivered in pieces
	} else {
		g.ranges = append(g.ranges, Gap{Stream: streamNames[i], From: from, To: to, Reason: reason, At: time.Now().UTC()})
		if len(g.ranges) > maxGapRanges {
			g.dropped += len(g.ranges) - maxGapRanges
			g.ranges = append(g.ranges[:0], g.ranges[len(g.ranges)-maxGapRanges:]...)
		}
	}
	g.incomplete = true
	g.mu.Unlock()
	p.log.Warn().Str("stream", streamNames[i]).Uint64("from", from).Uint64("to", to).Str("reason", reason).
		Msg("passing over stream sequences that are gone; the views are incomplete until a full ingest cycle")
}

// healed notes that a full cycle's last message was applied.
func (p *Projector) healed() {
	g := &p.gaps
	g.mu.Lock()
	was := g.incomplete
	g.incomplete = false
	if was {
		g.healedAt = time.Now().UTC()
	}
	g.mu.Unlock()
	if was {
		p.log.Info().Msg("a full ingest cycle was applied after the gaps: the views are whole again")
	}
}

// noteLost records the sequences above the applied position that the
// server reports lost (it found a damaged block), once each.
func (p *Projector) noteLost(i int, lost *jetstream.LostStreamData, applied uint64) {
	if lost == nil || len(lost.Msgs) == 0 {
		return
	}
	g := &p.gaps
	g.mu.Lock()
	above := max(g.lostAbove[i], applied)
	var seqs []uint64
	for _, s := range lost.Msgs {
		if s > above {
			seqs = append(seqs, s)
			g.lostAbove[i] = max(g.lostAbove[i], s)
		}
	}
	g.mu.Unlock()
	for _, r := range runs(seqs) {
		p.recordGap(i, r[0], r[1], GapLost)
	}
}

// runs groups sequences into [from, to] runs of consecutive ones.
func runs(seqs []uint64) [][2]uint64 {
	sorted := append([]uint64(nil), seqs...)
	for k := 1; k < len(sorted); k++ { // short lists: insertion sort
		for j := k; j > 0 && sorted[j] < sorted[j-1]; j-- {
			sorted[j], sorted[j-1] = sorted[j-1], sorted[j]
		}
	}
	var out [][2]uint64
	for _, s := range sorted {
		if n := len(out); n > 0 && (s == out[n-1][1]+1 || s == out[n-1][1]) {
			out[n-1][1] = s
			continue
		}
		out = append(out, [2]uint64{s, s})
	}
	return out
}

// skipGone is called when stream i's consumer delivers nothing while the
// stream's head is past the applied position. It asks the server for the
// first message after the applied position: when there is none, the
// sequences up to the head are gone, and the position moves past them
// (recorded as a gap: a healthy state stream always holds its head). When
// there is one but the consumer still did not deliver it on the previous
// check either, the sequences before it are passed over the same way
// (recorded on the sales stream only: in the state stream compaction
// leaves such runs too). It reports whether the position moved; when
// it did not, the caller recreates the consumer as before.
func (p *Projector) skipGone(ctx context.Context, i int) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	s, err := p.js.Stream(ctx, streamNames[i])
	if err != nil {
		return false, readmodel.Wrap(readmodel.UpstreamError, err, "stream "+streamNames[i])
	}
	info, err := s.Info(ctx)
	if err != nil {
		return false, readmodel.Wrap(readmodel.UpstreamError, err, "stream info "+streamNames[i])
	}
	head := info.State.LastSeq
	p.applyMu.Lock()
	at := p.pos[i].Seq
	p.applyMu.Unlock()
	p.noteLost(i, info.State.Lost, at)
	if head < at {
		// Acted on when seen twice at the same position: a head read
		// once, low, from a server still catching up is no proof.
		g := &p.gaps
		g.mu.Lock()
		seen := g.lowAt[i] == at
		g.lowAt[i] = at
		g.mu.Unlock()
		if !seen {
			return false, nil
		}
		return p.reissued(ctx, i, at, head)
	}
	if head == at {
		return false, nil
	}
	to := head
	raw, err := s.GetMsg(ctx, at+1, jetstream.WithGetMsgSubject(">"))
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
		// Nothing readable up to the head.
	case err != nil:
		return false, readmodel.Wrap(readmodel.UpstreamError, err, "next message of "+streamNames[i])
	default:
		g := &p.gaps
		g.mu.Lock()
		prev := g.foundAt[i]
		g.foundAt[i] = [2]uint64{at, raw.Sequence}
		g.mu.Unlock()
		if raw.Sequence == at+1 || prev != [2]uint64{at, raw.Sequence} {
			return false, nil // readable and next: a stalled consumer, or a first sighting
		}
		to = raw.Sequence - 1 // seen twice, never delivered: start the consumer at it
	}
	if moved, err := p.moveTo(ctx, i, at, store.StreamPos{Seq: to}); !moved || err != nil {
		return false, err
	}
	p.setApplied(i, to)
	if i == iState && to < head {
		// Nothing readable between the position and a message the state
		// stream does hold: compaction removes such runs too, so they are
		// not counted as lost.
		p.log.Info().Str("stream", streamNames[i]).Uint64("from", at+1).Uint64("to", to).Msg("consumer did not deliver past sequences with no readable message; starting it after them")
		return true, nil
	}
	p.recordGap(i, at+1, to, GapMissing)
	return true, nil
}

// moveTo sets stream i's applied position to sp, unless something was
// applied since it stood at at (then moved is false), and stops its
// consumer so that the next fetch starts after sp.
func (p *Projector) moveTo(ctx context.Context, i int, at uint64, sp store.StreamPos) (moved bool, err error) {
	p.applyMu.Lock()
	defer p.applyMu.Unlock()
	if p.pos[i].Seq != at { // applied something meanwhile
		return false, nil
	}
	if err := p.st.Update(ctx, func(tx *store.Tx) error { tx.SetPosition(streamNames[i], sp); return nil }); err != nil {
		return false, err
	}
	p.pos[i] = sp
	if it := p.iters[i]; it != nil {
		it.Stop()
		p.iters[i] = nil
	}
	return true, nil
}

// reissued handles, while consuming, what load does at Open: stream i's
// head fell below the applied position at (the stream was recreated, or
// lost its tail and a server restarted), so its sequences are re-issued.
// Its messages are applied again from its start, over the views.
func (p *Projector) reissued(ctx context.Context, i int, at, head uint64) (bool, error) {
	if moved, err := p.moveTo(ctx, i, at, store.StreamPos{}); !moved || err != nil {
		return false, err
	}
	p.mu.Lock() // the applied position goes back: later waits are in the new numbering
	if i == iState {
		p.applied.State = 0
	} else {
		p.applied.Sales = 0
	}
	p.mu.Unlock()
	p.log.Warn().Str("stream", streamNames[i]).Uint64("seq", at).Uint64("head", head).Msg("stream re-issued sequences below the applied position; applying it again from its start over the views")
	p.recordGap(i, head+1, at, GapReissued)
	return true, nil
}

// checkDelivered records the sequences a batch of the sales stream
// jumped over (nothing is ever removed from it, so a jump is a loss).
// from is the applied position before the batch; ds are its fresh
// messages in order. The state stream is compacted: its jumps are normal.
func (p *Projector) checkDelivered(i int, from uint64, ds []decoded) {
	prev := from
	for _, d := range ds {
		if i == iSales && d.sp.Seq > prev+1 {
			p.recordGap(i, prev+1, d.sp.Seq-1, GapMissing)
		}
		if d.bad {
			p.recordGap(i, d.sp.Seq, d.sp.Seq, GapUndecodable)
		}
		prev = d.sp.Seq
	}
}

// reissuedFrom is the first sequence of stream i that was re-issued
// below saved: one past its head now when that is below saved, else
// (the message at saved has another id) unknown, so 1.
func (p *Projector) reissuedFrom(ctx context.Context, i int, saved uint64) uint64 {
	s, err := p.js.Stream(ctx, streamNames[i])
	if err != nil {
		return 1
	}
	info, err := s.Info(ctx)
	if err != nil || info.State.LastSeq >= saved {
		return 1
	}
	return info.State.LastSeq + 1
}

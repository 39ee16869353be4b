package node

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/bus"
)

// stallAfter is how long the projector may apply nothing while the
// streams hold messages it has not applied before /readyz calls it
// stalled.
const stallAfter = 30 * time.Second

// lagMonitor samples the streams' heads and the projector's applied
// position, and says when the node is not fit to serve: the bus cannot
// be asked, the projector stalled, or the views lag the streams by more
// than one cycle. "Behind by more than one cycle": the applied position
// does not cover the heads the streams had one poll interval ago.
type lagMonitor struct {
	p     interface{ Applied() readmodel.Position }
	js    jetstream.JetStream
	cycle time.Duration
	now   func() time.Time

	mu           sync.Mutex
	samples      []headSample // oldest first, spanning a little over one cycle
	busErr       error
	applied      readmodel.Position
	lastProgress time.Time
}

type headSample struct {
	at    time.Time
	heads readmodel.Position
}

func newLagMonitor(p interface{ Applied() readmodel.Position }, js jetstream.JetStream, cycle time.Duration) *lagMonitor {
	return &lagMonitor{p: p, js: js, cycle: cycle, now: time.Now, lastProgress: time.Now()}
}

// run samples every half second until ctx ends.
func (m *lagMonitor) run(ctx context.Context) {
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		m.sample(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (m *lagMonitor) sample(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	heads, err := bus.Heads(cctx, m.js)
	cancel()
	m.record(m.now(), heads, m.p.Applied(), err)
}

// record notes one sample: the streams' heads (or why they could not be
// read) and the applied position at now.
func (m *lagMonitor) record(now time.Time, heads, applied readmodel.Position, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if applied != m.applied {
		m.applied, m.lastProgress = applied, now
	}
	m.busErr = err
	if err != nil {
		return
	}
	m.samples = append(m.samples, headSample{at: now, heads: heads})
	// Keep the newest sample at least one cycle old, and everything after.
	drop := 0
	for drop+1 < len(m.samples) && now.Sub(m.samples[drop+1].at) >= m.cycle {
		drop++
	}
	m.samples = m.samples[drop:]
}

// reason is the lag monitor's readiness check once the node was ready:
// why the views are not fit to serve, "" when they are.
func (m *lagMonitor) reason() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	if m.busErr != nil {
		return "bus unreachable: " + m.busErr.Error()
	}
	if len(m.samples) == 0 {
		return ""
	}
	latest := m.samples[len(m.samples)-1].heads
	if !m.applied.Covers(latest) && now.Sub(m.lastProgress) > stallAfter {
		return fmt.Sprintf("projector stalled: nothing applied for %s while the streams hold more (applied state %d of %d, sales %d of %d)",
			now.Sub(m.lastProgress).Round(time.Second), m.applied.State, latest.State, m.applied.Sales, latest.Sales)
	}
	if old := m.samples[0]; now.Sub(old.at) >= m.cycle && !m.applied.Covers(old.heads) {
		return fmt.Sprintf("behind the streams by more than one cycle (%s): applied state %d, sales %d; the streams held state %d, sales %d at %s",
			m.cycle, m.applied.State, m.applied.Sales, old.heads.State, old.heads.Sales, old.at.UTC().Format(time.RFC3339))
	}
	return ""
}

// progress says how far the views have caught up with the streams.
func (m *lagMonitor) progress() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.busErr != nil {
		return "bus unreachable: " + m.busErr.Error()
	}
	var h readmodel.Position
	if len(m.samples) > 0 {
		h = m.samples[len(m.samples)-1].heads
	}
	return fmt.Sprintf("applied state %d of %d, sales %d of %d", m.applied.State, h.State, m.applied.Sales, h.Sales)
}

// position returns the projector's applied position now and the
// streams' heads at the latest sample; ok is false when the heads are
// unknown (no sample yet, or the bus could not be asked at the last one).
// The position is read, not sampled: a status read right after an apply
// shows it.
func (m *lagMonitor) position() (applied, heads readmodel.Position, ok bool) {
	applied = m.p.Applied()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.busErr != nil || len(m.samples) == 0 {
		return applied, heads, false
	}
	return applied, m.samples[len(m.samples)-1].heads, true
}

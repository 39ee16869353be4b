package node

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/marketd/marketd/readmodel"
)

// TestReadinessSaysWhy drives the lag monitor's samples by hand.
func TestReadinessSaysWhy(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	const cycle = time.Minute
	pos := func(st, sa uint64) readmodel.Position { return readmodel.Position{State: st, Sales: sa} }
	type sample struct {
		at             time.Duration
		heads, applied readmodel.Position
		err            error
	}
	tests := []struct {
		name    string
		samples []sample
		now     time.Duration
		want    string
	}{
		{"caught up", []sample{{0, pos(10, 5), pos(10, 5), nil}, {2 * cycle, pos(20, 6), pos(20, 6), nil}}, 2 * cycle, ""},
		{"behind by less than a cycle", []sample{{0, pos(10, 5), pos(10, 5), nil}, {cycle / 2, pos(30, 9), pos(12, 5), nil}}, cycle / 2, ""},
		{"behind by more than a cycle", []sample{{0, pos(10, 5), pos(8, 5), nil}, {cycle / 2, pos(30, 9), pos(9, 5), nil}, {cycle + time.Second, pos(40, 9), pos(9, 6), nil}},
			cycle + time.Second, "behind the streams by more than one cycle"},
		{"new messages within the cycle are not lag", []sample{{0, pos(10, 5), pos(10, 5), nil}, {cycle, pos(30, 9), pos(12, 6), nil}}, cycle, ""},
		{"stalled", []sample{{0, pos(10, 5), pos(9, 5), nil}, {40 * time.Second, pos(10, 5), pos(9, 5), nil}}, 40 * time.Second, "projector stalled"},
		{"bus unreachable", []sample{{0, pos(10, 5), pos(10, 5), nil}, {time.Second, readmodel.Position{}, pos(10, 5), assert.AnError}}, time.Second, "bus unreachable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := t0
			m := &lagMonitor{cycle: cycle, now: func() time.Time { return now }, lastProgress: t0}
			for _, s := range tt.samples {
				now = t0.Add(s.at)
				m.record(now, s.heads, s.applied, s.err)
			}
			now = t0.Add(tt.now)
			got := m.reason()
			if tt.want == "" {
				assert.Empty(t, got)
			} else {
				assert.Contains(t, got, tt.want)
			}
		})
	}
}

// TestLagPosition: what GET /v1/status shows of the lag monitor, the
// applied position and the heads at the latest sample, unknown heads when
// the bus could not be asked.
func TestLagPosition(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	pos := func(st, sa uint64) readmodel.Position { return readmodel.Position{State: st, Sales: sa} }
	type sample struct {
		heads, applied readmodel.Position
		err            error
	}
	tests := []struct {
		name        string
		samples     []sample
		applied     readmodel.Position
		heads       readmodel.Position
		ok          bool
		behindState uint64
		behindSales uint64
	}{
		{name: "no sample yet", applied: pos(0, 0)},
		{name: "caught up", samples: []sample{{pos(10, 5), pos(10, 5), nil}}, applied: pos(10, 5), heads: pos(10, 5), ok: true},
		{name: "behind: the latest heads count", samples: []sample{{pos(10, 5), pos(8, 5), nil}, {pos(30, 9), pos(12, 6), nil}},
			applied: pos(12, 6), heads: pos(30, 9), ok: true, behindState: 18, behindSales: 3},
		{name: "bus unreachable: heads unknown", samples: []sample{{pos(10, 5), pos(10, 5), nil}, {readmodel.Position{}, pos(11, 5), assert.AnError}},
			applied: pos(11, 5)},
		{name: "applied past the sampled heads is not behind", samples: []sample{{pos(10, 5), pos(12, 6), nil}},
			applied: pos(12, 6), heads: pos(10, 5), ok: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &lagMonitor{p: appliedAt(tt.applied), cycle: time.Minute, now: func() time.Time { return t0 }, lastProgress: t0}
			for i, s := range tt.samples {
				m.record(t0.Add(time.Duration(i)*time.Second), s.heads, s.applied, s.err)
			}
			applied, heads, ok := m.position()
			assert.Equal(t, tt.applied, applied)
			assert.Equal(t, tt.ok, ok)
			if !ok {
				return
			}
			assert.Equal(t, tt.heads, heads)
			assert.Equal(t, tt.behindState, behind(heads.State, applied.State))
			assert.Equal(t, tt.behindSales, behind(heads.Sales, applied.Sales))
		})
	}
}

// appliedAt is a projector whose applied position is fixed.
type appliedAt readmodel.Position

func (a appliedAt) Applied() readmodel.Position { return readmodel.Position(a) }

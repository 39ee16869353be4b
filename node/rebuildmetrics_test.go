package node

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"

	"github.com/marketd/marketd/readmodel/projector"
)

// TestRebuildGauges: a rebuild's progress shows in /metrics in the unit
// its phase counts (messages while it applies, records while it writes),
// the other unit at 0, an unknown estimate as -1, and no rebuild as all 0.
func TestRebuildGauges(t *testing.T) {
	type want struct {
		messages, messagesSize, records, recordsSize, collections, left float64
	}
	tests := []struct {
		name string
		in   projector.Progress
		want want
	}{
		{"applying in memory", projector.Progress{Phase: projector.PhaseApplyMemory, Done: 300, Total: 1000, Collections: 42, Left: 7 * time.Second},
			want{300, 1000, 0, 0, 42, 7}},
		{"applying in batches, rate unknown", projector.Progress{Phase: projector.PhaseApply, Total: 1000, Left: -1},
			want{0, 1000, 0, 0, 0, -1}},
		{"writing", projector.Progress{Phase: projector.PhaseWrite, Done: 50, Total: 80, Collections: 99, Left: 1500 * time.Millisecond},
			want{0, 0, 50, 80, 99, 1.5}},
		{"no rebuild", projector.Progress{}, want{}},
	}
	g := newRebuildGauges()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g.set(tc.in)
			got := want{
				testutil.ToFloat64(g.done.WithLabelValues(unitMessages)), testutil.ToFloat64(g.size.WithLabelValues(unitMessages)),
				testutil.ToFloat64(g.done.WithLabelValues(unitRecords)), testutil.ToFloat64(g.size.WithLabelValues(unitRecords)),
				testutil.ToFloat64(g.collections), testutil.ToFloat64(g.left),
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

package store

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCompactDue(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	const u = 100 << 20 // baseline 100 u
	tests := []struct {
		name           string
		now, lastBusy  time.Time
		vlog, baseline int64
		want           bool
	}{
		{name: "grown 20 %, idle 30 s", now: t0.Add(30 * time.Second), lastBusy: t0, vlog: 120 * u, baseline: 100 * u, want: true},
		{name: "a large commit 29 s ago: a cycle may still be applying", now: t0.Add(29 * time.Second), lastBusy: t0, vlog: 200 * u, baseline: 100 * u},
		{name: "grown 19 %", now: t0.Add(time.Hour), lastBusy: t0, vlog: 119 * u, baseline: 100 * u},
		{name: "grown 30 % but less than a value-log file", now: t0.Add(time.Hour), lastBusy: t0, vlog: 130 << 20, baseline: 100 << 20},
		{name: "shrunk", now: t0.Add(time.Hour), lastBusy: t0, vlog: 50 * u, baseline: 100 * u},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, compactDue(tt.now, tt.lastBusy, tt.vlog, tt.baseline))
		})
	}
}

// TestCompactReclaimsSupersededViews: after views are rewritten many
// times, Compact leaves the value log not much larger than the live views,
// and the live views read back whole.
func TestCompactReclaimsSupersededViews(t *testing.T) {
	ctx := context.Background()
	s := mustOpenSmallLog(t)
	vlogBytes := s.valueLogOnDisk
	body := rewriteViews(t, s, 20)
	before := vlogBytes()
	rewrote, err := s.Compact(nil, 1)
	require.NoError(t, err)
	assert.Positive(t, rewrote)
	assert.Equal(t, int64(1), s.Sizes().Compactions)
	// 20 versions of 1,000 views of 1 KiB: about 1 MiB of them live, plus
	// the open file (mapped at twice its 1 MiB) and files under 30 %
	// garbage. (A store this small keeps one level below level 0, so the
	// periodic GC would find the same: the merge matters in a store with
	// more levels, measured in compact.go's comment.)
	assert.Less(t, vlogBytes(), before/4, "of %d bytes of value log, the superseded views' were reclaimed", before)
	for _, id := range []string{"c0", "c500", "c999"} {
		v, err := s.Collection(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, body, v.Detail, "live view %s survives", id)
	}
}

package store

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel/render"
)

func TestFloorHistoryRecord(t *testing.T) {
	at := time.Date(2026, 11, 22, 10, 5, 0, 0, time.UTC)
	steady, moving := &render.FloorHistory{}, &render.FloorHistory{}
	for i := 0; i < render.FloorHoursKept; i++ {
		steady.Observe(at.Add(time.Duration(i)*time.Hour), "1250000000000000000")
		moving.Observe(at.Add(time.Duration(i)*time.Hour), "1250000000000000000")
		moving.Observe(at.Add(time.Duration(i)*time.Hour+time.Minute), "1300000000000000000")
	}
	tests := []struct {
		name string
		h    *render.FloorHistory
		max  int // bytes the record may take
	}{
		{name: "empty", h: &render.FloorHistory{}, max: 12},
		{name: "a week of a steady floor: about 3 bytes an interval", h: steady, max: 8 + 20 + 3*(render.FloorHoursKept+8) + 8},
		{name: "a week of a floor that moves every hour", h: moving, max: 8 + 40 + 6*(render.FloorHoursKept+8) + 8},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := encodeFloorHistory(7, tc.h)
			assert.LessOrEqual(t, len(b), tc.max)
			got, ver, err := decodeFloorHistory(b)
			require.NoError(t, err)
			assert.Equal(t, uint64(7), ver)
			assert.Equal(t, len(tc.h.Hours), len(got.Hours))
			if len(tc.h.Hours) > 0 {
				assert.Equal(t, tc.h.Hours, got.Hours)
				assert.Equal(t, tc.h.Days, got.Days)
			}
			for cut := 8; cut < len(b); cut++ {
				_, _, err := decodeFloorHistory(b[:cut])
				assert.Error(t, err, "cut at %d", cut)
			}
		})
	}
}

// TestFloorHistoryServed: what a transaction writes is read back for
// serving, and a commit of a new version replaces the cached one.
func TestFloorHistoryServed(t *testing.T) {
	ctx := context.Background()
	s := mustOpen(t)
	v, err := s.FloorHistory(ctx, "c1")
	require.NoError(t, err)
	assert.Equal(t, render.FloorHistoryView{}, v, "nothing observed yet")

	h := &render.FloorHistory{}
	h.Observe(time.Unix(1_800_000_000, 0), "5")
	require.NoError(t, s.Update(ctx, func(tx *Tx) error { tx.PutFloorHistory("c1", 3, h); return nil }))
	v, err = s.FloorHistory(ctx, "c1")
	require.NoError(t, err)
	assert.Equal(t, uint64(3), v.Version)
	assert.Equal(t, h.Hours, v.History.Hours)

	h.Observe(time.Unix(1_800_000_060, 0), "4")
	require.NoError(t, s.Update(ctx, func(tx *Tx) error {
		in, err := tx.FloorHistory("c1")
		require.NoError(t, err)
		assert.Equal(t, "5", in.Hours[0].Low, "the transaction reads the stored history")
		tx.PutFloorHistory("c1", 4, h)
		return nil
	}))
	v, err = s.FloorHistory(ctx, "c1")
	require.NoError(t, err)
	assert.Equal(t, uint64(4), v.Version, "the cached history is replaced at the commit")
	assert.Equal(t, "4", v.History.Hours[0].Low)
}

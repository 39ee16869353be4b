package render

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHistoryChanges(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	t0 := time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC)
	var h History
	h = h.Record(NewSample(t0, f(2), f(10), f(100)))
	assert.Equal(t, Changes{}, h.ChangesOf(), "one sample: every side before it unknown")

	h = h.Record(NewSample(t0.Add(Day), f(3), f(0), nil))
	c := h.ChangesOf()
	require.NotNil(t, c.Floor24h)
	assert.InDelta(t, 0.5, *c.Floor24h, 1e-9)
	assert.InDelta(t, -1.0, *c.Volume24h, 1e-9)
	assert.Nil(t, c.Volume7d, "unknown now: null")
	assert.Nil(t, c.Floor7d, "nothing a week before")

	h = h.Record(NewSample(t0.Add(2*Day), f(3), f(4), f(1)))
	assert.Nil(t, h.ChangesOf().Volume24h, "then zero: null, not infinite")
}

// TestHistoryIsBounded: a sample every two minutes for three weeks keeps
// a small record that still answers both look-backs.
func TestHistoryIsBounded(t *testing.T) {
	t0 := time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC)
	var h History
	most := 0
	for i := 0; i < 3*7*24*30; i++ {
		v := float64(i)
		h = h.Record(NewSample(t0.Add(time.Duration(i)*2*time.Minute), &v, &v, &v))
		most = max(most, len(h))
	}
	assert.LessOrEqual(t, most, 45, "bounded")
	assert.LessOrEqual(t, len(h.Encode()), 45*32)
	c := h.ChangesOf()
	require.NotNil(t, c.Floor24h)
	require.NotNil(t, c.Floor7d)
	last := float64(3*7*24*30 - 1)
	dayAgo := last - 24*30
	weekAgo := last - 7*24*30
	assert.InDelta(t, last/dayAgo-1, *c.Floor24h, last/dayAgo*0.01, "within the hour's resolution")
	assert.InDelta(t, last/weekAgo-1, *c.Floor7d, last/weekAgo*0.05, "within 12 hours' resolution")
	assert.Equal(t, h, DecodeHistory(h.Encode()))
	unknown := History{NewSample(time.Unix(0, 0), nil, nil, nil)}
	assert.True(t, math.IsNaN(DecodeHistory(unknown.Encode())[0].Vol7d), "unknown survives the record")
	t.Logf("at most %d samples, %d bytes", most, len(h.Encode()))
}

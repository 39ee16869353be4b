package pace

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// fakeGate is a Gate of 2 ms work, 1 ms pause and 20 ms of read activity
// on a clock the test sets; it records the sleeps Yield asks for.
func fakeGate(now *time.Duration, slept *[]time.Duration) *Gate {
	g := New(2*time.Millisecond, time.Millisecond, 20*time.Millisecond)
	g.since = func() int64 { return int64(*now) }
	g.sleep = func(d time.Duration) { *slept = append(*slept, d); *now += d }
	return g
}

func TestYield(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name     string
		requests []time.Duration // clock times of reads, each before the Yield at the same index
		yields   []time.Duration // clock times Yield is called at
		want     []time.Duration // the sleeps asked for
	}{
		{name: "no reads: never sleeps, in a pause or not",
			yields: []time.Duration{0, 2*ms + 100*time.Microsecond, 5 * ms, 8*ms + 900*time.Microsecond}},
		{name: "reads arriving, in the work phase: no sleep",
			requests: []time.Duration{0, 3 * ms}, yields: []time.Duration{ms, 4 * ms}},
		{name: "reads arriving, in the pause: sleeps to its end",
			requests: []time.Duration{0}, yields: []time.Duration{2*ms + 300*time.Microsecond},
			want: []time.Duration{700 * time.Microsecond}},
		{name: "a later period's pause: sleeps to that period's end",
			requests: []time.Duration{30 * ms}, yields: []time.Duration{32*ms + 100*time.Microsecond},
			want: []time.Duration{900 * time.Microsecond}},
		{name: "a read still counts 20 ms after it was seen",
			requests: []time.Duration{0}, yields: []time.Duration{2*ms + 500*time.Microsecond, 20*ms + 500*time.Microsecond},
			want: []time.Duration{500 * time.Microsecond, 500 * time.Microsecond}},
		{name: "no read for more than 20 ms after the last seen: no sleep",
			requests: []time.Duration{0}, yields: []time.Duration{2*ms + 500*time.Microsecond, 26*ms + 500*time.Microsecond},
			want: []time.Duration{500 * time.Microsecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var now time.Duration
			var slept []time.Duration
			g := fakeGate(&now, &slept)
			for i, at := range tt.yields {
				if i < len(tt.requests) {
					now = tt.requests[i]
					g.Request()
				}
				now = at
				g.Yield()
			}
			assert.Equal(t, tt.want, slept)
			st := g.Stats()
			assert.Equal(t, int64(len(tt.want)), st.Pauses)
			var sum time.Duration
			for _, d := range tt.want {
				sum += d
			}
			assert.Equal(t, sum, st.Paused)
			assert.Equal(t, uint64(len(tt.requests)), st.Requests)
		})
	}
}

// TestNilGate: a process that serves no reads passes a nil Gate, whose
// Yield only lets other goroutines run and whose Request does nothing.
func TestNilGate(t *testing.T) {
	var g *Gate
	g.Request()
	g.Yield()
	assert.Equal(t, Stats{}, g.Stats())
}

// TestYieldSleepsOnTheRealClock: with reads arriving, Yield called in a
// loop for several periods sleeps in some of their pauses (the clock and
// time.Sleep are the real ones).
func TestYieldSleepsOnTheRealClock(t *testing.T) {
	g := New(time.Millisecond, time.Millisecond, time.Second)
	g.Request()
	for start := time.Now(); time.Since(start) < 20*time.Millisecond; {
		g.Yield()
	}
	st := g.Stats()
	assert.Positive(t, st.Pauses)
	assert.Positive(t, st.Paused)
}

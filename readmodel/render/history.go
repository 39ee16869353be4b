package render

import (
	"encoding/binary"
	"math"
	"time"
)

// Change ratios, beyond SPEC: a collection detail's stats.change compares
// its floor and volume windows now with the same figures 24 hours and 7
// days ago: (now / then) − 1, so 0.25 is a quarter up. A side that is
// unknown (no figure then or now, or a figure then of zero) makes the
// ratio null.
//
// The past figures come from History, a small record per collection of
// what its detail showed, sampled whenever the projector renders the
// detail. It is bounded by thinning: within the last HistoryFine it keeps
// the latest sample of each hour, before that the latest of each 12
// hours, and nothing a 7-day look-back can no longer reach. So a 24-hour
// look-back is exact to the hour, a 7-day one to 12 hours, and a record
// holds at most about 40 samples (32 bytes each). The record is built
// from the messages a node applies: a node rebuilt from the compacted
// state stream starts with none, and answers null until it has a day of
// its own.

// Look-backs and the record's resolution.
const (
	Day         = 24 * time.Hour
	Week        = 7 * Day
	HistoryFine = Day + time.Hour // samples younger than this are kept per hour
	fineBucket  = time.Hour
	coarseWidth = 12 * time.Hour // the resolution of samples older than HistoryFine
)

// Sample is what a detail showed at one time; NaN is unknown (null).
type Sample struct {
	At     int64 // unix seconds
	Floor  float64
	Vol24h float64
	Vol7d  float64
}

// NewSample is a sample at t of the given figures (nil: unknown).
func NewSample(t time.Time, floor, vol24h, vol7d *float64) Sample {
	v := func(p *float64) float64 {
		if p == nil {
			return math.NaN()
		}
		return *p
	}
	return Sample{At: t.Unix(), Floor: v(floor), Vol24h: v(vol24h), Vol7d: v(vol7d)}
}

// History is a collection's samples, oldest first.
type History []Sample

const sampleLen = 32

// DecodeHistory reads what History.Encode wrote; a damaged record is an
// empty history.
func DecodeHistory(b []byte) History {
	if len(b)%sampleLen != 0 {
		return nil
	}
	h := make(History, 0, len(b)/sampleLen)
	for ; len(b) >= sampleLen; b = b[sampleLen:] {
		f := func(i int) float64 { return math.Float64frombits(binary.LittleEndian.Uint64(b[i:])) }
		h = append(h, Sample{At: int64(binary.LittleEndian.Uint64(b)), Floor: f(8), Vol24h: f(16), Vol7d: f(24)})
	}
	return h
}

// Encode writes h in 32 bytes per sample.
func (h History) Encode() []byte {
	b := make([]byte, 0, len(h)*sampleLen)
	for _, s := range h {
		b = binary.LittleEndian.AppendUint64(b, uint64(s.At))
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(s.Floor))
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(s.Vol24h))
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(s.Vol7d))
	}
	return b
}

// Record returns h with s added (a sample no later than the last replaces
// from where it belongs: applying messages is in time order, a replay
// restarts) and thinned as of s's time.
func (h History) Record(s Sample) History {
	i := len(h)
	for i > 0 && h[i-1].At >= s.At {
		i--
	}
	out := append(h[:i:i], s)
	return out.thin(s.At)
}

// bucketOf is the thinning bucket of a sample at t (unix seconds) as of now.
func bucketOf(t, now int64) (width, id int64) {
	w := int64(coarseWidth / time.Second)
	if now-t < int64(HistoryFine/time.Second) {
		w = int64(fineBucket / time.Second)
	}
	return w, t / w
}

func (h History) thin(now int64) History {
	cut := now - int64(Week/time.Second) - int64(coarseWidth/time.Second)
	out := h[:0]
	for i, s := range h {
		if i+1 < len(h) {
			next := h[i+1]
			if next.At <= cut {
				continue // a later sample is in force at every look-back
			}
			w, id := bucketOf(s.At, now)
			if nw, nid := bucketOf(next.At, now); nw == w && nid == id {
				continue // the bucket's latest sample stands for it
			}
		}
		out = append(out, s)
	}
	return out
}

// at returns the sample in force at t (the latest at or before it).
func (h History) at(t int64) (Sample, bool) {
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].At <= t {
			return h[i], true
		}
	}
	return Sample{}, false
}

// Changes are a detail's change ratios; nil is null.
type Changes struct {
	Volume24h, Volume7d, Floor24h, Floor7d *float64
}

// ChangesOf compares h's latest sample with those in force a day and a
// week before it.
func (h History) ChangesOf() Changes {
	var c Changes
	if len(h) == 0 {
		return c
	}
	cur := h[len(h)-1]
	ratio := func(now, then float64) *float64 {
		if math.IsNaN(now) || math.IsNaN(then) || then <= 0 || math.IsInf(now, 0) || math.IsInf(then, 0) {
			return nil
		}
		r := now/then - 1
		r = math.Round(r*1e6) / 1e6
		return &r
	}
	if d, ok := h.at(cur.At - int64(Day/time.Second)); ok {
		c.Volume24h, c.Floor24h = ratio(cur.Vol24h, d.Vol24h), ratio(cur.Floor, d.Floor)
	}
	if w, ok := h.at(cur.At - int64(Week/time.Second)); ok {
		c.Volume7d, c.Floor7d = ratio(cur.Vol7d, w.Vol7d), ratio(cur.Floor, w.Floor)
	}
	return c
}

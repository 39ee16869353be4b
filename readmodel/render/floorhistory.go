package render

import (
	"encoding/json"
	"time"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/wire"
)

// Floor history: a collection's seller-ask floor (the askFloor of its
// floor view) as the projector observed it, each time it rendered the
// floor, summarised per interval as open, high, low and close. It is the
// projector's own observation, never a source's figure; an interval in
// which the floor was never rendered with a price has no bucket, and is
// served as nulls.

// FloorInterval is a floor history's bucket width.
type FloorInterval string

// The intervals kept, and how long each is kept, counted back from the
// latest observation.
const (
	FloorHour FloorInterval = "1h"
	FloorDay  FloorInterval = "1d"

	FloorHoursKept = 7 * 24 // one week of hours
	FloorDaysKept  = 90     // about three months of days
)

// Width is the interval's length; 0 for an unknown interval.
func (i FloorInterval) Width() time.Duration {
	switch i {
	case FloorHour:
		return time.Hour
	case FloorDay:
		return 24 * time.Hour
	}
	return 0
}

// Kept is how many buckets of the interval a history keeps.
func (i FloorInterval) Kept() int {
	if i == FloorDay {
		return FloorDaysKept
	}
	return FloorHoursKept
}

// FloorBucket is one interval's open, high, low and close: raw base units
// of the collection's currency. Start is the interval's start (unix
// seconds, UTC).
type FloorBucket struct {
	Start                  int64
	Open, High, Low, Close string
}

// FloorHistory is a collection's kept buckets, ascending by Start.
type FloorHistory struct {
	Hours []FloorBucket
	Days  []FloorBucket
}

// FloorHistoryView is a collection's floor history as read for serving.
type FloorHistoryView struct {
	Version uint64        // 0 with a nil History: nothing observed yet
	History *FloorHistory // never modified once read
}

// Observe records that the floor was raw at at, and reports whether the
// history changed (an observation that moves no bucket's high, low or
// close changes nothing, so an unchanged floor is not rewritten). An
// observation older than a kept bucket of its interval updates that
// bucket's high and low only: its close is the latest observation. raw
// must be a canonical raw price (a Price's Raw); "" is ignored.
func (h *FloorHistory) Observe(at time.Time, raw string) bool {
	if raw == "" || at.IsZero() {
		return false
	}
	a := observe(&h.Hours, at.Unix(), int64(time.Hour/time.Second), FloorHoursKept, raw)
	b := observe(&h.Days, at.Unix(), int64(24*time.Hour/time.Second), FloorDaysKept, raw)
	return a || b
}

func observe(bs *[]FloorBucket, at, width int64, kept int, raw string) bool {
	start := at - floorMod(at, width)
	s := *bs
	n := len(s)
	switch {
	case n == 0 || s[n-1].Start < start:
		s = append(s, FloorBucket{Start: start, Open: raw, High: raw, Low: raw, Close: raw})
		// Keep the buckets of the last kept intervals, counted back from
		// this newest one.
		cut := 0
		for cut < len(s) && s[cut].Start <= start-int64(kept)*width {
			cut++
		}
		*bs = append(s[:0], s[cut:]...)
		return true
	case s[n-1].Start == start:
		b := &s[n-1]
		was := *b
		if rawLess(b.High, raw) {
			b.High = raw
		}
		if rawLess(raw, b.Low) {
			b.Low = raw
		}
		b.Close = raw
		return *b != was
	}
	// Older than the newest bucket.
	if start <= s[n-1].Start-int64(kept)*width {
		return false
	}
	i := 0
	for i < n && s[i].Start < start {
		i++
	}
	if i < n && s[i].Start == start {
		b := &s[i]
		was := *b
		if rawLess(b.High, raw) {
			b.High = raw
		}
		if rawLess(raw, b.Low) {
			b.Low = raw
		}
		return *b != was
	}
	s = append(s, FloorBucket{})
	copy(s[i+1:], s[i:])
	s[i] = FloorBucket{Start: start, Open: raw, High: raw, Low: raw, Close: raw}
	*bs = s
	return true
}

// rawLess compares two canonical raw prices (no leading zeros).
func rawLess(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

// FloorHistoryJSON renders the FloorHistoryResponse (the data object) of
// collection cid on chain c: one point per interval of width i from the
// interval holding from to the one holding to, each with its bucket's
// prices (their usd null: past exchange rates are not kept) or nulls.
// The caller bounds the range (FloorInterval.Kept points at most).
func FloorHistoryJSON(cid string, c readmodel.Chain, h *FloorHistory, i FloorInterval, from, to time.Time) []byte {
	width := int64(i.Width() / time.Second)
	var kept []FloorBucket
	if h != nil {
		kept = h.Hours
		if i == FloorDay {
			kept = h.Days
		}
	}
	first, last := from.Unix()-floorMod(from.Unix(), width), to.Unix()-floorMod(to.Unix(), width)
	resp := wire.FloorHistoryResponse{
		CollectionID: cid,
		Interval:     string(i),
		From:         time.Unix(first, 0).UTC().Format(time.RFC3339),
		To:           time.Unix(last, 0).UTC().Format(time.RFC3339),
		Points:       make([]wire.FloorPoint, 0, (last-first)/width+1),
	}
	j := 0
	for start := first; start <= last; start += width {
		p := wire.FloorPoint{Start: time.Unix(start, 0).UTC().Format(time.RFC3339)}
		for j < len(kept) && kept[j].Start < start {
			j++
		}
		if j < len(kept) && kept[j].Start == start {
			b := kept[j]
			p.Open, p.High, p.Low, p.Close = pricePtr(c, b.Open, nil), pricePtr(c, b.High, nil), pricePtr(c, b.Low, nil), pricePtr(c, b.Close, nil)
		}
		resp.Points = append(resp.Points, p)
	}
	b, err := json.Marshal(resp)
	if err != nil {
		return []byte("null")
	}
	return b
}

// floorMod is v mod m for a positive m, never negative.
func floorMod(v, m int64) int64 {
	r := v % m
	if r < 0 {
		r += m
	}
	return r
}

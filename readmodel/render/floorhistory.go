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

// FloorHistoryView is the floor history's view module: one record per
// collection under h/f/<cid>. Like the change feed it is node-local
// history, outside `marketd digest`: it is what this node observed, and a
// node rebuilt from the compacted state stream observed only each
// subject's last message. A views snapshot carries it to a joining node.
// It is served by a handler of its own (httpapi/floorhistory.go: its
// interval and range parameters).
var FloorHistoryView = RegisterView(ViewSpec[FloorHistory]{
	Name:   "floor history",
	Family: "h/f/",
	Parts:  PartFloor,
	Derive: deriveFloorHistory,
	Encode: encodeFloorHistory,
	Decode: decodeFloorHistory,
	Size: func(h *FloorHistory) int64 {
		return int64(len(h.Hours)+len(h.Days)) * 96
	},
})

// deriveFloorHistory records in h that the ask floor was r.AskFloorRaw
// when the floor was rendered, at r.At: the time the messages behind the
// render were observed, so a node that applies the same messages keeps
// the same history. A render with no ask floor observes nothing; one that
// changes no bucket writes nothing.
func deriveFloorHistory(r *Rendered, h *FloorHistory) (*FloorHistory, bool) {
	if r.AskFloorRaw == "" {
		return h, false
	}
	if h == nil {
		h = &FloorHistory{}
	}
	return h, h.Observe(r.At, r.AskFloorRaw)
}

// The record: the distinct raw prices it uses (uvarint count, then each
// as a string), then the hours and then the days, each as a uvarint count
// followed by the buckets: the first one's start in widths since the
// epoch (varint), each next one's as a uvarint gap in widths, then a flag
// and the prices as indexes into the dictionary: one when open, high, low
// and close are equal (flag 0), else four. A floor repeats itself across
// buckets, so a week of hours and three months of days of a steady floor
// take about 3 bytes a bucket.
func encodeFloorHistory(h *FloorHistory) []byte {
	e := &RecordWriter{B: make([]byte, 0, 248)}
	dict := map[string]uint64{}
	var order []string
	index := func(raw string) {
		if _, ok := dict[raw]; !ok {
			dict[raw] = uint64(len(order))
			order = append(order, raw)
		}
	}
	for _, bs := range [][]FloorBucket{h.Hours, h.Days} {
		for _, b := range bs {
			index(b.Open)
			index(b.High)
			index(b.Low)
			index(b.Close)
		}
	}
	e.Uint(uint64(len(order)))
	for _, raw := range order {
		e.Str(raw)
	}
	for i, bs := range [][]FloorBucket{h.Hours, h.Days} {
		width := int64(3600)
		if i == 1 {
			width = 86400
		}
		e.Uint(uint64(len(bs)))
		for j, b := range bs {
			if j == 0 {
				e.Int(b.Start / width)
			} else {
				e.Uint(uint64((b.Start - bs[j-1].Start) / width))
			}
			if b.Open == b.High && b.Open == b.Low && b.Open == b.Close {
				e.Flag(false)
				e.Uint(dict[b.Open])
				continue
			}
			e.Flag(true)
			e.Uint(dict[b.Open])
			e.Uint(dict[b.High])
			e.Uint(dict[b.Low])
			e.Uint(dict[b.Close])
		}
	}
	return e.B
}

func decodeFloorHistory(v []byte) (*FloorHistory, error) {
	d := NewRecordReader(v)
	n := d.Uint()
	if d.Bad() || n > uint64(d.Left()) {
		return nil, ErrCorruptRecord
	}
	dict := make([]string, n)
	for i := range dict {
		dict[i] = d.Str()
	}
	price := func() string {
		i := d.Uint()
		if i >= uint64(len(dict)) {
			d.Fail()
			return ""
		}
		return dict[i]
	}
	h := &FloorHistory{}
	for i, bs := range []*[]FloorBucket{&h.Hours, &h.Days} {
		width := int64(3600)
		if i == 1 {
			width = 86400
		}
		n := d.Uint()
		if d.Bad() || n > uint64(d.Left()) {
			return nil, ErrCorruptRecord
		}
		out := make([]FloorBucket, 0, n)
		var start int64
		for j := uint64(0); j < n && !d.Bad(); j++ {
			if j == 0 {
				start = d.Int() * width
			} else {
				start += int64(d.Uint()) * width
			}
			b := FloorBucket{Start: start}
			if d.Flag() {
				b.Open, b.High, b.Low, b.Close = price(), price(), price(), price()
			} else {
				b.Open = price()
				b.High, b.Low, b.Close = b.Open, b.Open, b.Open
			}
			out = append(out, b)
		}
		*bs = out
	}
	if err := d.Err(); err != nil {
		return nil, err
	}
	return h, nil
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

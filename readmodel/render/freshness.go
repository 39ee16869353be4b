package render

import (
	"bytes"
	"time"

	"github.com/marketd/marketd/readmodel"
)

// Freshness per value, beyond SPEC's meta.stale, so a client can judge a
// value's age itself: asOf on the floor, the collection detail's stats,
// each listings snapshot and each token is when the sources behind the
// value last succeeded, the oldest of them.
//
// A source's last success moves every cycle it succeeds, while ingest
// publishes nothing else when nothing changed, so it cannot be baked into
// a prepared body. A view records instead, per source behind it, what the
// projector knew when it rendered it (Freshness): a failing source's last
// success (fixed until it recovers, which re-renders the view), or that
// the source was healthy, whose last success is then its poll's latest
// (readmodel.Polled, kept per poll in PollTimes; unknown until the first
// one is applied). The API resolves the two when it answers; the
// body carries `"asOf":null` where the value goes (SpliceAsOf).

// MaxFreshness bounds the sources one value depends on.
const MaxFreshness = 4

// FreshnessEntry is one source behind a value: its poll (an index into
// readmodel.Polls), its last success as known at render (unix ms, 0 when
// never), and Live when it was healthy then.
type FreshnessEntry struct {
	Poll uint8
	At   int64
	Live bool
}

// Freshness lists the sources behind one value.
type Freshness struct {
	N       uint8
	Entries [MaxFreshness]FreshnessEntry
}

// Add records one more source behind the value; the status is the
// source's latest for the collection (nil: none applied yet). Unknown polls
// and entries past MaxFreshness are ignored.
func (f *Freshness) Add(poll string, st *readmodel.PollStatus) {
	i := readmodel.PollIndex(poll)
	if i < 0 || int(f.N) >= MaxFreshness {
		return
	}
	e := FreshnessEntry{Poll: uint8(i), Live: true}
	if st != nil && !st.OK {
		// A healthy source's time is its poll's alone: its status's
		// LastGoodAt is only when the status was last published, which
		// a node replayed from the compacted stream and one that applied
		// every message would record differently.
		e.Live = false
		if !st.LastGoodAt.IsZero() {
			e.At = st.LastGoodAt.UnixMilli()
		}
	}
	f.Entries[f.N] = e
	f.N++
}

// PollTimes holds, per poll (index into readmodel.Polls), when it last
// succeeded (unix ms, 0 when unknown). The zero value knows none.
type PollTimes [16]int64

// Resolve returns the value's asOf in unix ms, 0 when unknown: the oldest
// last success among its sources, a healthy one's its poll's latest
// success. A value with no source is unknown.
func (f *Freshness) Resolve(pt *PollTimes) int64 {
	var out int64
	for i := 0; i < int(f.N); i++ {
		e := f.Entries[i]
		at := e.At
		if e.Live && pt != nil && int(e.Poll) < len(pt) && pt[e.Poll] > at {
			at = pt[e.Poll]
		}
		if at <= 0 {
			return 0
		}
		if out == 0 || at < out {
			out = at
		}
	}
	return out
}

// asOfNull is how a prepared body ends its asOf: the value, then what
// closes the object (and, on a collection detail, the rest of it).
var asOfNull = []byte(`"asOf":null`)

// SpliceAsOf returns where the asOf value sits in body, which ends with
// `"asOf":null` followed by at most maxTail bytes of closing text: body
// is body[:at] + value + body[at+4:]. ok is false when body has no such
// asOf (a view rendered before it existed).
func SpliceAsOf(body []byte, maxTail int) (at int, ok bool) {
	from := len(body) - maxTail - len(asOfNull)
	if from < 0 {
		from = 0
	}
	i := bytes.LastIndex(body[from:], asOfNull)
	if i < 0 {
		return 0, false
	}
	return from + i + len(`"asOf":`), true
}

// AppendAsOf appends asOf (unix ms; 0 is null) as a JSON value.
func AppendAsOf(b []byte, ms int64) []byte {
	if ms <= 0 {
		return append(b, "null"...)
	}
	b = append(b, '"')
	b = time.UnixMilli(ms).UTC().AppendFormat(b, readmodel.TimeFormat)
	return append(b, '"')
}

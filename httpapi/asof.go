package httpapi

import (
	"context"
	"sort"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/render"
)

// asOf, per-value freshness beyond SPEC's meta.stale: the floor, a
// collection detail's stats, a listings snapshot and a token say when the
// sources behind them last succeeded, so a client can judge their age itself.
// A view records which sources those are and what it knew of them when it
// was rendered (render.Freshness); a healthy source's last success moves
// every cycle without the view changing, so it is resolved here, per
// request, against the polls' latest successes (Reader.PollTimes): a few loads
// and a comparison, the time formatted into the response buffer.
// Each response's identity (identity.go) declares the resolved value, so
// its ETag and memo key move with it: a revalidation sees a moved asOf as
// a change.

// pollTimes returns the latest poll successes (Reader.PollTimes).
func (s *Server) pollTimes(ctx context.Context) *render.PollTimes {
	return s.r.PollTimes(ctx)
}

// tokenAsOf resolves a token's asOf: the indexer mirror's token poll,
// and on EVM chains the order book (its native listing). Token views keep
// no per-collection statuses, so both are the polls' latest successes.
func (s *Server) tokenAsOf(ctx context.Context, chain readmodel.Chain) int64 {
	var f render.Freshness
	f.Add(readmodel.PollMirrorTokens, nil)
	if chain.IsEVM() {
		f.Add(string(readmodel.SourceOrderBook), nil)
	}
	return f.Resolve(s.pollTimes(ctx))
}

// appendWithAsOf appends body, whose last `"asOf":null` lies within
// maxTail bytes of its end, with asOf in its place; a body without one
// gets `,"asOf":…` before its closing brace when add is set, else is
// appended as is.
func appendWithAsOf(resp *fasthttp.Response, body []byte, maxTail int, asOf int64, add bool) {
	var buf [40]byte
	if at, ok := render.SpliceAsOf(body, maxTail); ok {
		resp.AppendBody(body[:at])
		resp.AppendBody(render.AppendAsOf(buf[:0], asOf))
		resp.AppendBody(body[at+len("null"):])
		return
	}
	if !add || len(body) == 0 || body[len(body)-1] != '}' {
		resp.AppendBody(body)
		return
	}
	resp.AppendBody(body[:len(body)-1])
	resp.AppendBodyString(`,"asOf":`)
	resp.AppendBody(render.AppendAsOf(buf[:0], asOf))
	resp.AppendBodyString("}")
}

// appendTimedAsOf is appendTimed for a body whose asOf is its last field
// (floor) or is added at its end (add: token).
func (s *Server) appendTimedAsOf(resp *fasthttp.Response, tb render.TimedBody, now time.Time, asOf int64, add bool) {
	if !tb.Timed {
		appendWithAsOf(resp, tb.Head, len(`}`), asOf, add)
		return
	}
	resp.AppendBody(tb.Head)
	s.appendTime(resp, now)
	appendWithAsOf(resp, tb.Tail, len(`}`), asOf, add)
}

// liveCount is how many of a snapshot's listings are live at nowMs:
// those of the window (window, counted by the caller) and those the
// ceiling cut that have not expired since projection.
func liveCount(lv *render.ListingsView, window uint64, nowMs int64) (listed uint64, truncated bool) {
	beyond := lv.Listed - len(lv.Items)
	if beyond < 0 {
		beyond = 0
	}
	gone := sort.Search(len(lv.BeyondExpires), func(i int) bool { return lv.BeyondExpires[i] > nowMs })
	beyond -= gone
	if beyond < 0 {
		beyond = 0
	}
	return window + uint64(beyond), beyond > 0
}

// nextExpiry is the first of expires (sorted, unix milliseconds) after
// nowMs: when liveCount next changes; 0 when none is left.
func nextExpiry(expires []int64, nowMs int64) int64 {
	i := sort.Search(len(expires), func(i int) bool { return expires[i] > nowMs })
	if i == len(expires) {
		return 0
	}
	return expires[i]
}

// appendSnapshot appends a listings page's `,"snapshot":{…}`: the
// snapshot's asOf, how many listings are live and whether the ceiling cut
// any.
func appendSnapshot(resp *fasthttp.Response, asOf int64, listed uint64, truncated bool) {
	var buf [40]byte
	resp.AppendBodyString(`,"snapshot":{"asOf":`)
	resp.AppendBody(render.AppendAsOf(buf[:0], asOf))
	resp.AppendBodyString(`,"listedCount":`)
	resp.AppendBody(strconv.AppendUint(buf[:0], listed, 10))
	if truncated {
		resp.AppendBodyString(`,"truncated":true}`)
	} else {
		resp.AppendBodyString(`,"truncated":false}`)
	}
}

// snapshotWalk is one pass over a listings snapshot at a request's time,
// which the listings page and the sweep quote both start from: its items
// up to the ceiling, how many are live (from start on too) and expired,
// when the clock next changes the answer (an item or one beyond the
// ceiling expires), and what the snapshot object shows (listedCount,
// truncated).
type snapshotWalk struct {
	lv        *render.ListingsView
	items     [][]byte
	nowMs     int64
	liveTotal uint64
	expired   uint64
	fromStart uint64 // live items at index start and after
	until     int64  // unix ns; 0: never
	listed    uint64
	truncated bool
}

// walkSnapshot walks lv at nowMs, counting live items from start on;
// until starts at the caller's own bound (a cursor's expiry, or 0). It is
// AllFailed's 502 (errAllListFeeds) when every source failed and no item
// is live.
func walkSnapshot(lv *render.ListingsView, nowMs int64, start int, until int64) (snapshotWalk, error) {
	w := snapshotWalk{lv: lv, items: lv.Items, nowMs: nowMs, until: until}
	if len(w.items) > readmodel.ListingsCeiling {
		w.items = w.items[:readmodel.ListingsCeiling]
	}
	for i := range w.items {
		if !w.live(i) {
			w.expired++
			continue
		}
		w.liveTotal++
		if i >= start {
			w.fromStart++
		}
		if i < len(lv.ExpiresAt) && lv.ExpiresAt[i] != 0 {
			w.until = earliest(w.until, lv.ExpiresAt[i]*int64(time.Millisecond))
		}
	}
	if lv.AllFailed && w.liveTotal == 0 {
		return w, errAllListFeeds
	}
	w.listed, w.truncated = liveCount(lv, w.liveTotal, nowMs)
	if next := nextExpiry(lv.BeyondExpires, nowMs); next != 0 {
		w.until = earliest(w.until, next*int64(time.Millisecond)) // listedCount moves then
	}
	return w, nil
}

// live reports whether item i has not expired at the walk's time.
func (w *snapshotWalk) live(i int) bool {
	return i >= len(w.lv.ExpiresAt) || w.lv.ExpiresAt[i] == 0 || w.lv.ExpiresAt[i] > w.nowMs
}

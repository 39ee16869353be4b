package httpapi

import (
	"maps"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/render"
)

// identityCase changes one input of a cached route's response.
type identityCase struct {
	name  string
	route string // the route's pattern
	setup func(h *harness)
	// path is the request target before the change.
	path func(h *harness) string
	// change changes the one input and returns the request target after
	// it ("": the same). A change to what the fake holds bumps the
	// views' version, as a store's commit does; a change of the clock
	// alone does not.
	change func(h *harness) string
	// sameTag marks a change of the clock that leaves the body weakly
	// the same (a next cursor minted a minute later): the ETag stays,
	// the memos still miss.
	sameTag bool
	status  int  // the status after the change; 0: 200
	noPage  bool // a response the page memo never keeps (a feed's first page)
}

// memoMode is the memo a run of an identityCase watches.
type memoMode string

const (
	pageMode     memoMode = "page memo"     // response memo off (the fake cannot say its version)
	responseMode memoMode = "response memo" // page memo off
)

// pageRoutes are the routes whose handlers keep bodies in the page memo.
var pageRoutes = map[string]bool{
	"/v1/collections":              true,
	"/v1/collections/:id/listings": true,
	"/v1/collections/:id/sales":    true,
	"/v1/collections/:id/events":   true,
	"/v1/events":                   true,
	"/v1/collections/:id/sweep":    true,
	"/v1/tokens":                   true,
}

// TestRouteIdentity: each cached route's ETag and memos cover what its
// body depends on, its identity. Equal inputs give one ETag and a memo
// hit; a change of any one input (a view's version, a query value, a
// resolved asOf, a time bound of the clock) gives another ETag (an old one
// revalidates to a 200) and misses every memo that holds the response:
// the page memo (keyed by what the body depends on) and the response memo
// (keyed by the request target and the views' version, bounded by the
// clock's times). A cached route without cases fails it.
func TestRouteIdentity(t *testing.T) {
	mustRegisterCounted(t) // a view module served as it is: its route gets the cases every such route gets
	const (
		detail   = "/v1/collections/" + testID
		bySlug   = "/v1/collections/" + testSlug
		browse   = "/v1/collections?limit=3"
		listings = detail + "/listings?limit=10"
		sales    = detail + "/sales?limit=5"
		events   = detail + "/events?limit=25"
		market   = "/v1/events?limit=25"
		history  = detail + "/floor/history"
		sweep    = detail + "/sweep?count=5"
		token    = "/v1/tokens/ethereum/" + testContract + "/1"
		batch    = "/v1/tokens?ids=ethereum/" + testContract + "/1,ethereum/" + testContract + "/2"
	)
	at := func(p string) func(*harness) string { return func(*harness) string { return p } }
	to := func(p string) func(*harness) string { return func(*harness) string { return p } }
	// commit runs f on the fake and moves the views' version.
	commit := func(f func(r *fakeReader)) func(h *harness) string {
		return func(h *harness) string {
			f(h.r)
			h.r.bump()
			return ""
		}
	}
	clock := func(d time.Duration) func(h *harness) string {
		return func(h *harness) string { h.clock.Add(d); return "" }
	}
	// next is target's next page: target with its nextCursor in place of
	// its own.
	next := func(h *harness, target string) string {
		n, more := pagination(h.t, h.get(target))
		require.True(h.t, more, target)
		if i := strings.Index(target, "&cursor="); i >= 0 {
			target = target[:i]
		}
		return target + "&cursor=" + url.QueryEscape(n)
	}
	ob := readmodel.PollIndex(string(readmodel.SourceOrderBook))
	mirror := readmodel.PollIndex(readmodel.PollMirrorTokens)
	live := freshness(string(readmodel.SourceOrderBook), true, time.Time{})
	// moveAsOf moves the order book's last success: every asOf above
	// resolves anew.
	moveAsOf := commit(func(r *fakeReader) { r.polls[ob] = t0.UnixMilli() })
	// repoint gives testSlug to otherID, which holds testID's views at
	// their versions: only the canonical id differs.
	repoint := commit(func(r *fakeReader) {
		cv := r.collections[testID]
		cv.ID = otherID
		r.collections[otherID] = cv
		r.floors[otherID] = r.floors[testID]
		r.floorHistory[otherID] = r.floorHistory[testID]
		lv := r.listings[testID][r.current[testID]]
		r.listings[otherID] = map[uint64]render.ListingsView{lv.Version: lv}
		r.current[otherID] = lv.Version
		r.sales[otherID] = r.sales[testID]
		r.aliases[testSlug] = otherID
		r.addEvents(otherID, 60)
		for k, v := range maps.Clone(r.views) {
			if name, ok := strings.CutSuffix(k, "|"+testID); ok {
				r.views[name+"|"+otherID] = v
			}
		}
	})
	// observed gives testID a floor history: one hour observed.
	observed := func(h *harness) {
		h.r.floorHistory[testID] = render.ViewValue{Version: 3, Record: &render.FloorHistory{
			Hours: []render.FloorBucket{{Start: t0.Truncate(time.Hour).Unix(), Open: "5", High: "7", Low: "4", Close: "6"}},
		}}
	}
	tok := func(r *fakeReader, n string) render.TokenView { return r.tokens["ethereum|"+testContract+"|"+n] }
	setTok := func(r *fakeReader, n string, tv render.TokenView) { r.tokens["ethereum|"+testContract+"|"+n] = tv }

	cases := []identityCase{
		// GET /v1/collections
		{name: "collections: sort", route: "/v1/collections", path: at(browse), change: to(browse + "&sort=floor")},
		{name: "collections: chain", route: "/v1/collections", path: at(browse), change: to(browse + "&chain=ethereum")},
		{name: "collections: position", route: "/v1/collections", path: at(browse), change: func(h *harness) string { return next(h, browse) }},
		{name: "collections: limit", route: "/v1/collections", path: at(browse), change: to("/v1/collections?limit=4")},
		{name: "collections: view version", route: "/v1/collections", path: at(browse), change: commit(func(r *fakeReader) { r.browseVer++ })},
		{name: "collections: USD quote", route: "/v1/collections", path: at(browse), change: commit(func(r *fakeReader) { r.pageUSD++ })},
		{name: "collections: next cursor's minute", route: "/v1/collections", path: at(browse), change: clock(time.Minute), sameTag: true},

		// GET /v1/collections/{id}
		{name: "detail: canonical id", route: "/v1/collections/:id", path: at(bySlug), change: repoint},
		{name: "detail: view version", route: "/v1/collections/:id", path: at(detail), change: commit(func(r *fakeReader) {
			cv := r.collections[testID]
			cv.Version++
			r.collections[testID] = cv
		})},
		{name: "detail: USD quote", route: "/v1/collections/:id", path: at(detail), change: commit(func(r *fakeReader) {
			cv := r.collections[testID]
			cv.USD++
			r.collections[testID] = cv
		})},
		{name: "detail: asOf", route: "/v1/collections/:id", path: at(detail), change: moveAsOf, setup: func(h *harness) {
			cv := h.r.collections[testID]
			cv.AsOf = live
			h.r.collections[testID] = cv
		}},

		// GET /v1/collections/{id}/floor
		{name: "floor: canonical id", route: "/v1/collections/:id/floor", path: at(bySlug + "/floor"), change: repoint},
		{name: "floor: collection version", route: "/v1/collections/:id/floor", path: at(detail + "/floor"), change: commit(func(r *fakeReader) {
			cv := r.collections[testID]
			cv.Version++
			r.collections[testID] = cv
		})},
		{name: "floor: floor version", route: "/v1/collections/:id/floor", path: at(detail + "/floor"), change: commit(func(r *fakeReader) {
			fv := r.floors[testID]
			fv.Version++
			r.floors[testID] = fv
		})},
		{name: "floor: USD quote", route: "/v1/collections/:id/floor", path: at(detail + "/floor"), change: commit(func(r *fakeReader) {
			fv := r.floors[testID]
			fv.USD++
			r.floors[testID] = fv
		})},
		{name: "floor: asOf", route: "/v1/collections/:id/floor", path: at(detail + "/floor"), change: moveAsOf, setup: func(h *harness) {
			fv := h.r.floors[testID]
			fv.AsOf = live
			h.r.floors[testID] = fv
		}},
		{name: "floor: the fallback takes over", route: "/v1/collections/:id/floor", path: at(detail + "/floor"), change: clock(20 * time.Second), setup: func(h *harness) {
			h.r.floors[testID] = render.FloorView{Version: 5, Body: floorBody(testID, "1050000000000000000", false),
				FallbackAfter: t0.Add(10 * time.Second), Fallback: floorBody(testID, "", true)}
		}},

		// GET /v1/collections/{id}/floor/history
		{name: "floor history: canonical id", route: "/v1/collections/:id/floor/history", path: at(bySlug + "/floor/history"), change: repoint, setup: observed},
		{name: "floor history: history version", route: "/v1/collections/:id/floor/history", path: at(history), setup: observed, change: commit(func(r *fakeReader) {
			hv := r.floorHistory[testID]
			hv.Version++
			r.floorHistory[testID] = hv
		})},
		{name: "floor history: interval", route: "/v1/collections/:id/floor/history", path: at(history), setup: observed, change: to(history + "?interval=1d")},
		{name: "floor history: from", route: "/v1/collections/:id/floor/history", path: at(history + "?from=2026-11-20T00:00:00Z"), setup: observed,
			change: to(history + "?from=2026-11-20T01:00:00Z")},
		{name: "floor history: to", route: "/v1/collections/:id/floor/history", path: at(history + "?to=2026-11-01T00:00:00Z"), setup: observed,
			change: to(history + "?to=2026-11-01T01:00:00Z")},
		{name: "floor history: the default range moves with the hour", route: "/v1/collections/:id/floor/history", path: at(history), setup: observed,
			change: clock(time.Hour)},

		// GET /v1/collections/{id}/listings
		{name: "listings: canonical id", route: "/v1/collections/:id/listings", path: at(bySlug + "/listings?limit=10"), change: repoint},
		{name: "listings: collection version", route: "/v1/collections/:id/listings", path: at(listings), change: commit(func(r *fakeReader) {
			cv := r.collections[testID]
			cv.Version++
			r.collections[testID] = cv
		})},
		{name: "listings: snapshot version", route: "/v1/collections/:id/listings", path: at(listings), change: func(h *harness) string {
			h.r.putListings(testID, listingsView(2, 30, nil))
			h.r.bump()
			return ""
		}},
		{name: "listings: USD quote", route: "/v1/collections/:id/listings", path: at(listings), change: func(h *harness) string {
			lv := listingsView(1, 30, nil)
			lv.USD = 1
			h.r.putListings(testID, lv)
			h.r.bump()
			return ""
		}},
		{name: "listings: position", route: "/v1/collections/:id/listings", path: at(listings), change: func(h *harness) string { return next(h, listings) }},
		{name: "listings: limit", route: "/v1/collections/:id/listings", path: at(listings), change: to(detail + "/listings?limit=11")},
		{name: "listings: a listing expires", route: "/v1/collections/:id/listings", path: at(listings), change: clock(20 * time.Second), setup: func(h *harness) {
			h.r.putListings(testID, listingsView(3, 30, func(i int) int64 {
				if i == 0 {
					return t0.Add(10 * time.Second).UnixMilli()
				}
				return 0
			}))
		}},
		{name: "listings: one beyond the ceiling expires", route: "/v1/collections/:id/listings", path: at(listings), change: clock(20 * time.Second), setup: func(h *harness) {
			lv := listingsView(3, 30, nil)
			lv.Listed, lv.BeyondExpires = 31, []int64{t0.Add(10 * time.Second).UnixMilli()}
			h.r.putListings(testID, lv)
		}},
		{name: "listings: asOf", route: "/v1/collections/:id/listings", path: at(listings), change: moveAsOf, setup: func(h *harness) {
			lv := listingsView(1, 30, nil)
			lv.AsOf = live
			h.r.putListings(testID, lv)
		}},
		{name: "listings: next cursor's minute", route: "/v1/collections/:id/listings", path: at(listings), change: clock(time.Minute), sameTag: true},
		{name: "listings: the cursor asked with expires", route: "/v1/collections/:id/listings", status: http.StatusBadRequest,
			path:   func(h *harness) string { return next(h, detail+"/listings?limit=20") }, // the last page: no cursor of its own
			change: func(h *harness) string { h.clock.Set(t0.Add(DefaultCursorTTL + 30*time.Second)); return "" }},

		// GET /v1/collections/{id}/sweep: the listings page's identity,
		// with count for limit and no position.
		{name: "sweep: canonical id", route: "/v1/collections/:id/sweep", path: at(bySlug + "/sweep?count=5"), change: repoint},
		{name: "sweep: collection version", route: "/v1/collections/:id/sweep", path: at(sweep), change: commit(func(r *fakeReader) {
			cv := r.collections[testID]
			cv.Version++
			r.collections[testID] = cv
		})},
		{name: "sweep: snapshot version", route: "/v1/collections/:id/sweep", path: at(sweep), change: func(h *harness) string {
			h.r.putListings(testID, listingsView(2, 30, nil))
			h.r.bump()
			return ""
		}},
		{name: "sweep: USD quote", route: "/v1/collections/:id/sweep", path: at(sweep), change: func(h *harness) string {
			lv := listingsView(1, 30, nil)
			lv.USD = 1
			h.r.putListings(testID, lv)
			h.r.bump()
			return ""
		}},
		{name: "sweep: count", route: "/v1/collections/:id/sweep", path: at(sweep), change: to(detail + "/sweep?count=6")},
		{name: "sweep: a listing expires", route: "/v1/collections/:id/sweep", path: at(sweep), change: clock(20 * time.Second), setup: func(h *harness) {
			h.r.putListings(testID, listingsView(3, 30, func(i int) int64 {
				if i == 0 {
					return t0.Add(10 * time.Second).UnixMilli()
				}
				return 0
			}))
		}},
		{name: "sweep: one beyond the ceiling expires", route: "/v1/collections/:id/sweep", path: at(sweep), change: clock(20 * time.Second), setup: func(h *harness) {
			lv := listingsView(3, 30, nil)
			lv.Listed, lv.BeyondExpires = 31, []int64{t0.Add(10 * time.Second).UnixMilli()}
			h.r.putListings(testID, lv)
		}},
		{name: "sweep: asOf", route: "/v1/collections/:id/sweep", path: at(sweep), change: moveAsOf, setup: func(h *harness) {
			lv := listingsView(1, 30, nil)
			lv.AsOf = live
			h.r.putListings(testID, lv)
		}},

		// GET /v1/collections/{id}/sales
		{name: "sales: canonical id", route: "/v1/collections/:id/sales", path: at(bySlug + "/sales?limit=5"), change: repoint},
		{name: "sales: position", route: "/v1/collections/:id/sales", path: at(sales), change: func(h *harness) string { return next(h, sales) }},
		{name: "sales: limit", route: "/v1/collections/:id/sales", path: at(sales), change: to(detail + "/sales?limit=6")},
		{name: "sales: view version", route: "/v1/collections/:id/sales", path: at(sales), change: commit(func(r *fakeReader) { r.salesVer++ })},
		{name: "sales: USD quote", route: "/v1/collections/:id/sales", path: at(sales), change: commit(func(r *fakeReader) { r.pageUSD++ })},
		{name: "sales: next cursor's minute", route: "/v1/collections/:id/sales", path: at(sales), change: clock(time.Minute), sameTag: true},

		// GET /v1/collections/{id}/events: a full page after a cursor
		// (25 of 60 events), the head page after one, the first page.
		{name: "events: canonical id", route: "/v1/collections/:id/events", path: at(bySlug + "/events?limit=100"), change: repoint, noPage: true},
		{name: "events: types", route: "/v1/collections/:id/events", path: func(h *harness) string { return next(h, events) },
			change: func(h *harness) string { return next(h, events) + "&types=sale" }},
		{name: "events: position", route: "/v1/collections/:id/events", path: func(h *harness) string { return next(h, events) },
			change: func(h *harness) string { return next(h, next(h, events)) }},
		{name: "events: limit", route: "/v1/collections/:id/events", path: func(h *harness) string { return next(h, events) },
			change: func(h *harness) string { return strings.Replace(next(h, events), "limit=25", "limit=24", 1) }},
		{name: "events: the head page's newest event", route: "/v1/collections/:id/events",
			path:   func(h *harness) string { return next(h, next(h, events)) }, // events 51 to 60
			change: commit(func(r *fakeReader) { r.addEvents(testID, 1) })},
		{name: "events: the first page's newest event", route: "/v1/collections/:id/events", path: at(detail + "/events?limit=100"), noPage: true,
			change: commit(func(r *fakeReader) { r.addEvents(testID, 1) })},

		// GET /v1/events: as a collection's feed, and its filters.
		{name: "market: types", route: "/v1/events", path: func(h *harness) string { return next(h, market) },
			change: func(h *harness) string { return next(h, market) + "&types=sale" }},
		{name: "market: chain", route: "/v1/events", path: func(h *harness) string { return next(h, market) },
			change: func(h *harness) string { return next(h, market) + "&chain=base" }},
		{name: "market: collections", route: "/v1/events", path: func(h *harness) string { return next(h, market) },
			change: func(h *harness) string { return next(h, market) + "&collections=" + testSlug }},
		{name: "market: the collections' canonical ids", route: "/v1/events", path: at(market + "&collections=" + testSlug), noPage: true, change: repoint},
		{name: "market: position", route: "/v1/events", path: func(h *harness) string { return next(h, market) },
			change: func(h *harness) string { return next(h, next(h, market)) }},
		{name: "market: limit", route: "/v1/events", path: func(h *harness) string { return next(h, market) },
			change: func(h *harness) string { return strings.Replace(next(h, market), "limit=25", "limit=24", 1) }},
		{name: "market: the head page's newest event", route: "/v1/events",
			path:   func(h *harness) string { return next(h, next(h, market)) }, // events 51 to 60
			change: commit(func(r *fakeReader) { r.addEvents(testID, 1) })},
		{name: "market: the first page's newest event", route: "/v1/events", path: at("/v1/events?limit=100"), noPage: true,
			change: commit(func(r *fakeReader) { r.addEvents(testID, 1) })},

		// GET /v1/tokens/{chain}/{address}/{tokenId}
		{name: "token: which token", route: "/v1/tokens/:chain/:address/:tokenId", path: at(token), change: to(strings.TrimSuffix(token, "1") + "2")},
		{name: "token: view version", route: "/v1/tokens/:chain/:address/:tokenId", path: at(token), change: commit(func(r *fakeReader) { setTok(r, "1", tokenView(2)) })},
		{name: "token: USD quote", route: "/v1/tokens/:chain/:address/:tokenId", path: at(token), change: commit(func(r *fakeReader) {
			tv := tok(r, "1")
			tv.USD++
			setTok(r, "1", tv)
		})},
		{name: "token: asOf", route: "/v1/tokens/:chain/:address/:tokenId", path: at(token),
			change: commit(func(r *fakeReader) { r.polls[mirror] = t0.Add(-time.Minute).UnixMilli() })},
		{name: "token: a listing it shows expires", route: "/v1/tokens/:chain/:address/:tokenId", path: at(token),
			setup: func(h *harness) {
				tv := tok(h.r, "1")
				tv.Until = t0.Add(10 * time.Second).UnixNano()
				setTok(h.r, "1", tv)
			},
			// The store renders the view again when read past Until, the
			// expired listing counted in its version: no commit.
			change: func(h *harness) string {
				h.clock.Add(20 * time.Second)
				setTok(h.r, "1", tokenView(2))
				return ""
			}},

		// GET /v1/tokens?ids=
		{name: "tokens: ids", route: "/v1/tokens", path: at(batch),
			change: to("/v1/tokens?ids=ethereum/" + testContract + "/2,ethereum/" + testContract + "/1")},
		{name: "tokens: a token's view version", route: "/v1/tokens", path: at(batch), change: commit(func(r *fakeReader) {
			tv := tok(r, "2")
			tv.Version++
			setTok(r, "2", tv)
		})},
		{name: "tokens: a token's USD quote", route: "/v1/tokens", path: at(batch), change: commit(func(r *fakeReader) {
			tv := tok(r, "2")
			tv.USD++
			setTok(r, "2", tv)
		})},
		{name: "tokens: asOf", route: "/v1/tokens", path: at(batch),
			change: commit(func(r *fakeReader) { r.polls[mirror] = t0.Add(-time.Minute).UnixMilli() })},
		// The chain as validToken reads it: an EVM chain's asOf is also
		// the order book's.
		{name: "tokens: asOf of a chain in capitals", route: "/v1/tokens", path: at(strings.ReplaceAll(batch, "ethereum/", "ETHEREUM/")),
			change: commit(func(r *fakeReader) { r.polls[ob] = t0.Add(-3 * time.Minute).UnixMilli() })},
		// The fake answers the same view past Until (the store would count
		// the expired listing in its version): the ETag stays, the bound
		// alone makes the memos miss.
		{name: "tokens: a listing one shows expires", route: "/v1/tokens", path: at(batch), change: clock(20 * time.Second), sameTag: true,
			setup: func(h *harness) {
				tv := tok(h.r, "2")
				tv.Until = t0.Add(10 * time.Second).UnixNano()
				setTok(h.r, "2", tv)
			}},
	}

	// The routes of view modules served as they are (httpapi/views.go)
	// share one handler, so one identity: the canonical id and the
	// record's version.
	for _, m := range render.Views() {
		if m.Path() == "" {
			continue
		}
		key := m.Name() + "|" + testID
		has := func(h *harness) { h.r.views[key] = render.ViewValue{Version: 3} }
		path := "/v1/collections/" + testID + strings.TrimPrefix(m.Path(), "/v1/collections/:id")
		cases = append(cases,
			identityCase{name: m.Name() + ": canonical id", route: m.Path(), setup: has, path: at(strings.Replace(path, testID, testSlug, 1)), change: repoint},
			identityCase{name: m.Name() + ": record version", route: m.Path(), setup: has, path: at(path), change: commit(func(r *fakeReader) {
				v := r.views[key]
				v.Version++
				r.views[key] = v
			})},
		)
	}
	covered := map[string]bool{}
	for _, tc := range cases {
		covered[tc.route] = true
		var rt *route
		for _, r := range routeTable() {
			if r.pattern == tc.route {
				rt = r
			}
		}
		require.NotNil(t, rt, tc.route)
		var modes []memoMode
		if pageRoutes[tc.route] && !tc.noPage {
			modes = append(modes, pageMode)
		}
		if rt.prepared {
			modes = append(modes, responseMode)
		}
		require.NotEmpty(t, modes, "%s: a cached route keeps its responses in a memo", tc.name)
		for _, mode := range modes {
			t.Run(tc.name+"/"+string(mode), func(t *testing.T) {
				runIdentityCase(t, tc, mode)
			})
		}
	}
	for _, rt := range routeTable() {
		if rt.pattern == "/v1" || rt.pattern == "/v1/openapi.json" || rt.pattern == "/v1/docs" || rt.pattern == docsScriptPath {
			continue // static documents: one constant tag each
		}
		if rt.pattern == "/v1/status" {
			continue // built per request from in-memory values, no memo: TestStatus
		}
		assert.True(t, covered[rt.pattern], "%s is cached: give it cases above", rt.pattern)
	}
}

// runIdentityCase reads tc's target until the memo of mode answers it,
// changes tc's input and reads again.
func runIdentityCase(t *testing.T, tc identityCase, mode memoMode) {
	h := MustHarness(t, nil)
	h.r.tokens["ethereum|"+testContract+"|1"] = tokenView(1)
	h.r.tokens["ethereum|"+testContract+"|2"] = tokenView(1)
	ob := readmodel.PollIndex(string(readmodel.SourceOrderBook))
	h.r.polls[ob] = t0.Add(-90 * time.Second).UnixMilli()
	h.r.polls[readmodel.PollIndex(readmodel.PollMirrorTokens)] = t0.Add(-2 * time.Minute).UnixMilli()
	h.r.addEvents(testID, 60)
	hits := func() float64 { return memoHits(h) }
	if mode == responseMode {
		h.r.viewsVersioned = true
		h.srv.memo = nil
		hits = func() float64 { return responseHits(h) }
	}
	if tc.setup != nil {
		tc.setup(h)
	}
	path := tc.path(h)

	// Equal inputs: one ETag, and from the third read on one remembered
	// response (a memo keeps a response on its second miss).
	first := h.get(path)
	require.Equal(t, 200, first.status, "%s", first.body)
	tag := first.header.Get("ETag")
	require.NotEmpty(t, tag)
	second := h.get(path)
	n := hits()
	third := h.get(path)
	require.Equal(t, n+1, hits(), "equal inputs: answered from the %s", mode)
	assert.Equal(t, tag, second.header.Get("ETag"))
	assert.Equal(t, tag, third.header.Get("ETag"))
	assert.Equal(t, string(first.body), string(third.body), "a remembered response is the one built")

	after := path
	if p := tc.change(h); p != "" {
		after = p
	}
	n = hits() // change may have read other targets
	res := h.get(after)
	want := tc.status
	if want == 0 {
		want = 200
	}
	require.Equal(t, want, res.status, "%s", res.body)
	assert.Equal(t, n, hits(), "a changed input misses the %s", mode)
	if tc.sameTag {
		assert.Equal(t, tag, res.header.Get("ETag"), "weakly the same body, the same ETag")
		assert.Equal(t, http.StatusNotModified, h.get(after, "If-None-Match", tag).status)
		return
	}
	assert.NotEqual(t, tag, res.header.Get("ETag"), "a changed input changes the ETag")
	if want == 200 {
		assert.Equal(t, 200, h.get(after, "If-None-Match", tag).status, "the old ETag revalidates to a new body")
	}
}

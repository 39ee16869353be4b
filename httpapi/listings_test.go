package httpapi

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/render"
)

func orderIDs(t testing.TB, r result) []string {
	t.Helper()
	var ids []string
	for _, it := range data(t, r) {
		ids = append(ids, it.(map[string]any)["orderId"].(string))
	}
	return ids
}

// walkListings pages through listings with limit and returns every orderId
// and the number of pages.
func (h *harness) walkListings(id string, limit int, between func(page int)) ([]string, int) {
	h.t.Helper()
	var all []string
	next := ""
	pages := 0
	for {
		require.Less(h.t, pages, 1000)
		target := "/v1/collections/" + id + "/listings?limit=" + itoa(limit)
		if next != "" {
			target += "&cursor=" + next
		}
		res := h.get(target)
		require.Equal(h.t, 200, res.status, "%s", res.body)
		all = append(all, orderIDs(h.t, res)...)
		pages++
		var more bool
		next, more = pagination(h.t, res)
		if !more {
			assert.Empty(h.t, next)
			return all, pages
		}
		if between != nil {
			between(pages)
		}
	}
}

func TestListingsPagination(t *testing.T) {
	t.Run("walk covers the snapshot in order", func(t *testing.T) {
		h := MustHarness(t, nil)
		ids, pages := h.walkListings(testID, 7, nil)
		require.Len(t, ids, 30)
		assert.Equal(t, 5, pages)
		for i, id := range ids {
			assert.Equal(t, "o1-"+itoa(i), id)
		}
	})
	t.Run("ceiling: 250 items then hasMore false", func(t *testing.T) {
		h := MustHarness(t, nil)
		h.r.putListings(testID, listingsView(2, 250, nil))
		ids, pages := h.walkListings(testID, 100, nil)
		assert.Len(t, ids, 250)
		assert.Equal(t, 3, pages)
	})
	t.Run("offset beyond the ceiling is 400", func(t *testing.T) {
		h := MustHarness(t, nil)
		var b [512]byte
		c := h.srv.cursors.appendCursor(b[:0], cursor{kind: cursorListings, bind: testID, offset: readmodel.ListingsCeiling + 1, version: 1}, t0)
		res := h.get("/v1/collections/" + testID + "/listings?cursor=" + string(c))
		require.Equal(t, http.StatusBadRequest, res.status)
		assert.Equal(t, "bad_request", res.errorCode(t))
	})
	t.Run("offset past a shrunken snapshot is an empty last page", func(t *testing.T) {
		h := MustHarness(t, nil)
		res := h.get("/v1/collections/" + testID + "/listings?limit=20")
		next, _ := pagination(t, res)
		h.r.putListings(testID, listingsView(2, 5, nil))
		h.r.dropListingsVersion(testID, 1)
		res = h.get("/v1/collections/" + testID + "/listings?limit=20&cursor=" + next)
		require.Equal(t, 200, res.status)
		assert.Empty(t, data(t, res))
		_, more := pagination(t, res)
		assert.False(t, more)
	})
	t.Run("cursor pins the snapshot version while it is held", func(t *testing.T) {
		h := MustHarness(t, nil)
		ids, _ := h.walkListings(testID, 10, func(page int) {
			h.r.putListings(testID, listingsView(uint64(page+1), 30, nil)) // the book moves
		})
		require.Len(t, ids, 30)
		for i, id := range ids {
			assert.Equal(t, "o1-"+itoa(i), id, "consistent read of version 1")
		}
	})
	t.Run("falls back to the offset in the current snapshot once the version is gone", func(t *testing.T) {
		h := MustHarness(t, nil)
		res := h.get("/v1/collections/" + testID + "/listings?limit=10")
		next, _ := pagination(t, res)
		h.r.putListings(testID, listingsView(2, 30, nil))
		h.r.dropListingsVersion(testID, 1)
		res = h.get("/v1/collections/" + testID + "/listings?limit=10&cursor=" + next)
		require.Equal(t, 200, res.status)
		assert.Equal(t, "o2-10", orderIDs(t, res)[0])
	})
}

func TestListingsExpiry(t *testing.T) {
	h := MustHarness(t, nil)
	// items 0..9 expire at t0+1m, 10..19 never, 20..29 expired already.
	h.r.putListings(testID, listingsView(2, 30, func(i int) int64 {
		switch {
		case i < 10:
			return t0.Add(time.Minute).UnixMilli()
		case i < 20:
			return 0
		default:
			return t0.UnixMilli() // expired: not after now
		}
	}))
	ids, _ := h.walkListings(testID, 25, nil)
	assert.Len(t, ids, 20)
	assert.Equal(t, "o2-19", ids[19])
	h.clock.Add(time.Minute)
	ids, _ = h.walkListings(testID, 25, nil)
	require.Len(t, ids, 10)
	assert.Equal(t, "o2-10", ids[0])
	res := h.get("/v1/collections/" + testID + "/listings?limit=10")
	_, more := pagination(t, res)
	assert.False(t, more, "expired rows after the page do not make hasMore")
}

// TestListingsDegradation is SPEC §7 and listings rules 6–9, 11.
func TestListingsDegradation(t *testing.T) {
	ob, im := readmodel.SourceOrderBook, readmodel.SourceIndexerMirror
	tests := []struct {
		name      string
		id        string
		view      render.ListingsView
		status    int
		meta      []any // nil: meta absent
		wantItems int
	}{
		{"healthy", testID, listingsView(2, 3, nil), 200, nil, 3},
		{"healthy and empty: no meta", testID, render.ListingsView{Version: 2}, 200, nil, 0},
		{"order book failed", testID, withStale(listingsView(2, 3, nil), false, ob), 200, []any{"order-book"}, 3},
		{"mirror failed", testID, withStale(listingsView(2, 3, nil), false, im), 200, []any{"indexer-mirror"}, 3},
		{"mirror failed, empty", testID, withStale(render.ListingsView{Version: 2}, false, im), 200, []any{"indexer-mirror"}, 0},
		{"all failed with last-good rows", testID, withStale(listingsView(2, 3, nil), true, ob, im), 200, []any{"order-book", "indexer-mirror"}, 3},
		{"all failed, nothing known", testID, withStale(render.ListingsView{Version: 2}, true, ob, im), 502, nil, 0},
		{"all failed, every row expired", testID, withStale(listingsView(2, 3, func(int) int64 { return t0.UnixMilli() - 1 }), true, ob, im), 502, nil, 0},
		{"no contract: order-book stale", noContractID, withStale(render.ListingsView{Version: 2}, false, ob), 200, []any{"order-book"}, 0},
		{"no contract and mirror failed: 502", noContractID, withStale(render.ListingsView{Version: 2}, true, ob, im), 502, nil, 0},
		{"no chain: 404", noChainID, listingsView(2, 3, nil), 404, nil, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := MustHarness(t, nil)
			h.r.putListings(tc.id, tc.view)
			res := h.get("/v1/collections/" + tc.id + "/listings")
			require.Equal(t, tc.status, res.status, "%s", res.body)
			switch tc.status {
			case 502:
				assert.Equal(t, "upstream_error", res.errorCode(t))
				return
			case 404:
				assert.Equal(t, "not_found", res.errorCode(t))
				assert.Zero(t, h.r.count("Listings"))
				return
			}
			m := res.json(t)
			assert.Len(t, data(t, res), tc.wantItems)
			if tc.meta == nil {
				assert.NotContains(t, m, "meta")
				return
			}
			require.Contains(t, m, "meta")
			meta := m["meta"].(map[string]any)
			assert.Equal(t, true, meta["stale"])
			assert.Equal(t, tc.meta, meta["staleSources"])
		})
	}
	t.Run("node read failure is 502", func(t *testing.T) {
		h := MustHarness(t, nil)
		h.r.setErr("Listings", assert.AnError)
		res := h.get("/v1/collections/" + testID + "/listings")
		require.Equal(t, 502, res.status)
		assert.Equal(t, "upstream_error", res.errorCode(t))
	})
}

func withStale(lv render.ListingsView, all bool, s ...readmodel.Source) render.ListingsView {
	lv.StaleSources, lv.AllFailed = s, all
	return lv
}

func itoa(i int) string { return strconv.Itoa(i) }

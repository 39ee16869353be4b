package httpapi

import (
	"bytes"
	"net/url"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel/render"
)

func responseHits(h *harness) float64 { return testutil.ToFloat64(h.srv.resp.hits) }

// bump records a change to what the fake holds, as a store's commit does.
func (f *fakeReader) bump() {
	f.mu.Lock()
	f.viewsVer++
	f.mu.Unlock()
}

// TestResponseMemo checks that a response answered from the response
// memo is the one the handler would build at that moment: the same while
// neither the views' version nor any time bound of the response moved, and
// built anew after either moved, without the views' version having to
// move for the clock's changes.
func TestResponseMemo(t *testing.T) {
	detail := "/v1/collections/" + testID
	floor := detail + "/floor"
	listings := detail + "/listings?limit=10"
	token := "/v1/tokens/ethereum/" + testContract + "/1"
	tests := []struct {
		name  string
		setup func(h *harness)
		// path is the request target (given h after setup).
		path   func(h *harness) string
		change func(h *harness)
		// rebuilt says whether the read after the change must be built
		// (else it is answered from the memo).
		rebuilt bool
		check   func(t *testing.T, h *harness, before, after result)
	}{
		{
			name:    "detail: a commit changes it",
			path:    func(*harness) string { return detail },
			change:  func(h *harness) { setDetail(h, 4, []byte(`"name":"Cooler"`)) },
			rebuilt: true,
			check: func(t *testing.T, h *harness, before, after result) {
				assert.Equal(t, "Cooler", after.json(t)["data"].(map[string]any)["name"])
				assert.NotEqual(t, before.header.Get("ETag"), after.header.Get("ETag"))
			},
		},
		{
			name:   "detail: nothing changed, the clock moved",
			path:   func(*harness) string { return detail },
			change: func(h *harness) { h.clock.Add(time.Hour) },
			check: func(t *testing.T, h *harness, before, after result) {
				assert.Equal(t, before.body, after.body)
			},
		},
		{
			name:   "floor: updatedAt is each request's own time",
			path:   func(*harness) string { return floor },
			change: func(h *harness) { h.clock.Add(1500 * time.Microsecond) },
			check: func(t *testing.T, h *harness, before, after result) {
				at := h.clock.Now().UTC().Format("2006-01-02T15:04:05.000Z07:00")
				assert.Equal(t, at, after.json(t)["data"].(map[string]any)["updatedAt"])
				was := t0.UTC().Format("2006-01-02T15:04:05.000Z07:00")
				assert.Equal(t, string(bytes.Replace(before.body, []byte(was), []byte(at), 1)), string(after.body),
					"the same response but for its time")
			},
		},
		{
			name: "floor: the last-good buyer floor ages out",
			setup: func(h *harness) {
				h.r.floors[testID] = render.FloorView{Version: 5, Body: floorBody(testID, "1050000000000000000", false),
					FallbackAfter: t0.Add(10 * time.Second), Fallback: floorBody(testID, "", true)}
			},
			path:    func(*harness) string { return floor },
			change:  func(h *harness) { h.clock.Add(20 * time.Second) },
			rebuilt: true,
			check: func(t *testing.T, h *harness, before, after result) {
				assert.NotNil(t, before.json(t)["data"].(map[string]any)["buyerFloor"])
				assert.Nil(t, after.json(t)["data"].(map[string]any)["buyerFloor"])
			},
		},
		{
			name: "listings: the cheapest listing expires",
			setup: func(h *harness) {
				h.r.putListings(testID, listingsView(3, 30, func(i int) int64 {
					if i == 0 {
						return t0.Add(10 * time.Second).UnixMilli()
					}
					return 0
				}))
			},
			path:    func(*harness) string { return listings },
			change:  func(h *harness) { h.clock.Add(20 * time.Second) }, // the cursor's minute holds
			rebuilt: true,
			check: func(t *testing.T, h *harness, before, after result) {
				assert.Equal(t, "o3-0", firstItem(t, before).(map[string]any)["orderId"])
				assert.Equal(t, "o3-1", firstItem(t, after).(map[string]any)["orderId"])
			},
		},
		{
			name: "listings: a listing beyond the ceiling expires",
			setup: func(h *harness) {
				lv := listingsView(3, 30, nil)
				lv.Listed, lv.BeyondExpires = 31, []int64{t0.Add(10 * time.Second).UnixMilli()}
				h.r.putListings(testID, lv)
			},
			path:    func(*harness) string { return listings },
			change:  func(h *harness) { h.clock.Add(20 * time.Second) },
			rebuilt: true,
			check: func(t *testing.T, h *harness, before, after result) {
				snap := func(r result) map[string]any { return r.json(t)["snapshot"].(map[string]any) }
				assert.Equal(t, map[string]any{"listedCount": 31.0, "truncated": true}, pick(snap(before), "listedCount", "truncated"))
				assert.Equal(t, map[string]any{"listedCount": 30.0, "truncated": false}, pick(snap(after), "listedCount", "truncated"))
			},
		},
		{
			name:    "listings: the cursor's minute passes",
			path:    func(*harness) string { return listings },
			change:  func(h *harness) { h.clock.Add(time.Minute) },
			rebuilt: true,
			check:   checkFreshCursor(cursorListings, testID),
		},
		{
			// The last page (no next cursor of its own): only the given
			// cursor's expiry bounds it.
			name: "listings: the cursor asked with expires",
			path: func(h *harness) string {
				first := detail + "/listings?limit=20"
				next, more := pagination(h.t.(*testing.T), h.get(first))
				require.True(h.t, more)
				return first + "&cursor=" + url.QueryEscape(next)
			},
			// Minted at t0 (12:00:30), it verifies until 13:01:00.
			change:  func(h *harness) { h.clock.Set(t0.Add(DefaultCursorTTL + 30*time.Second)) },
			rebuilt: true,
			check: func(t *testing.T, h *harness, before, after result) {
				_, more := pagination(t, before)
				require.False(t, more)
				require.Equal(t, 400, after.status)
				assert.Equal(t, "bad_request", after.errorCode(t))
			},
		},
		{
			name:    "sales: the cursor's minute passes",
			path:    func(*harness) string { return detail + "/sales?limit=5" },
			change:  func(h *harness) { h.clock.Add(time.Minute) },
			rebuilt: true,
			check:   checkFreshCursor(cursorSales, testID),
		},
		{
			name: "token: its view's Until passes",
			setup: func(h *harness) {
				tv := tokenView(1)
				tv.Until = t0.Add(10 * time.Second).UnixNano()
				h.r.tokens["ethereum|"+testContract+"|1"] = tv
			},
			path:    func(*harness) string { return token },
			change:  func(h *harness) { h.clock.Add(20 * time.Second) },
			rebuilt: true,
			check: func(t *testing.T, h *harness, before, after result) {
				assert.Equal(t, before.body, after.body, "the fake's view is the same; it was read again")
			},
		},
		{
			name: "batch: each timed token carries the request's time",
			setup: func(h *harness) {
				h.r.tokens["ethereum|"+testContract+"|1"] = tokenView(1)
				h.r.tokens["solana|"+solMint+"|"+solAsset] = overlayTokenView(1)
			},
			path: func(*harness) string {
				return "/v1/tokens?ids=solana/" + solMint + "/" + solAsset + ",ethereum/" + testContract + "/1,solana/" + solMint + "/" + solAsset
			},
			change: func(h *harness) { h.clock.Add(1500 * time.Microsecond) },
			check: func(t *testing.T, h *harness, before, after result) {
				at := h.clock.Now().UTC().Format("2006-01-02T15:04:05.000Z07:00")
				was := t0.UTC().Format("2006-01-02T15:04:05.000Z07:00")
				require.Equal(t, 2, bytes.Count(before.body, []byte(was)))
				assert.Equal(t, string(bytes.ReplaceAll(before.body, []byte(was), []byte(at))), string(after.body),
					"the same response but for its two time slots")
			},
		},
		{
			name: "events: a full page keeps its immutable headers",
			setup: func(h *harness) {
				h.r.addEvents(testID, 60)
			},
			path: func(h *harness) string {
				first := h.get(detail + "/events?limit=25")
				next, more := pagination(h.t.(*testing.T), first)
				require.True(h.t, more)
				return detail + "/events?limit=25&cursor=" + url.QueryEscape(next)
			},
			change: func(h *harness) { h.clock.Add(time.Hour) },
			check: func(t *testing.T, h *harness, before, after result) {
				assert.Contains(t, after.header.Get("Cache-Control"), "immutable")
				assert.Equal(t, before.body, after.body)
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := MustHarness(t, nil)
			h.r.viewsVersioned = true
			if tc.setup != nil {
				tc.setup(h)
			}
			path := tc.path(h)
			// A response is kept on its second miss and served on the third read.
			first := h.get(path)
			require.Equal(t, 200, first.status, "%s", first.body)
			h.get(path)
			hits := responseHits(h)
			before := h.get(path)
			require.Equal(t, hits+1, responseHits(h), "the third read is answered from the memo")
			assert.Equal(t, string(first.body), string(before.body), "a remembered response is the built one")
			for _, k := range []string{"ETag", "Cache-Control", "CDN-Cache-Control", "Content-Type", "Access-Control-Allow-Origin"} {
				assert.Equal(t, first.header.Get(k), before.header.Get(k), k)
			}

			tc.change(h)
			after := h.get(path)
			if tc.rebuilt {
				assert.Equal(t, hits+1, responseHits(h), "after the change the response is built again")
			} else {
				assert.Equal(t, hits+2, responseHits(h), "nothing it depends on changed: answered from the memo")
			}
			tc.check(t, h, before, after)
		})
	}
}

// TestResponseMemoRevalidation: a remembered response answers a matching
// If-None-Match with 304 and no body, as the handler does.
func TestResponseMemoRevalidation(t *testing.T) {
	h := MustHarness(t, nil)
	h.r.viewsVersioned = true
	path := "/v1/collections/" + testID
	first := h.get(path)
	h.get(path)
	hits := responseHits(h)
	r := h.get(path, "If-None-Match", first.header.Get("ETag"))
	require.Equal(t, hits+1, responseHits(h))
	assert.Equal(t, 304, r.status)
	assert.Empty(t, r.body)
	assert.Equal(t, first.header.Get("ETag"), r.header.Get("ETag"))
}

// TestResponseMemoUnversioned: a Reader that cannot say its version (views
// being rebuilt) gets no response memo: every request is built.
func TestResponseMemoUnversioned(t *testing.T) {
	h := MustHarness(t, nil)
	path := "/v1/collections/" + testID
	for i := 0; i < 3; i++ {
		require.Equal(t, 200, h.get(path).status)
	}
	assert.Zero(t, responseHits(h))
	assert.Equal(t, 3, h.r.count("Collection"))
}

// setDetail gives testID's detail version v, with field (`"name":"…"`)
// replacing its name, and bumps the fake's version.
func setDetail(h *harness, v uint64, field []byte) {
	h.r.mu.Lock()
	cv := h.r.collections[testID]
	cv.Version = v
	cv.Detail = bytes.Replace(cv.Detail, []byte(`"name":"Cool"`), field, 1)
	h.r.collections[testID] = cv
	h.r.mu.Unlock()
	h.r.bump()
}

// pick returns m's entries named by keys.
func pick(m map[string]any, keys ...string) map[string]any {
	out := map[string]any{}
	for _, k := range keys {
		out[k] = m[k]
	}
	return out
}

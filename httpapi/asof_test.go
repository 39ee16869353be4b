package httpapi

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/render"
)

// freshness of one source: healthy (live) or failing since its last
// success at.
func freshness(poll string, live bool, at time.Time) render.Freshness {
	var f render.Freshness
	st := &readmodel.PollStatus{OK: live, LastGoodAt: at}
	if live {
		st = nil
	}
	f.Add(poll, st)
	return f
}

// TestAsOfIsResolvedPerRequest: asOf follows the latest successful poll
// of a healthy source without the view changing, stays at a failing
// one's last success, is null when unknown; a moved asOf is a new ETag.
func TestAsOfIsResolvedPerRequest(t *testing.T) {
	polled := t0.Add(-90 * time.Second)
	lastGood := t0.Add(-time.Hour)
	tokenPath := "/v1/tokens/ethereum/" + testContract + "/1"
	cases := []struct {
		name   string
		target string
		set    func(h *harness, f render.Freshness)
		asOf   func(m map[string]any) any
	}{
		{"collection detail: stats.asOf", "/v1/collections/" + testID, func(h *harness, f render.Freshness) {
			cv := h.r.collections[testID]
			cv.AsOf = f
			h.r.collections[testID] = cv
		}, func(m map[string]any) any { return m["data"].(map[string]any)["stats"].(map[string]any)["asOf"] }},
		{"floor: asOf", "/v1/collections/" + testID + "/floor", func(h *harness, f render.Freshness) {
			fv := h.r.floors[testID]
			fv.AsOf = f
			h.r.floors[testID] = fv
		}, func(m map[string]any) any { return m["data"].(map[string]any)["asOf"] }},
		{"listings: snapshot.asOf", "/v1/collections/" + testID + "/listings", func(h *harness, f render.Freshness) {
			lv := listingsView(1, 30, nil)
			lv.AsOf = f
			h.r.putListings(testID, lv)
		}, func(m map[string]any) any { return m["snapshot"].(map[string]any)["asOf"] }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := MustHarness(t, nil)
			ob := readmodel.PollIndex(string(readmodel.SourceOrderBook))

			tc.set(h, freshness(string(readmodel.SourceOrderBook), true, time.Time{}))
			res := h.get(tc.target)
			require.Equal(t, 200, res.status, "%s", res.body)
			assert.Nil(t, tc.asOf(res.json(t)), "healthy, never polled: unknown")
			h.r.polls[ob] = polled.UnixMilli()
			res = h.get(tc.target)
			assert.Equal(t, readmodel.FormatTime(polled), tc.asOf(res.json(t)), "the poll's latest success")

			tag := res.header.Get("ETag")
			h.r.polls[ob] = t0.UnixMilli()
			res = h.get(tc.target, "If-None-Match", tag)
			require.Equal(t, 200, res.status, "a moved asOf is not a 304")
			assert.Equal(t, readmodel.FormatTime(t0), tc.asOf(res.json(t)))

			tc.set(h, freshness(string(readmodel.SourceOrderBook), false, lastGood))
			res = h.get(tc.target)
			assert.Equal(t, readmodel.FormatTime(lastGood), tc.asOf(res.json(t)), "failing: its last success, not the poll's")
		})
	}
	t.Run("token: the token poll and, on EVM, the order book", func(t *testing.T) {
		h := MustHarness(t, nil)
		h.r.tokens["ethereum|"+testContract+"|1"] = tokenView(1)
		res := h.get(tokenPath)
		require.Equal(t, 200, res.status, "%s", res.body)
		assert.Nil(t, res.json(t)["data"].(map[string]any)["asOf"])
		h.r.polls[readmodel.PollIndex(readmodel.PollMirrorTokens)] = t0.UnixMilli()
		h.r.polls[readmodel.PollIndex(string(readmodel.SourceOrderBook))] = polled.UnixMilli()
		res = h.get(tokenPath)
		assert.Equal(t, readmodel.FormatTime(polled), res.json(t)["data"].(map[string]any)["asOf"], "the older of the two")
	})
}

func TestListingsSnapshotDepth(t *testing.T) {
	cases := []struct {
		name          string
		listed        int
		beyondExpires []int64
		wantListed    float64
		wantTruncated bool
	}{
		{"nothing cut", 30, nil, 30, false},
		{"cut rows counted, the expired one not", 40, []int64{t0.Add(-time.Second).UnixMilli(), t0.Add(time.Hour).UnixMilli()}, 39, true},
		{"every cut row expired since: no longer truncated", 31, []int64{t0.Add(-time.Second).UnixMilli()}, 30, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := MustHarness(t, nil)
			lv := listingsView(1, 30, nil)
			lv.Listed, lv.BeyondExpires = tc.listed, tc.beyondExpires
			h.r.putListings(testID, lv)
			res := h.get("/v1/collections/" + testID + "/listings?limit=5")
			require.Equal(t, 200, res.status, "%s", res.body)
			snap := res.json(t)["snapshot"].(map[string]any)
			assert.Equal(t, tc.wantListed, snap["listedCount"])
			assert.Equal(t, tc.wantTruncated, snap["truncated"])
		})
	}
}

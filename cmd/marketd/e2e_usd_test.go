package main

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestUSDFollowsThePriceFeed: every Price in a feed currency carries usd =
// decimal × the feed's current rate (rounded to cents), on every endpoint,
// right after the cycle that brought a new rate; null while the feed is
// failing (SPEC §2 Price.usd); and a detail's ETag changes with the rate.
func TestUSDFollowsThePriceFeed(t *testing.T) {
	e := newAPIEnv(t)
	rates := func(t *testing.T) map[string]any {
		r := get(t, e.Sim+"/price-feed/rates")
		require.Equal(t, 200, r.Status, "%s", r.Body)
		return obj(r.JSON["rates"])
	}
	// prices walks every Price object in v.
	var prices func(v any, fn func(p map[string]any))
	prices = func(v any, fn func(p map[string]any)) {
		switch x := v.(type) {
		case map[string]any:
			if _, ok := x["currency"]; ok {
				if _, ok := x["usd"]; ok {
					fn(x)
					return
				}
			}
			for _, c := range x {
				prices(c, fn)
			}
		case []any:
			for _, c := range x {
				prices(c, fn)
			}
		}
	}
	// check asserts every feed-currency price of the sampled bodies; it
	// returns how many it saw.
	check := func(t *testing.T, want map[string]any, feedUp bool) int {
		t.Helper()
		page := e.get(t, "/v1/collections?limit=100")
		require.Equal(t, 200, page.Status)
		bodies := []map[string]any{page.JSON}
		for _, it := range arr(page.JSON["data"])[:12] {
			id := obj(it)["id"].(string)
			for _, sub := range [][]string{nil, {"floor"}, {"listings"}, {"sales"}} {
				if r := e.get(t, collection(id, sub...)); r.Status == 200 {
					bodies = append(bodies, r.JSON)
				}
			}
		}
		n := 0
		for _, b := range bodies {
			prices(b, func(p map[string]any) {
				cur := p["currency"].(string)
				if cur != "ETH" && cur != "SOL" {
					assert.Nil(t, p["usd"], "%s has no feed", cur)
					return
				}
				n++
				if !feedUp {
					assert.Nil(t, p["usd"], "feed failing: usd null")
					return
				}
				rate, ok := want[cur].(float64)
				require.True(t, ok, "feed quotes %s", cur)
				exp := math.Round(p["decimal"].(float64)*rate*100) / 100
				assert.InDelta(t, exp, p["usd"], 0.0100001, "usd of %v %s at %v", p["decimal"], cur, rate)
			})
		}
		return n
	}

	before := rates(t)
	require.Positive(t, check(t, before, true), "the sample holds feed-currency prices")
	id := obj(arr(e.get(t, "/v1/collections?limit=1").JSON["data"])[0])["id"].(string)
	tag := e.get(t, collection(id)).Header.Get("ETag")

	e.tick(t)
	e.cycle(t)
	after := rates(t)
	require.NotEqual(t, before, after, "the simulator moves its rates every tick")
	check(t, after, true)
	assert.NotEqual(t, tag, e.get(t, collection(id)).Header.Get("ETag"), "a new rate is a new body")

	e.fault(t, "price-feed", "error")
	e.cycle(t)
	check(t, nil, false)
	e.reset(t)
	e.cycle(t)
	check(t, after, true)
}

package main

import (
	"math/big"
	"strings"
	"testing"

	"github.com/marketd/marketd/ingest/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestListingsEndToEnd checks listings rules 1–11 of SPEC §4 against a live
// node, degrading sources through the simulator's fault API.
func TestListingsEndToEnd(t *testing.T) {
	e := newAPIEnv(t)
	dual := e.id(t, sim.EdgeDualListed)

	t.Run("rule 2: an asset listed natively and externally appears once, native wins", func(t *testing.T) {
		r := e.get(t, collection(dual, "listings")+"?limit=100")
		require.Equal(t, 200, r.Status, "%s", r.Body)
		items := arr(r.JSON["data"])
		assertListingsOrdered(t, items)
		var token1 []map[string]any
		for _, v := range items {
			it := obj(v)
			if it["tokenId"] == "1" {
				token1 = append(token1, it)
			}
		}
		require.Len(t, token1, 1, "token #1 is listed on both venues and appears once")
		assert.Equal(t, "NATIVE", token1[0]["marketplace"])
		assert.Regexp(t, `^ethereum_0x[0-9a-f]{40}_1_[0-9]+$`, token1[0]["orderId"], "native EVM orderId is the order-book document id")
		assert.Nil(t, token1[0]["tx"], "tx is null on EVM listings")
	})

	t.Run("rule 2: mirrored Solana ids lose the legacy brand prefix", func(t *testing.T) {
		r := e.get(t, collection(e.id(t, sim.EdgeLegacySolanaIDs), "listings")+"?limit=100")
		require.Equal(t, 200, r.Status)
		items := arr(r.JSON["data"])
		require.NotEmpty(t, items)
		for _, v := range items {
			it := obj(v)
			o, _ := it["orderId"].(string)
			assert.NotContains(t, o, ":", "orderId %q keeps no brand prefix", o)
			if it["marketplace"] == "NATIVE" {
				assert.True(t, strings.HasPrefix(o, it["mint"].(string)+"_"), "native Solana orderId is <mint>_<millis>: %q", o)
				assert.NotNil(t, it["tx"], "native Solana rows carry the escrow transfer signature")
				assert.NotEqual(t, sim.EscrowWallet, it["seller"], "seller is the beneficial owner, never escrow")
			}
		}
	})

	t.Run("rule 4: the window holds at most 250, walked with the cursor", func(t *testing.T) {
		id := e.id(t, sim.EdgeManyListings)
		var all []any
		var sizes []int
		next := ""
		for page := 0; page < 10; page++ {
			path := collection(id, "listings") + "?limit=100"
			if next != "" {
				path += "&cursor=" + next
			}
			r := e.get(t, path)
			require.Equal(t, 200, r.Status, "%s", r.Body)
			items := arr(r.JSON["data"])
			all = append(all, items...)
			sizes = append(sizes, len(items))
			p := obj(r.JSON["pagination"])
			if p["hasMore"] == false {
				assert.Nil(t, p["nextCursor"], "nextCursor is null on the last page")
				break
			}
			next = p["nextCursor"].(string)
		}
		assert.Equal(t, []int{100, 100, 50}, sizes, "more than 300 listings: the walk stops at 250")
		assertListingsOrdered(t, all)
	})

	t.Run("rule 7: every source answered, nothing listed: empty data, no meta", func(t *testing.T) {
		r := e.get(t, collection(e.id(t, sim.EdgeNoListings), "listings"))
		require.Equal(t, 200, r.Status, "%s", r.Body)
		assert.Empty(t, arr(r.JSON["data"]))
		assert.NotContains(t, r.JSON, "meta")
		assert.Equal(t, false, obj(r.JSON["pagination"])["hasMore"])
	})

	t.Run("rule 9: no contract address reports order-book stale", func(t *testing.T) {
		r := e.get(t, collection(e.id(t, sim.EdgeNoContract), "listings"))
		require.Equal(t, 200, r.Status, "%s", r.Body)
		meta := obj(r.JSON["meta"])
		require.NotNil(t, meta, "%s", r.Body)
		assert.Equal(t, true, meta["stale"])
		assert.Contains(t, arr(meta["staleSources"]), "order-book")
	})

	t.Run("rule 11: no recognised chain is 404", func(t *testing.T) {
		for _, name := range []string{sim.EdgeChainMissing, sim.EdgeChainUnknown} {
			r := e.get(t, collection(e.id(t, name), "listings"))
			assertError(t, r, 404, "not_found")
		}
	})

	t.Run("parameters: limit and cursor validation", func(t *testing.T) {
		for _, q := range []string{"limit=0", "limit=101", "limit=abc", "limit=-1", "cursor=", "cursor=null", "cursor=bm90LWEtY3Vyc29y"} {
			r := e.get(t, collection(dual, "listings")+"?"+q)
			assertError(t, r, 400, "bad_request")
		}
	})

	t.Run("rule 10: cursors minted by sales or collections are rejected", func(t *testing.T) {
		sales := e.get(t, collection(dual, "sales")+"?limit=1")
		require.Equal(t, 200, sales.Status)
		cols := e.get(t, "/v1/collections?limit=1")
		require.Equal(t, 200, cols.Status)
		for _, c := range []any{obj(sales.JSON["pagination"])["nextCursor"], obj(cols.JSON["pagination"])["nextCursor"]} {
			cur, ok := c.(string)
			require.True(t, ok)
			assertError(t, e.get(t, collection(dual, "listings")+"?cursor="+cur), 400, "bad_request")
		}
		// A listings cursor of one collection does not page another.
		r := e.get(t, collection(e.id(t, sim.EdgeManyListings), "listings")+"?limit=1")
		cur := obj(r.JSON["pagination"])["nextCursor"].(string)
		assertError(t, e.get(t, collection(dual, "listings")+"?cursor="+cur), 400, "bad_request")
	})

	t.Run("rule 6: a failing source is named in meta, its last good rows kept", func(t *testing.T) {
		before := arr(e.get(t, collection(dual, "listings")+"?limit=100").JSON["data"])
		for _, tc := range []struct {
			source, mode string
		}{{"order-book", "error"}, {"indexer-mirror", "timeout"}} {
			e.fault(t, tc.source, tc.mode)
			e.cycle(t)
			r := e.get(t, collection(dual, "listings")+"?limit=100")
			require.Equal(t, 200, r.Status, "%s", r.Body)
			meta := obj(r.JSON["meta"])
			require.NotNil(t, meta, "%s degraded by %s: %s", tc.source, tc.mode, r.Body)
			assert.Equal(t, true, meta["stale"])
			assert.Equal(t, []any{tc.source}, arr(meta["staleSources"]))
			assert.Equal(t, len(before), len(arr(r.JSON["data"])), "last good rows kept within retention")
			e.reset(t)
			e.cycle(t)
			healthy := e.get(t, collection(dual, "listings"))
			assert.NotContains(t, healthy.JSON, "meta", "healthy again")
		}
	})

	t.Run("rule 8: every source failed and nothing known is 502", func(t *testing.T) {
		e.fault(t, "order-book", "error")
		e.fault(t, "indexer-mirror", "error")
		e.cycle(t)
		defer func() { e.reset(t); e.cycle(t) }()
		r := e.get(t, collection(e.id(t, sim.EdgeNoListings), "listings"))
		assertError(t, r, 502, "upstream_error")
		// With last good rows still known, it is a degraded 200.
		r = e.get(t, collection(dual, "listings"))
		require.Equal(t, 200, r.Status, "%s", r.Body)
		assert.ElementsMatch(t, []any{"order-book", "indexer-mirror"}, arr(obj(r.JSON["meta"])["staleSources"]))
	})

	t.Run("prices are exact: raw above 2^53 round-trips", func(t *testing.T) {
		r := e.get(t, collection(e.id(t, sim.EdgeManyListings), "listings")+"?limit=100")
		var big53 int
		limit := new(big.Int).Lsh(big.NewInt(1), 53)
		for _, v := range arr(r.JSON["data"]) {
			raw, _ := new(big.Int).SetString(obj(obj(v)["price"])["raw"].(string), 10)
			if raw.Cmp(limit) > 0 {
				big53++
			}
		}
		assert.Greater(t, big53, 0)
	})
}

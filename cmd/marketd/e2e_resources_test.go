package main

import (
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/marketd/marketd/ingest/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCollectionDetailDegradation checks CollectionDetail's stale and null
// rules: stale only when BOTH indexer sources failed; analytics failing
// nulls the windows; stats failing nulls owners and listedCount; never 502.
func TestCollectionDetailDegradation(t *testing.T) {
	e := newAPIEnv(t)
	id := e.id(t, sim.EdgeDualListed)
	detail := func(t *testing.T) map[string]any {
		t.Helper()
		r := e.get(t, collection(id))
		require.Equal(t, 200, r.Status, "never 502: %s", r.Body)
		return obj(r.JSON["data"])
	}
	healthy := detail(t)
	require.Equal(t, false, healthy["stale"])
	hs := obj(healthy["stats"])
	require.NotNil(t, obj(hs["volume"])["allTime"])
	require.NotNil(t, hs["owners"])
	require.NotNil(t, hs["listedCount"])

	tests := []struct {
		name      string
		fail      []string
		stale     bool
		nullWin   bool // volume and sales windows null
		nullStats bool // owners and listedCount null
	}{
		{"analytics failed", []string{"analytics"}, false, true, false},
		{"indexer-stats failed", []string{"indexer-stats"}, false, false, true},
		{"both failed", []string{"analytics", "indexer-stats"}, true, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, s := range tt.fail {
				e.fault(t, s, "error")
			}
			e.cycle(t)
			defer func() { e.reset(t); e.cycle(t) }()
			d := detail(t)
			st := obj(d["stats"])
			assert.Equal(t, tt.stale, d["stale"])
			for _, w := range []string{"allTime", "sevenDay", "twentyFourHour"} {
				assert.Equal(t, tt.nullWin, obj(st["volume"])[w] == nil, "volume.%s", w)
				assert.Equal(t, tt.nullWin, obj(st["sales"])[w] == nil, "sales.%s", w)
			}
			assert.Equal(t, tt.nullStats, st["owners"] == nil, "owners")
			assert.Equal(t, tt.nullStats, st["listedCount"] == nil, "listedCount")
			if tt.nullWin {
				assert.NotNil(t, st["floor"], "the floor falls back to the stored snapshot")
			}
		})
	}
	t.Run("chain missing: detail still 200 with chain null", func(t *testing.T) {
		r := e.get(t, collection(e.id(t, sim.EdgeChainMissing)))
		require.Equal(t, 200, r.Status, "%s", r.Body)
		assert.Nil(t, obj(r.JSON["data"])["chain"])
		assert.Nil(t, obj(obj(r.JSON["data"])["stats"])["floor"])
	})
	t.Run("an id over 200 characters is 404", func(t *testing.T) {
		assertError(t, e.get(t, collection(strings.Repeat("a", 201))), 404, "not_found")
		assertError(t, e.get(t, collection(strings.Repeat("a", 201), "listings")), 404, "not_found")
	})
}

// TestFloorEndToEnd checks FloorResponse: aggregated always true,
// updatedAt fresh, buyerFloor = ask plus fees, and the per-chain stale rule
// for a failed buyer-floor resolve.
func TestFloorEndToEnd(t *testing.T) {
	e := newAPIEnv(t)
	eth := e.id(t, sim.EdgeDualListed) // ethereum: last-good store exists
	base := e.id(t, sim.EdgeMirrorLag) // base: no last-good store
	floor := func(t *testing.T, id string) map[string]any {
		t.Helper()
		r := e.get(t, collection(id, "floor"))
		require.Equal(t, 200, r.Status, "never 502: %s", r.Body)
		assert.Equal(t, "public, s-maxage=10, stale-while-revalidate=20", r.Header.Get("Cache-Control"))
		d := obj(r.JSON["data"])
		assert.Equal(t, true, d["aggregated"], "aggregated is always true")
		at, err := time.Parse(time.RFC3339, d["updatedAt"].(string))
		require.NoError(t, err)
		assert.WithinDuration(t, time.Now(), at, time.Minute, "updatedAt is the response time")
		assert.Equal(t, id, d["collectionId"])
		return d
	}
	t.Run("healthy", func(t *testing.T) {
		for _, id := range []string{eth, base} {
			d := floor(t, id)
			assert.Equal(t, false, d["stale"])
			require.NotNil(t, d["askFloor"])
			require.NotNil(t, d["buyerFloor"])
			chain := strings.SplitN(id, "_", 2)[0]
			assertPrice(t, chain, d["askFloor"])
			assertPrice(t, chain, d["buyerFloor"])
		}
		// The buyer pays fees on top of the cheapest ask in the snapshot.
		cheapest := obj(arr(e.get(t, collection(eth, "listings")+"?limit=1").JSON["data"])[0])
		ask, _ := new(big.Int).SetString(obj(cheapest["price"])["raw"].(string), 10)
		buyer, _ := new(big.Int).SetString(obj(floor(t, eth)["buyerFloor"])["raw"].(string), 10)
		assert.Equal(t, 1, buyer.Cmp(ask), "buyerFloor %s exceeds the cheapest ask %s", buyer, ask)
	})
	t.Run("failed resolve: last good on ethereum, null on base", func(t *testing.T) {
		good := floor(t, eth)["buyerFloor"]
		e.fault(t, "order-book", "error")
		e.fault(t, "indexer-mirror", "error")
		e.cycle(t)
		defer func() { e.reset(t); e.cycle(t) }()
		d := floor(t, eth)
		assert.Equal(t, true, d["stale"], "ethereum keeps a last-good buyerFloor")
		assert.Equal(t, good, d["buyerFloor"])
		assert.NotNil(t, d["askFloor"], "askFloor falls back silently and is never covered by stale")
		d = floor(t, base)
		assert.Equal(t, false, d["stale"], "base has no last-good store")
		assert.Nil(t, d["buyerFloor"], "null is the failure signal")
	})
	t.Run("no usable chain is 404", func(t *testing.T) {
		assertError(t, e.get(t, collection(e.id(t, sim.EdgeChainMissing), "floor")), 404, "not_found")
		assertError(t, e.get(t, collection("nope-nope", "floor")), 404, "not_found")
	})
}

// TestSalesEndToEnd checks sales rules 1–5: newest first to the start of
// history, keyset cursors that new sales do not shift, 404 without a
// contract address, foreign cursors rejected.
func TestSalesEndToEnd(t *testing.T) {
	e := newAPIEnv(t)
	walk := func(t *testing.T, id string, limit string, between func(page int)) []any {
		t.Helper()
		var all []any
		next := ""
		for page := 0; page < 1000; page++ {
			path := collection(id, "sales") + "?limit=" + limit
			if next != "" {
				path += "&cursor=" + next
			}
			r := e.get(t, path)
			require.Equal(t, 200, r.Status, "%s", r.Body)
			assert.Equal(t, "public, s-maxage=30, stale-while-revalidate=60", r.Header.Get("Cache-Control"))
			all = append(all, arr(r.JSON["data"])...)
			p := obj(r.JSON["pagination"])
			if p["hasMore"] == false {
				assert.Nil(t, p["nextCursor"])
				return all
			}
			next = p["nextCursor"].(string)
			if between != nil {
				between(page)
			}
		}
		t.Fatal("sales walk did not end")
		return nil
	}
	assertNewestFirst := func(t *testing.T, items []any) {
		t.Helper()
		seen := map[string]bool{}
		var prev time.Time
		for i, v := range items {
			assertMarketItem(t, v)
			it := obj(v)
			ts, err := time.Parse(time.RFC3339, it["timestamp"].(string))
			require.NoError(t, err)
			if i > 0 {
				assert.False(t, ts.After(prev), "newest first")
			}
			prev = ts
			key, _ := it["tx"].(string)
			o, _ := it["orderId"].(string)
			assert.False(t, seen[key+"|"+o], "sale %s|%s once", key, o)
			seen[key+"|"+o] = true
		}
	}

	t.Run("walk to the start of history, uninterpretable prices dropped", func(t *testing.T) {
		items := walk(t, e.id(t, sim.EdgeBadSalePrices), "50", nil)
		require.NotEmpty(t, items)
		assertNewestFirst(t, items)
	})
	t.Run("history predating 2026-08-23 is served", func(t *testing.T) {
		items := walk(t, e.id(t, sim.EdgeLegacySales), "100", nil)
		cut := time.Date(2026, 8, 23, 0, 0, 0, 0, time.UTC)
		var old int
		for _, v := range items {
			ts, _ := time.Parse(time.RFC3339, obj(v)["timestamp"].(string))
			if ts.Before(cut) {
				old++
			}
		}
		assert.Greater(t, old, 0)
	})
	t.Run("new sales during a walk do not shift it", func(t *testing.T) {
		id := e.id(t, sim.EdgeMirrorLag) // changes every tick
		before := walk(t, id, "100", nil)
		during := walk(t, id, "10", func(page int) {
			if page == 0 {
				e.tick(t)
				e.cycle(t)
			}
		})
		assertNewestFirst(t, during)
		assert.Equal(t, len(before), len(during), "the walk neither repeats nor skips old sales")
		after := walk(t, id, "100", nil)
		assert.GreaterOrEqual(t, len(after), len(before))
	})
	t.Run("no contract address is 404", func(t *testing.T) {
		assertError(t, e.get(t, collection(e.id(t, sim.EdgeNoContract), "sales")), 404, "not_found")
		assertError(t, e.get(t, collection("nope-nope", "sales")), 404, "not_found")
	})
	t.Run("listings and collections cursors are rejected", func(t *testing.T) {
		id := e.id(t, sim.EdgeManyListings)
		l := obj(e.get(t, collection(id, "listings")+"?limit=1").JSON["pagination"])["nextCursor"].(string)
		c := obj(e.get(t, "/v1/collections?limit=1").JSON["pagination"])["nextCursor"].(string)
		for _, cur := range []string{l, c, "", "null", "garbage"} {
			assertError(t, e.get(t, collection(id, "sales")+"?cursor="+cur), 400, "bad_request")
		}
	})
}

// TestTokensEndToEnd checks the token endpoint's validation table, its
// listing source rules and owner semantics.
func TestTokensEndToEnd(t *testing.T) {
	e := newAPIEnv(t)
	native := func(t *testing.T, id string) map[string]any {
		t.Helper()
		for _, v := range arr(e.get(t, collection(id, "listings")+"?limit=100").JSON["data"]) {
			if obj(v)["marketplace"] == "NATIVE" {
				return obj(v)
			}
		}
		t.Fatalf("no native listing in %s", id)
		return nil
	}
	token := func(t *testing.T, path string) map[string]any {
		t.Helper()
		r := e.get(t, path)
		require.Equal(t, 200, r.Status, "%s: %s", path, r.Body)
		assert.Equal(t, "public, s-maxage=30, stale-while-revalidate=60", r.Header.Get("Cache-Control"))
		d := obj(r.JSON["data"])
		assert.Contains(t, d, "rarity")
		assert.Contains(t, obj(d["rarity"]), "rank")
		return d
	}

	t.Run("EVM token with a native listing", func(t *testing.T) {
		l := native(t, e.id(t, sim.EdgeDualListed))
		contract, tokenID := l["contractAddress"].(string), l["tokenId"].(string)
		// chain case-insensitive, address case-insensitive and echoed lowercase
		d := token(t, "/v1/tokens/ETHEREUM/0x"+strings.ToUpper(contract[2:])+"/"+tokenID)
		assert.Equal(t, "ethereum", d["chain"])
		assert.Equal(t, contract, d["contractAddress"])
		assert.Equal(t, tokenID, d["tokenId"])
		assert.Nil(t, d["mint"])
		listing := obj(d["listing"])
		require.NotNil(t, listing)
		assert.Equal(t, "NATIVE", listing["marketplace"])
		assert.Equal(t, l["orderId"], listing["orderId"], "the order-book document id")
		assert.Equal(t, l["timestamp"], listing["timestamp"], "the real creation time")
		assert.Nil(t, listing["tx"], "listing.tx is always null on the token endpoint")
		owner := obj(d["owner"])
		assert.Equal(t, "wallet", owner["kind"])
		assert.Equal(t, l["seller"], owner["address"], "a listed token's owner is the seller")
		assert.Nil(t, owner["label"])
	})
	t.Run("Solana token comes from the overlay", func(t *testing.T) {
		id := e.id(t, sim.EdgeLegacySolanaIDs)
		l := native(t, id)
		mint := l["mint"].(string)
		var colMint string
		for _, v := range arr(e.get(t, "/v1/collections?limit=100&chain=solana").JSON["data"]) {
			if obj(v)["id"] == id {
				colMint = obj(v)["contractAddress"].(string)
			}
		}
		require.NotEmpty(t, colMint)
		d := token(t, "/v1/tokens/solana/"+colMint+"/"+mint)
		assert.Equal(t, mint, d["mint"], "base58 case preserved")
		assert.Nil(t, d["contractAddress"])
		assert.Nil(t, d["tokenId"])
		listing := obj(d["listing"])
		require.NotNil(t, listing)
		assert.Nil(t, listing["tx"])
		ts, err := time.Parse(time.RFC3339, listing["timestamp"].(string))
		require.NoError(t, err)
		assert.WithinDuration(t, time.Now(), ts, time.Minute, "overlay listings are stamped at response time")
		owner := obj(d["owner"])
		assert.Equal(t, "wallet", owner["kind"])
		assert.NotEqual(t, sim.EscrowWallet, owner["address"], "never the custody wallet")

		t.Run("swapped mints are 404", func(t *testing.T) {
			assertError(t, e.get(t, "/v1/tokens/solana/"+mint+"/"+colMint), 404, "not_found")
		})
		t.Run("case-folded mint is 404", func(t *testing.T) {
			assertError(t, e.get(t, "/v1/tokens/solana/"+colMint+"/"+strings.ToLower(mint)), 404, "not_found")
		})
	})
	t.Run("validation table, in SPEC's order", func(t *testing.T) {
		evm := "0x" + strings.Repeat("ab", 20)
		sol := "So11111111111111111111111111111111111111112"
		tests := []struct {
			name, path string
			status     int
			code       string
		}{
			{"EVM chain with a non-0x address", "/v1/tokens/ethereum/" + sol + "/1", 400, "bad_request"},
			{"solana with a 0x address", "/v1/tokens/solana/" + evm + "/" + sol, 400, "bad_request"},
			{"unknown chain", "/v1/tokens/tezos/" + evm + "/1", 400, "bad_request"},
			{"address neither 0x nor base58", "/v1/tokens/solana/not*base58/" + sol, 400, "bad_request"},
			{"short 0x address", "/v1/tokens/base/0xabc/1", 400, "bad_request"},
			{"well-formed, not indexed", "/v1/tokens/ethereum/" + evm + "/1", 404, "not_found"},
			{"invalid Solana asset mint is only length-checked", "/v1/tokens/solana/" + sol + "/0OIl", 404, "not_found"},
			{"tokenId over 100 characters", "/v1/tokens/ethereum/" + evm + "/" + strings.Repeat("9", 101), 404, "not_found"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				assertError(t, e.get(t, tt.path), tt.status, tt.code)
			})
		}
	})
}

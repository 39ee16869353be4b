package main

import (
	"fmt"
	"math/big"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const testCursorKey = "e2e-test-cursor-key-0123456789"

// TestSliceEndToEnd runs `marketd all` in-process and checks the four
// endpoints of the walking skeleton against SPEC's body rules.
func TestSliceEndToEnd(t *testing.T) {
	m := MustRunMain(t, "--sim-collections", "60", "--cursor-key", testCursorKey)

	t.Run("index", func(t *testing.T) {
		r := get(t, m.API+"/v1")
		require.Equal(t, 200, r.Status, "%s", r.Body)
		assertCORS(t, r)
		assert.Equal(t, "public, s-maxage=3600, stale-while-revalidate=7200", r.Header.Get("Cache-Control"))
		d := obj(r.JSON["data"])
		require.NotNil(t, d, "index is wrapped in data")
		assert.NotEmpty(t, d["name"])
		assert.NotEmpty(t, arr(d["endpoints"]))
		assert.NotContains(t, r.JSON, "meta")
	})

	var collections []any
	t.Run("collections default page", func(t *testing.T) {
		r := get(t, m.API+"/v1/collections")
		require.Equal(t, 200, r.Status, "%s", r.Body)
		assertCORS(t, r)
		assert.Equal(t, "public, s-maxage=60, stale-while-revalidate=120", r.Header.Get("Cache-Control"))
		collections = arr(r.JSON["data"])
		assert.Len(t, collections, 25, "default limit is 25")
		p := obj(r.JSON["pagination"])
		require.NotNil(t, p)
		assert.Equal(t, true, p["hasMore"], "60 collections do not fit one page")
		assert.IsType(t, "", p["nextCursor"])
		assert.NotContains(t, r.JSON, "meta", "collections has no degraded mode")
		for _, c := range collections {
			cs := obj(c)
			for _, f := range []string{"id", "chain", "contractAddress", "name", "slug", "image", "banner", "description", "tokenStandard", "royaltyBps", "stats"} {
				assert.Contains(t, cs, f)
			}
			id := cs["id"].(string)
			assert.Equal(t, strings.ToLower(id), id, "id is lowercase")
			assert.NotEmpty(t, cs["name"], "name falls back to the id")
			st := obj(cs["stats"])
			for _, f := range []string{"floor", "volumeAllTime", "supply", "owners"} {
				assert.Contains(t, st, f)
			}
			if cs["chain"] == nil {
				assert.Nil(t, st["floor"], "no floor without a chain")
			} else {
				assert.True(t, chains[cs["chain"].(string)])
				if st["floor"] != nil {
					assertPrice(t, cs["chain"].(string), st["floor"])
				}
			}
			if ca, ok := cs["contractAddress"].(string); ok && cs["chain"] != "solana" && cs["chain"] != nil {
				assert.Regexp(t, evmAddr, ca)
			}
		}
	})
	require.NotEmpty(t, collections)

	t.Run("collection detail by every id form", func(t *testing.T) {
		var checked int
		for _, c := range collections {
			cs := obj(c)
			id := cs["id"].(string)
			forms := map[string]string{"document id": id}
			if s, ok := cs["slug"].(string); ok {
				forms["slug"] = s
			}
			if a, ok := cs["contractAddress"].(string); ok && cs["chain"] != nil {
				forms["address"] = a
				if cs["chain"] != "solana" {
					forms["checksum-cased address"] = "0x" + strings.ToUpper(a[2:])
				}
			}
			for form, v := range forms {
				r := get(t, m.API+"/v1/collections/"+url.PathEscape(v))
				if !assert.Equal(t, 200, r.Status, "%s %q: %s", form, v, r.Body) {
					continue
				}
				d := obj(r.JSON["data"])
				switch form {
				case "document id":
					assert.Equal(t, id, d["id"], form)
				case "address", "checksum-cased address":
					// An address can exist on two chains: it resolves to one of them.
					assert.True(t, strings.HasSuffix(d["id"].(string), "_"+strings.ToLower(forms["address"])), "%s %q resolved to %v", form, v, d["id"])
				}
				assert.Equal(t, "public, s-maxage=30, stale-while-revalidate=60", r.Header.Get("Cache-Control"))
				st := obj(d["stats"])
				require.NotNil(t, st)
				assert.NotContains(t, st, "volumeAllTime", "detail stats are replaced wholesale")
				for _, f := range []string{"floor", "volume", "sales", "supply", "owners", "listedCount"} {
					assert.Contains(t, st, f)
				}
				for _, w := range []string{"allTime", "sevenDay", "twentyFourHour"} {
					assert.Contains(t, obj(st["volume"]), w)
					assert.Contains(t, obj(st["sales"]), w)
				}
				assert.Equal(t, false, d["stale"], "healthy sources: not stale")
				checked++
			}
		}
		assert.Greater(t, checked, 25)
	})

	t.Run("unknown collection is 404 not_found", func(t *testing.T) {
		r := get(t, m.API+"/v1/collections/no-such-collection-anywhere")
		assert.Equal(t, 404, r.Status)
		assert.Equal(t, "not_found", obj(r.JSON["error"])["code"])
		assert.Equal(t, "no-store", r.Header.Get("Cache-Control"))
		assertCORS(t, r)
	})

	t.Run("listings first page", func(t *testing.T) {
		var seen int
		for _, c := range collections {
			cs := obj(c)
			if cs["chain"] == nil {
				continue
			}
			r := get(t, m.API+"/v1/collections/"+url.PathEscape(cs["id"].(string))+"/listings")
			require.Equal(t, 200, r.Status, "%s", r.Body)
			assert.Equal(t, "public, s-maxage=15, stale-while-revalidate=30", r.Header.Get("Cache-Control"))
			assert.NotContains(t, r.JSON, "meta", "healthy sources: no meta")
			items := arr(r.JSON["data"])
			assert.LessOrEqual(t, len(items), 25)
			assertListingsOrdered(t, items)
			seen += len(items)
		}
		assert.Greater(t, seen, 100, "the demo market has listings")
	})
}

// assertListingsOrdered checks listings rules 2 and 3 on one page: every row
// a valid active MarketItem, one row per asset, ascending by price with
// orderId as tiebreak, buyer null.
func assertListingsOrdered(t *testing.T, items []any) {
	t.Helper()
	assets := map[string]bool{}
	var prevDec float64
	var prevRaw *big.Int
	var prevOrder string
	now := time.Now()
	for i, v := range items {
		assertMarketItem(t, v)
		it := obj(v)
		assert.Equal(t, "active", it["status"])
		assert.Nil(t, it["buyer"], "buyer is null on listings")
		if e, ok := it["expiresAt"].(string); ok {
			exp, err := time.Parse(time.RFC3339, e)
			require.NoError(t, err)
			assert.True(t, exp.After(now.Add(-time.Minute)), "expired rows are excluded")
		}
		key := fmt.Sprint(it["chain"], it["contractAddress"], it["tokenId"], it["mint"])
		assert.False(t, assets[key], "asset %s listed once", key)
		assets[key] = true
		p := obj(it["price"])
		dec := p["decimal"].(float64)
		raw, _ := new(big.Int).SetString(p["raw"].(string), 10)
		order, _ := it["orderId"].(string)
		if i > 0 {
			assert.GreaterOrEqual(t, dec, prevDec, "sorted by price.decimal")
			if dec == prevDec && raw.Cmp(prevRaw) == 0 {
				assert.GreaterOrEqual(t, order, prevOrder, "orderId breaks ties")
			}
		}
		prevDec, prevRaw, prevOrder = dec, raw, order
	}
}

// TestRestartServesPreviousViews stops a node and starts it again on the same
// data dir with every upstream unreachable: it serves the views it had at
// once, without a new cycle (and so does not report ready).
func TestRestartServesPreviousViews(t *testing.T) {
	dir := t.TempDir()
	first := MustRunMain(t, "--data-dir", dir, "--sim-collections", "60", "--cursor-key", testCursorKey)
	before := get(t, first.API+"/v1/collections?limit=5")
	require.Equal(t, 200, before.Status)
	first.Stop(t)

	args := append([]string{"--data-dir", dir, "--sim-collections", "60", "--cursor-key", testCursorKey}, unreachableSources()...)
	second := StartMain(t, args...)
	after := get(t, second.API+"/v1/collections?limit=5")
	require.Equal(t, 200, after.Status, "%s", after.Body)
	// usd aside: the restarted node's price feed is unreachable too, and
	// once that poll is projected usd is null (SPEC §2), as it should be.
	assert.Equal(t, without(before.JSON["data"], "usd"), without(after.JSON["data"], "usd"), "the previous views are served at once")
}

// without returns v with every member named one of keys removed, at any
// depth.
func without(v any, keys ...string) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, c := range x {
			if !slices.Contains(keys, k) {
				out[k] = without(c, keys...)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, c := range x {
			out[i] = without(c, keys...)
		}
		return out
	}
	return v
}

// unreachableSources points every upstream at a closed port.
func unreachableSources() []string {
	var args []string
	for _, s := range []string{"order-book", "indexer-mirror", "indexer-stats", "analytics", "collection-index", "price-feed", "sales"} {
		args = append(args, "--source-"+s+"-url", "http://127.0.0.1:1/"+s, "--source-"+s+"-timeout", "1s")
	}
	return args
}

// TestCollectionIndexNeverReadIs502: a fresh node whose collection index
// has never answered does not know any collection; /v1/collections is 502
// upstream_error (SPEC §7), never an empty 200.
func TestCollectionIndexNeverReadIs502(t *testing.T) {
	m := StartMain(t, append([]string{"--cursor-key", testCursorKey}, unreachableSources()...)...)
	r := get(t, m.API+"/v1/collections")
	assert.Equal(t, 502, r.Status, "%s", r.Body)
	assert.Equal(t, "upstream_error", obj(r.JSON["error"])["code"])
	assert.Equal(t, "no-store", r.Header.Get("Cache-Control"))
}

package main

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/marketd/marketd/ingest/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestProtocolEndToEnd checks methods, CORS, caching headers, ETags and
// the error envelope on a live node.
func TestProtocolEndToEnd(t *testing.T) {
	e := newAPIEnv(t)
	id := e.id(t, sim.EdgeDualListed)
	routes := []string{"/v1", "/v1/openapi.json", "/v1/collections", collection(id), collection(id, "floor"),
		collection(id, "listings"), collection(id, "sales")}

	t.Run("other methods are 405 with Allow and the error body", func(t *testing.T) {
		for _, p := range routes {
			for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch} {
				r := do(t, m, e.API+p, nil)
				require.Equal(t, 405, r.Status, "%s %s", m, p)
				assert.Equal(t, "bad_request", obj(r.JSON["error"])["code"])
				assert.Contains(t, r.Header.Get("Allow"), "GET")
				assert.Contains(t, r.Header.Get("Allow"), "OPTIONS")
				assertCORS(t, r)
			}
		}
	})
	t.Run("OPTIONS preflight on every route is 204 with CORS", func(t *testing.T) {
		for _, p := range routes {
			r := do(t, http.MethodOptions, e.API+p, nil, "Origin", "https://example.org", "Access-Control-Request-Method", "GET")
			assert.Equal(t, 204, r.Status, p)
			assertCORS(t, r)
		}
	})
	t.Run("CORS on success, errors and without Origin", func(t *testing.T) {
		for _, p := range append(routes, "/v1/nope", collection("nope-nope")) {
			assertCORS(t, e.get(t, p))
		}
	})
	t.Run("unknown route is a 404 error body", func(t *testing.T) {
		assertError(t, e.get(t, "/v1/nope"), 404, "not_found")
	})
	t.Run("Authorization changes nothing", func(t *testing.T) {
		a := e.get(t, collection(id))
		b := e.get(t, collection(id), "Authorization", "Bearer whatever")
		assert.Equal(t, a.Status, b.Status)
		assert.Equal(t, a.JSON, b.JSON)
	})
	t.Run("openapi.json is bare OpenAPI 3.1 at version 1.0.0", func(t *testing.T) {
		r := e.get(t, "/v1/openapi.json")
		require.Equal(t, 200, r.Status)
		assert.NotContains(t, r.JSON, "data")
		assert.True(t, strings.HasPrefix(r.JSON["openapi"].(string), "3.1"))
		assert.Equal(t, "1.0.0", obj(r.JSON["info"])["version"])
		assert.Equal(t, "public, s-maxage=3600, stale-while-revalidate=7200", r.Header.Get("Cache-Control"))
	})
	t.Run("cache headers, ETag and 304", func(t *testing.T) {
		swr := map[string]int{"/v1": 3600, "/v1/collections": 60, collection(id): 30, collection(id, "floor"): 10,
			collection(id, "listings"): 15, collection(id, "sales"): 30}
		for p, n := range swr {
			r := e.get(t, p)
			require.Equal(t, 200, r.Status, p)
			assert.Equal(t, "public, s-maxage="+strconv.Itoa(n)+", stale-while-revalidate="+strconv.Itoa(2*n), r.Header.Get("Cache-Control"), p)
			assert.Equal(t, "max-age="+strconv.Itoa(n)+", stale-while-revalidate="+strconv.Itoa(2*n), r.Header.Get("CDN-Cache-Control"), p)
			assert.Empty(t, r.Header.Get("X-RateLimit-Limit"), "rate-limit headers only on 429")
			tag := r.Header.Get("ETag")
			require.NotEmpty(t, tag, p)
			nm := e.get(t, p, "If-None-Match", tag)
			assert.Equal(t, 304, nm.Status, p)
			assert.Equal(t, tag, nm.Header.Get("ETag"))
			assert.Equal(t, r.Header.Get("Cache-Control"), nm.Header.Get("Cache-Control"))
			assert.Empty(t, nm.Body)
		}
	})
	t.Run("ETag changes when the view changes", func(t *testing.T) {
		lag := e.id(t, sim.EdgeMirrorLag) // changes every tick
		paths := []string{collection(lag, "listings"), collection(lag, "sales")}
		before := map[string]string{}
		for _, p := range paths {
			before[p] = e.get(t, p).Header.Get("ETag")
		}
		e.tick(t)
		e.cycle(t)
		for _, p := range paths {
			after := e.get(t, p)
			assert.NotEqual(t, before[p], after.Header.Get("ETag"), p)
			assert.Equal(t, 200, e.get(t, p, "If-None-Match", before[p]).Status, "a stale tag gets the new body: %s", p)
		}
	})
}

// TestCollectionsBrowseEndToEnd checks /v1/collections parameters, paging
// and the chain filter.
func TestCollectionsBrowseEndToEnd(t *testing.T) {
	e := newAPIEnv(t)
	walk := func(t *testing.T, query string) []any {
		t.Helper()
		var all []any
		next := ""
		for page := 0; page < 100; page++ {
			path := "/v1/collections?limit=7" + query
			if next != "" {
				path += "&cursor=" + next
			}
			r := e.get(t, path)
			require.Equal(t, 200, r.Status, "%s", r.Body)
			all = append(all, arr(r.JSON["data"])...)
			p := obj(r.JSON["pagination"])
			if p["hasMore"] == false {
				return all
			}
			next = p["nextCursor"].(string)
		}
		t.Fatal("walk did not end")
		return nil
	}
	for _, sort := range []string{"", "&sort=volume", "&sort=floor", "&sort=recent"} {
		t.Run("walk"+sort, func(t *testing.T) {
			items := walk(t, sort)
			ids := map[string]bool{}
			for _, v := range items {
				id := obj(v)["id"].(string)
				assert.False(t, ids[id], "%s once", id)
				ids[id] = true
			}
			assert.Equal(t, 40, len(ids), "every collection exactly once")
		})
	}
	t.Run("chain filter", func(t *testing.T) {
		for _, c := range []string{"solana", "ethereum", "base", "polygon", "apechain", "robinhood"} {
			for _, v := range walk(t, "&chain="+c) {
				assert.Equal(t, c, obj(v)["chain"])
			}
		}
	})
	t.Run("bad parameters are 400", func(t *testing.T) {
		for _, q := range []string{"chain=tezos", "chain=Solana", "sort=price", "limit=0", "limit=101", "cursor=", "cursor=null", "cursor=abc"} {
			assertError(t, e.get(t, "/v1/collections?"+q), 400, "bad_request")
		}
	})
	t.Run("a cursor is bound to its sort and chain", func(t *testing.T) {
		cur := obj(e.get(t, "/v1/collections?limit=2&sort=volume").JSON["pagination"])["nextCursor"].(string)
		assert.Equal(t, 200, e.get(t, "/v1/collections?limit=2&sort=volume&cursor="+cur).Status)
		assertError(t, e.get(t, "/v1/collections?limit=2&sort=floor&cursor="+cur), 400, "bad_request")
	})
}

// TestRateLimitsEndToEnd checks SPEC §8: two independent per-IP buckets in
// fixed wall-clock minutes, headers only on 429.
func TestRateLimitsEndToEnd(t *testing.T) {
	m := MustRunMain(t, "--sim-seed", e2eSeed, "--sim-collections", "20", "--rate-list", "3", "--rate-item", "5", "--cursor-key", testCursorKey)
	// The windows are wall-clock minutes: start well inside one so that the
	// whole check falls in the same window.
	if s := time.Now().Second(); s > 50 {
		time.Sleep(time.Duration(61-s) * time.Second)
	}
	for i := 0; i < 3; i++ {
		r := get(t, m.API+"/v1/collections?limit=1")
		require.Equal(t, 200, r.Status)
		assert.Empty(t, r.Header.Get("X-RateLimit-Remaining"), "no rate-limit headers on success")
	}
	r := get(t, m.API+"/v1/collections?limit=1")
	assertError(t, r, 429, "rate_limited")
	assert.Equal(t, "3", r.Header.Get("X-RateLimit-Limit"))
	assert.Equal(t, "0", r.Header.Get("X-RateLimit-Remaining"))
	reset, err := time.Parse(time.RFC3339, r.Header.Get("X-RateLimit-Reset"))
	require.NoError(t, err, "Reset is ISO 8601")
	assert.Equal(t, 0, reset.Second(), "windows are aligned to the wall-clock minute")
	ra, err := strconv.Atoi(r.Header.Get("Retry-After"))
	require.NoError(t, err)
	assert.True(t, ra >= 1 && ra <= 60)
	// The list bucket is spent; the item bucket is independent.
	assert.Equal(t, 200, get(t, m.API+"/v1").Status)
	// listings and sales count against the same list bucket.
	assert.Equal(t, 429, get(t, m.API+"/v1/collections/x/listings").Status)
	for i := 0; i < 4; i++ {
		get(t, m.API+"/v1")
	}
	r = get(t, m.API+"/v1/openapi.json")
	assertError(t, r, 429, "rate_limited")
	assert.Equal(t, "5", r.Header.Get("X-RateLimit-Limit"))
}

package httpapi

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel"
)

// TestBatchTokens covers GET /v1/tokens?ids=...: each id answered in
// order with its TokenDetail or the error the single endpoint gives that
// path, and SPEC's 400 for a list that is malformed as a whole.
func TestBatchTokens(t *testing.T) {
	evm := "ethereum/" + testContract + "/1"
	sol := "solana/" + solMint + "/" + solAsset
	tests := []struct {
		name   string
		ids    string // the raw query value; "-" omits ids
		status int
		want   []string // per item: "ok:<chain>" or the error code
		lookup int      // Reader.Token calls
	}{
		{"one evm", evm, 200, []string{"ok:ethereum"}, 1},
		{"evm, solana, repeat", evm + "," + sol + "," + evm, 200, []string{"ok:ethereum", "ok:solana", "ok:ethereum"}, 3},
		{"address case folded as on the single endpoint", "EtHeReUm/" + strings.ToUpper(testContract[:2]) + testContract[2:] + "/1", 200, []string{"ok:ethereum"}, 1},
		{"not indexed is a per-id not_found", evm + ",ethereum/" + testContract + "/2", 200, []string{"ok:ethereum", "not_found"}, 2},
		{"bad chain is a per-id bad_request", "bitcoin/" + testContract + "/1," + evm, 200, []string{"bad_request", "ok:ethereum"}, 1},
		{"solana with 0x address", "solana/" + testContract + "/" + solAsset, 200, []string{"bad_request"}, 0},
		{"long tokenId is a per-id not_found", "ethereum/" + testContract + "/" + strings.Repeat("9", 101), 200, []string{"not_found"}, 0},
		{"50 ids", strings.TrimSuffix(strings.Repeat(evm+",", 50), ","), 200, nil, 50},
		{"51 ids", strings.TrimSuffix(strings.Repeat(evm+",", 51), ","), 400, nil, 0},
		{"no ids parameter", "-", 400, nil, 0},
		{"empty ids", "", 400, nil, 0},
		{"trailing comma", evm + ",", 400, nil, 0},
		{"empty id in the middle", evm + ",," + evm, 400, nil, 0},
		{"two segments", "ethereum/" + testContract, 400, nil, 0},
		{"four segments", evm + "/x", 400, nil, 0},
		{"empty segment", "ethereum//1", 400, nil, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := MustHarness(t, nil)
			h.r.tokens["ethereum|"+testContract+"|1"] = tokenView(1)
			h.r.tokens["solana|"+solMint+"|"+solAsset] = overlayTokenView(1)
			target := "/v1/tokens"
			if tc.ids != "-" {
				target += "?ids=" + tc.ids
			}
			res := h.get(target)
			require.Equal(t, tc.status, res.status, "%s", res.body)
			assert.Equal(t, tc.lookup, h.r.count("Token"))
			if tc.status != 200 {
				assert.Equal(t, "bad_request", res.errorCode(t))
				assert.Equal(t, "no-store", res.header.Get("Cache-Control"))
				return
			}
			assert.Equal(t, "public, s-maxage=30, stale-while-revalidate=60", res.header.Get("Cache-Control"))
			items := data(t, res)
			if tc.want == nil {
				assert.Len(t, items, tc.lookup)
				return
			}
			require.Len(t, items, len(tc.want))
			for i, w := range tc.want {
				m := items[i].(map[string]any)
				if chain, ok := strings.CutPrefix(w, "ok:"); ok {
					assert.Equal(t, chain, m["chain"], "item %d", i)
					continue
				}
				e, ok := m["error"].(map[string]any)
				require.True(t, ok, "item %d is not an error: %v", i, m)
				assert.Equal(t, w, e["code"], "item %d", i)
			}
		})
	}
}

// TestBatchTokensETag: a batch of found tokens carries an ETag that
// revalidates, and changes with a token's version; one with an error item
// carries none.
func TestBatchTokensETag(t *testing.T) {
	h := MustHarness(t, nil)
	h.r.tokens["ethereum|"+testContract+"|1"] = tokenView(1)
	target := "/v1/tokens?ids=ethereum/" + testContract + "/1"
	first := h.get(target)
	require.Equal(t, 200, first.status)
	tag := first.header.Get("ETag")
	require.NotEmpty(t, tag)
	res := h.get(target, "If-None-Match", tag)
	assert.Equal(t, http.StatusNotModified, res.status)
	assert.Empty(t, res.body)

	h.r.tokens["ethereum|"+testContract+"|1"] = tokenView(2)
	res = h.get(target, "If-None-Match", tag)
	assert.Equal(t, 200, res.status)
	assert.NotEqual(t, tag, res.header.Get("ETag"))

	res = h.get(target + ",ethereum/" + testContract + "/9")
	assert.Equal(t, 200, res.status)
	assert.Empty(t, res.header.Get("ETag"))
}

// TestBatchTokensOneItemCount: however many ids, a batch is one request
// in the item bucket.
func TestBatchTokensOneItemCount(t *testing.T) {
	h := MustHarness(t, func(c *Config) { c.RateItem = 2 })
	h.r.tokens["ethereum|"+testContract+"|1"] = tokenView(1)
	target := "/v1/tokens?ids=" + strings.TrimSuffix(strings.Repeat("ethereum/"+testContract+"/1,", 50), ",")
	for i := 0; i < 2; i++ {
		require.Equal(t, 200, h.get(target).status, "request %d", i)
	}
	res := h.get(target)
	assert.Equal(t, http.StatusTooManyRequests, res.status)
	assert.Equal(t, "2", res.header.Get("X-RateLimit-Limit"))
}

// TestBatchTokensNodeFailure: a node failure for one id is that id's
// not_found (the single endpoint never answers 502), not the request's.
func TestBatchTokensNodeFailure(t *testing.T) {
	h := MustHarness(t, nil)
	h.r.setErr("Token", readmodel.Errorf(readmodel.Internal, "disk"))
	res := h.get("/v1/tokens?ids=ethereum/" + testContract + "/1")
	require.Equal(t, 200, res.status)
	items := data(t, res)
	require.Len(t, items, 1)
	assert.Equal(t, "not_found", items[0].(map[string]any)["error"].(map[string]any)["code"])
}

// TestBatchTokensMemo: a hot batch of found tokens is answered from the
// page memo without reading a token while TokensVersion holds; a token
// that changed, a view whose Until passed, or views that cannot give a
// version (being rebuilt) are read again, never the remembered body.
func TestBatchTokensMemo(t *testing.T) {
	k := "ethereum|" + testContract + "|1"
	target := "/v1/tokens?ids=ethereum/" + testContract + "/1,ethereum/" + testContract + "/1"
	hot := func(t *testing.T, h *harness) string { // three requests: the third from the memo
		t.Helper()
		var bodies []string
		for range 3 {
			res := h.get(target)
			require.Equal(t, 200, res.status)
			bodies = append(bodies, string(res.body))
		}
		require.Equal(t, bodies[0], bodies[2])
		return bodies[2]
	}
	tests := []struct {
		name  string
		until time.Duration // the view's Until after the harness clock; 0: none
		// then changes the reader or the clock after the memo is hot
		then     func(h *harness)
		reread   bool   // Token is asked again by the next request
		contains string // and its body holds this
	}{
		{"nothing moved", 0, func(*harness) {}, false, `"name":"#1"`},
		{"token changed", 0, func(h *harness) {
			changed := tokenView(2)
			changed.Body.Head = []byte(strings.Replace(string(changed.Body.Head), `"name":"#1"`, `"name":"#1 renamed"`, 1))
			h.r.mu.Lock()
			h.r.tokens[k] = changed
			h.r.mu.Unlock()
		}, true, `"name":"#1 renamed"`},
		{"before the view's Until", time.Minute, func(h *harness) { h.clock.Add(59 * time.Second) }, false, `"name":"#1"`},
		{"the view's Until passed", time.Minute, func(h *harness) { h.clock.Add(time.Minute) }, true, `"name":"#1"`},
		{"views being rebuilt", 0, func(h *harness) {
			h.r.mu.Lock()
			h.r.tokensUnversioned = true
			h.r.mu.Unlock()
		}, true, `"name":"#1"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := MustHarness(t, nil)
			tv := tokenView(1)
			if tc.until != 0 {
				tv.Until = h.clock.Now().Add(tc.until).UnixNano()
			}
			h.r.tokens[k] = tv
			hot(t, h)
			assert.Equal(t, 1.0, memoHits(h), "the third request is answered from the memo")
			reads := h.r.count("Token")
			tc.then(h)
			res := h.get(target)
			require.Equal(t, 200, res.status)
			assert.Contains(t, string(res.body), tc.contains)
			if tc.reread {
				assert.Greater(t, h.r.count("Token"), reads, "the tokens are read again")
			} else {
				assert.Equal(t, reads, h.r.count("Token"), "answered without reading a token")
				assert.Equal(t, 2.0, memoHits(h))
			}
		})
	}
}

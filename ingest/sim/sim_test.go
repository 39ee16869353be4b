package sim_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/ingest/sim"
	"github.com/marketd/marketd/ingest/source"
	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/normalize"
)

var anchor = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

// MustServe starts s's handler on an httptest server closed at cleanup.
func MustServe(t *testing.T, s *sim.Sim) string {
	t.Helper()
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		require.NoError(t, s.Close(context.Background()))
		srv.Close()
	})
	return srv.URL
}

func get(t *testing.T, url string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, b
}

func post(t *testing.T, url, body string) (int, []byte) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, b
}

var endpoints = []string{
	"/collection-index/collections", "/price-feed/rates", "/order-book/listings", "/indexer-mirror/listings",
	"/indexer-mirror/tokens", "/indexer-mirror/tokens?since=0", "/indexer-stats/stats", "/analytics/analytics",
	"/sales/sales", "/sales/sales?limit=50&cursor=l.1.0.0",
}

func TestDeterminism(t *testing.T) {
	opts := sim.Options{Seed: 42, Collections: 20, TokensPerCollection: 40, Anchor: anchor}
	a, b := sim.New(opts), sim.New(opts)
	ua, ub := MustServe(t, a), MustServe(t, b)
	other := MustServe(t, sim.New(sim.Options{Seed: 43, Collections: 20, TokensPerCollection: 40, Anchor: anchor}))
	for tick := 0; tick < 3; tick++ {
		for _, ep := range endpoints {
			sa, ba := get(t, ua+ep)
			sb, bb := get(t, ub+ep)
			require.Equal(t, http.StatusOK, sa, "%s: %s", ep, ba)
			assert.Equal(t, sa, sb)
			assert.Equal(t, ba, bb, "tick %d %s: same seed, same bytes", tick, ep)
			if ep == "/order-book/listings" {
				_, bo := get(t, other+ep)
				assert.NotEqual(t, ba, bo, "another seed differs")
			}
		}
		post(t, ua+"/_sim/tick", "")
		post(t, ub+"/_sim/tick", "")
		post(t, other+"/_sim/tick", "")
	}
}

func TestControlAPI(t *testing.T) {
	s := sim.New(sim.Options{Collections: 16, Anchor: anchor})
	u := MustServe(t, s)
	tests := []struct {
		name   string
		method string
		path   string
		body   string
		status int
		want   string
	}{
		{name: "set error", method: "POST", path: "/_sim/faults", body: `{"source":"order-book","mode":"error"}`, status: 200, want: `"order-book":"error"`},
		{name: "error answers 500", method: "GET", path: "/order-book/listings", status: 500},
		{name: "other sources unaffected", method: "GET", path: "/indexer-mirror/listings", status: 200},
		{name: "show faults", method: "GET", path: "/_sim/faults", status: 200, want: `"order-book":"error"`},
		{name: "reset", method: "POST", path: "/_sim/faults/reset", status: 200, want: `"order-book":"ok"`},
		{name: "after reset", method: "GET", path: "/order-book/listings", status: 200},
		{name: "unknown source", method: "POST", path: "/_sim/faults", body: `{"source":"nope","mode":"error"}`, status: 400, want: `"code":"bad_request"`},
		{name: "unknown mode", method: "POST", path: "/_sim/faults", body: `{"source":"sales","mode":"slow"}`, status: 400, want: `"code":"bad_request"`},
		{name: "invalid json", method: "POST", path: "/_sim/faults", body: `{`, status: 400, want: `"code":"bad_request"`},
		{name: "tick", method: "POST", path: "/_sim/tick", status: 200, want: `"tick":1`},
		{name: "bad cursor", method: "GET", path: "/order-book/listings?cursor=zz", status: 400, want: `"code":"bad_request"`},
		{name: "bad limit", method: "GET", path: "/analytics/analytics?limit=0", status: 400},
		{name: "bad sales cursor", method: "GET", path: "/sales/sales?cursor=l.99.0.0", status: 400},
		{name: "bad since", method: "GET", path: "/indexer-mirror/tokens?since=x", status: 400},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var status int
			var body []byte
			if tc.method == "POST" {
				status, body = post(t, u+tc.path, tc.body)
			} else {
				status, body = get(t, u+tc.path)
			}
			assert.Equal(t, tc.status, status, "%s", body)
			assert.Contains(t, string(body), tc.want)
		})
	}
}

func TestTimeoutFaultReleasedByClose(t *testing.T) {
	s := sim.New(sim.Options{Collections: 16, Anchor: anchor})
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	s.SetFault(readmodel.SourceAnalytics, sim.ModeTimeout)

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	c := source.NewClient(readmodel.SourceAnalytics, srv.URL+"/analytics", time.Minute, nil)
	err := c.Analytics(ctx, 0, func(source.Rows[normalize.RawAnalytics]) error { return nil })
	require.Error(t, err)
	assert.Equal(t, source.ClassTimeout, source.ErrorClass(err))

	done := make(chan error, 1)
	go func() {
		resp, err := http.Get(srv.URL + "/analytics/analytics")
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	require.NoError(t, s.Close(context.Background()))
	require.NoError(t, <-done, "Close releases held requests") // srv.Close would hang otherwise
}

func TestEdgeCases(t *testing.T) {
	s := sim.New(sim.Options{Seed: 7, Collections: 20, Anchor: anchor})
	u := MustServe(t, s)
	edges := s.EdgeCases()
	require.Len(t, edges, 16)

	groups := map[string][]normalize.RawListing{}
	for _, src := range []string{"order-book", "indexer-mirror"} {
		_, b := get(t, u+"/"+src+"/listings?limit=100000")
		var p source.Page[source.Group[normalize.RawListing]]
		require.NoError(t, json.Unmarshal(b, &p))
		for _, g := range p.Items {
			groups[src+"|"+g.CollectionID] = g.Rows
		}
	}
	// More than 300 listings in one collection.
	many := edges[sim.EdgeManyListings]
	assert.Greater(t, len(groups["order-book|"+many])+len(groups["indexer-mirror|"+many]), 300)
	// No listings at all.
	assert.Empty(t, groups["order-book|"+edges[sim.EdgeNoListings]])
	assert.Empty(t, groups["indexer-mirror|"+edges[sim.EdgeNoListings]])
	// Legacy brand-prefixed mirror ids.
	legacy := 0
	for _, r := range groups["indexer-mirror|"+edges[sim.EdgeLegacySolanaIDs]] {
		if strings.HasPrefix(r.OrderID, normalize.LegacyOrderIDPrefix) {
			legacy++
		}
	}
	assert.Positive(t, legacy)
	// Same address on two chains.
	a, b := edges[sim.EdgeSameAddressA], edges[sim.EdgeSameAddressB]
	assert.Equal(t, strings.TrimPrefix(a, "ethereum_"), strings.TrimPrefix(b, "base_"))
	// Dual-listed token: native and external rows for the same token at different prices.
	dual := edges[sim.EdgeDualListed]
	var native, external string
	for _, r := range groups["order-book|"+dual] {
		if r.TokenID == "1" {
			native = string(r.Price)
		}
	}
	for _, r := range groups["indexer-mirror|"+dual] {
		if r.TokenID == "1" && r.Marketplace != readmodel.MarketplaceNative {
			external = string(r.Price)
		}
	}
	assert.NotEmpty(t, native)
	assert.NotEmpty(t, external)
	assert.NotEqual(t, native, external)
	// Mirror lag: the mirror's native row for token #1 differs from the order book's.
	lag := edges[sim.EdgeMirrorLag]
	var ob, mir string
	for _, r := range groups["order-book|"+lag] {
		if r.TokenID == "1" {
			ob = r.OrderID
		}
	}
	for _, r := range groups["indexer-mirror|"+lag] {
		if r.TokenID == "1" && r.Marketplace == readmodel.MarketplaceNative {
			mir = r.OrderID
		}
	}
	assert.NotEmpty(t, ob)
	assert.NotEqual(t, ob, mir)

	// Collections: missing and unknown chains, no contract.
	_, cb := get(t, u+"/collection-index/collections")
	var cp source.Page[normalize.RawCollection]
	require.NoError(t, json.Unmarshal(cb, &cp))
	byID := map[string]normalize.RawCollection{}
	chains := map[string]bool{}
	for _, d := range cp.Items {
		byID[d.ID] = d
		chains[d.Chain] = true
	}
	assert.Equal(t, "", byID[edges[sim.EdgeChainMissing]].Chain)
	assert.Equal(t, "tezos", byID[edges[sim.EdgeChainUnknown]].Chain)
	assert.Equal(t, "", byID[edges[sim.EdgeNoContract]].Contract)
	for _, c := range readmodel.Chains {
		if c != readmodel.Robinhood && c != readmodel.Solana { // a 20-collection market need not hit all
			assert.True(t, chains[string(c)], "chain %s present", c)
		}
	}

	// Sales: legacy rows, uninterpretable prices.
	_, sb := get(t, u+"/sales/sales?limit=100000")
	var sp source.Page[normalize.RawSale]
	require.NoError(t, json.Unmarshal(sb, &sp))
	var legacyRows, bad int
	for _, r := range sp.Items {
		if r.CollectionID == edges[sim.EdgeLegacySales] && r.BlockTime == "" {
			legacyRows++
		}
		if r.CollectionID == edges[sim.EdgeBadSalePrices] {
			if _, err := normalize.PriceRaw(string(r.Price)); err != nil {
				bad++
			}
		}
	}
	assert.Positive(t, legacyRows)
	assert.Positive(t, bad)
	assert.False(t, sp.HasMore)
}

func TestDefaultMarketCoversEveryChain(t *testing.T) {
	s := sim.New(sim.Options{Anchor: anchor})
	u := MustServe(t, s)
	_, cb := get(t, u+"/collection-index/collections?limit=1000")
	var cp source.Page[normalize.RawCollection]
	require.NoError(t, json.Unmarshal(cb, &cp))
	assert.Len(t, cp.Items, 300)
	chains := map[string]int{}
	for _, d := range cp.Items {
		chains[d.Chain]++
	}
	for _, c := range readmodel.Chains {
		assert.Positive(t, chains[string(c)], "chain %s", c)
	}
	assert.True(t, readmodel.IsBase58(sim.EscrowWallet))
}

func TestTickerRunsBetweenOpenAndClose(t *testing.T) {
	s := sim.New(sim.Options{Collections: 16, Anchor: anchor, TickEvery: time.Millisecond})
	assert.Equal(t, 0, s.Ticks())
	require.NoError(t, s.Open(context.Background()))
	require.Eventually(t, func() bool { return s.Ticks() >= 2 }, 10*time.Second, time.Millisecond)
	require.NoError(t, s.Close(context.Background()))
	n := s.Ticks()
	assert.Equal(t, n+1, s.Tick(), "after Close only explicit ticks move the market")
	assert.Equal(t, anchor.Add(time.Duration(n+1)*2*time.Minute), s.Now(), "time is Anchor + tick × Step")
}

package main

import (
	"math/big"
	"testing"
	"time"

	"github.com/marketd/marketd/ingest/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// What marketd adds to SPEC's listing rows, floors, collection details and
// tokens: fees and buyerPrice, the listings' depth (listedCount, truncated)
// and per-value freshness (asOf), end to end through `marketd all` and the
// simulator (every response is also validated against the OpenAPI document
// by the request helpers).

func bigRaw(t *testing.T, price any) *big.Int {
	t.Helper()
	n, ok := new(big.Int).SetString(obj(price)["raw"].(string), 10)
	require.True(t, ok, "raw of %v", price)
	return n
}

// checkFees checks one row's fees against SPEC's fee table and the
// collection's royaltyBps, and that buyerPrice adds them up.
func checkFees(t *testing.T, chain string, royalty any, row map[string]any) {
	t.Helper()
	ask := bigRaw(t, row["price"])
	fees := arr(row["fees"])
	require.Len(t, fees, 2, "%v", row)
	first, second := obj(fees[0]), obj(fees[1])
	wantKind, wantBps := "aggregator", 200.0
	if row["marketplace"] == "NATIVE" {
		wantKind, wantBps = "platform", 200.0
		if chain == "solana" {
			wantBps = 300
		}
	}
	assert.Equal(t, wantKind, first["kind"])
	assert.Equal(t, wantBps, first["bps"])
	assert.Equal(t, "royalty", second["kind"])
	assert.Equal(t, royalty, second["bps"], "the collection's royaltyBps")
	total := new(big.Int).Set(ask)
	for _, f := range []map[string]any{first, second} {
		if f["bps"] == nil {
			assert.Nil(t, f["amount"])
			continue
		}
		bps := big.NewInt(int64(f["bps"].(float64)))
		num := new(big.Int).Mul(ask, bps)
		want, rem := new(big.Int).QuoRem(num, big.NewInt(10000), new(big.Int))
		if rem.Sign() > 0 {
			want.Add(want, big.NewInt(1))
		}
		got := bigRaw(t, f["amount"])
		assert.Equal(t, want.String(), got.String(), "ceil(ask × %v / 10000)", f["bps"])
		total.Add(total, got)
	}
	if royalty == nil {
		assert.Nil(t, row["buyerPrice"], "royaltyBps null: the total is null, never a guess")
		return
	}
	require.NotNil(t, row["buyerPrice"])
	assert.Equal(t, total.String(), bigRaw(t, row["buyerPrice"]).String(), "buyerPrice is the ask plus the fees listed")
}

func TestFeesEndToEnd(t *testing.T) {
	e := newAPIEnv(t)
	r := e.get(t, "/v1/collections?limit=100")
	require.Equal(t, 200, r.Status)
	rows, nullRoyalty, tokenListings := 0, 0, 0
	for _, c := range arr(r.JSON["data"]) {
		id := obj(c)["id"].(string)
		d := e.get(t, collection(id))
		require.Equal(t, 200, d.Status)
		detail := obj(d.JSON["data"])
		if detail["chain"] == nil {
			continue
		}
		chain := detail["chain"].(string)
		royalty := detail["royaltyBps"]
		l := e.get(t, collection(id, "listings")+"?limit=100")
		if l.Status != 200 {
			continue
		}
		items := arr(l.JSON["data"])
		for i, it := range items {
			row := obj(it)
			checkFees(t, chain, royalty, row)
			rows++
			if royalty == nil {
				nullRoyalty++
			}
			if i >= 3 {
				continue
			}
			// The token's listing (the native row, else the overlay) is
			// charged by the same table and royalty.
			path := "/v1/tokens/" + chain + "/"
			if chain == "solana" {
				mint, _ := detail["contractAddress"].(string) // the collection mint
				if mint == "" {
					continue
				}
				path += mint + "/" + row["mint"].(string)
			} else {
				path += row["contractAddress"].(string) + "/" + row["tokenId"].(string)
			}
			tok := e.get(t, path)
			require.Equal(t, 200, tok.Status, path)
			if listing, ok := obj(tok.JSON["data"])["listing"].(map[string]any); ok {
				checkFees(t, chain, royalty, listing)
				tokenListings++
			}
		}
		f := e.get(t, collection(id, "floor"))
		require.Equal(t, 200, f.Status)
		floor := obj(f.JSON["data"])
		if len(items) == 0 {
			assert.Nil(t, floor["fees"], "%s: no listing, no fees", id)
			assert.Nil(t, floor["buyerPrice"])
			continue
		}
		cheapest := obj(items[0])
		assert.Equal(t, cheapest["fees"], floor["fees"], "%s: the floor's fees are its cheapest row's", id)
		assert.Equal(t, cheapest["buyerPrice"], floor["buyerPrice"])
	}
	assert.Positive(t, rows)
	assert.Positive(t, nullRoyalty, "the market has collections without a royalty")
	assert.Positive(t, tokenListings, "listed tokens carry their listing's fees")
}

func TestListingsDepthEndToEnd(t *testing.T) {
	e := newAPIEnv(t)
	snapshot := func(id string) map[string]any {
		r := e.get(t, collection(id, "listings")+"?limit=10")
		require.Equal(t, 200, r.Status, "%s", r.Body)
		return obj(r.JSON["snapshot"])
	}
	many := snapshot(e.id(t, sim.EdgeManyListings))
	assert.Greater(t, many["listedCount"], 250.0, "every active listing is counted, past the ceiling")
	assert.Equal(t, true, many["truncated"])

	none := snapshot(e.id(t, sim.EdgeNoListings))
	assert.Equal(t, 0.0, none["listedCount"])
	assert.Equal(t, false, none["truncated"])

	id := e.id(t, sim.EdgeDualListed)
	walked := 0
	next := ""
	for {
		path := collection(id, "listings") + "?limit=100"
		if next != "" {
			path += "&cursor=" + next
		}
		r := e.get(t, path)
		require.Equal(t, 200, r.Status)
		walked += len(arr(r.JSON["data"]))
		p := obj(r.JSON["pagination"])
		if p["hasMore"] != true {
			break
		}
		next = p["nextCursor"].(string)
	}
	small := snapshot(id)
	assert.Equal(t, false, small["truncated"])
	assert.Equal(t, float64(walked), small["listedCount"], "nothing cut: the count is what a walk sees")
}

// TestAsOfEndToEnd: asOf moves with every successful cycle, even one in
// which nothing changed, and stops at a failing source's last success.
func TestAsOfEndToEnd(t *testing.T) {
	e := newAPIEnv(t)
	id := e.id(t, sim.EdgeDualListed)
	read := func() map[string]time.Time {
		t.Helper()
		at := func(v any) time.Time {
			t.Helper()
			s, ok := v.(string)
			require.True(t, ok, "asOf %v", v)
			tm, err := time.Parse(time.RFC3339, s)
			require.NoError(t, err)
			return tm
		}
		d := e.get(t, collection(id))
		l := e.get(t, collection(id, "listings")+"?limit=1")
		f := e.get(t, collection(id, "floor"))
		require.Equal(t, 200, l.Status)
		row := obj(arr(l.JSON["data"])[0])
		tok := e.get(t, "/v1/tokens/"+row["chain"].(string)+"/"+row["contractAddress"].(string)+"/"+row["tokenId"].(string))
		require.Equal(t, 200, tok.Status, "%s", tok.Body)
		return map[string]time.Time{
			"detail":   at(obj(obj(d.JSON["data"])["stats"])["asOf"]),
			"listings": at(obj(l.JSON["snapshot"])["asOf"]),
			"floor":    at(obj(f.JSON["data"])["asOf"]),
			"token":    at(obj(tok.JSON["data"])["asOf"]),
		}
	}
	first := read()
	for k, v := range first {
		assert.WithinDuration(t, time.Now(), v, time.Minute, "%s: the first cycle just ran", k)
	}
	d := e.get(t, collection(id))
	stats := obj(obj(d.JSON["data"])["stats"])
	assert.Equal(t, map[string]any{"volume": map[string]any{"twentyFourHour": nil, "sevenDay": nil},
		"floor": map[string]any{"twentyFourHour": nil, "sevenDay": nil}}, stats["change"], "no day of history yet: null, never zero")

	e.cycle(t) // nothing changed upstream
	second := read()
	for k := range first {
		assert.True(t, second[k].After(first[k]), "%s: asOf moves with a successful cycle that changed nothing", k)
	}

	e.fault(t, "order-book", "error")
	e.cycle(t)
	third := read()
	assert.Equal(t, second["listings"], third["listings"], "order book failing: the snapshot is as of its last success")
	assert.Equal(t, second["floor"], third["floor"])
	assert.True(t, third["detail"].After(second["detail"]), "the detail's sources still succeed")
	r := e.get(t, collection(id, "listings"))
	assert.NotNil(t, r.JSON["meta"], "meta.stale stays as SPEC says")
}

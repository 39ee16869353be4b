package projector_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/projector"
	"github.com/marketd/marketd/readmodel/render"
)

const (
	cid      = "ethereum_0xc0"
	contract = "0xc0"
)

func TestListingsSnapshot(t *testing.T) {
	ob, mi := readmodel.SourceOrderBook, readmodel.SourceIndexerMirror
	expired := evmRow(cid, contract, "9", "1", "NATIVE", "expired")
	expired.ExpiresAt = tp(t0.Add(-time.Second))
	inactive := evmRow(cid, contract, "8", "1", "NATIVE", "cancelled")
	inactive.Status = readmodel.StatusCancelled
	later := evmRow(cid, contract, "7", "3", "NATIVE", "later")
	later.ExpiresAt = tp(t0.Add(time.Hour))

	cases := []struct {
		name      string
		doc       readmodel.CollectionDoc
		msgs      []*readmodel.Message
		wantOrder []string
		wantStale []readmodel.Source
		allFailed bool
	}{
		{
			name: "native order-book row wins a collision on the asset key",
			doc:  evmDoc(cid, readmodel.Ethereum, contract),
			msgs: []*readmodel.Message{
				listingsMsg(ob, cid, evmRow(cid, contract, "1", "500", "NATIVE", "native-1")),
				listingsMsg(mi, cid, evmRow(cid, contract, "1", "100", "opensea", "ext-1"), evmRow(cid, contract, "2", "200", "opensea", "ext-2")),
			},
			wantOrder: []string{"ext-2", "native-1"},
		},
		{
			name: "only active unexpired rows, sorted by price then orderId",
			doc:  evmDoc(cid, readmodel.Ethereum, contract),
			msgs: []*readmodel.Message{
				listingsMsg(ob, cid, expired, inactive, later, evmRow(cid, contract, "3", "2", "NATIVE", "b"), evmRow(cid, contract, "4", "2", "NATIVE", "a"),
					evmRow(cid, contract, "5", "10000000000000000000000000001", "NATIVE", "huge"), evmRow(cid, contract, "6", "10000000000000000000000000000", "NATIVE", "big")),
			},
			wantOrder: []string{"a", "b", "later", "big", "huge"},
		},
		{
			name: "uninterpretable prices are dropped",
			doc:  evmDoc(cid, readmodel.Ethereum, contract),
			msgs: []*readmodel.Message{
				listingsMsg(ob, cid, evmRow(cid, contract, "1", "1e18", "NATIVE", "bad"), evmRow(cid, contract, "2", "-1", "NATIVE", "neg"), evmRow(cid, contract, "3", "5", "NATIVE", "good")),
			},
			wantOrder: []string{"good"},
		},
		{
			name: "failed order-book poll is stale but keeps its last good rows within retention",
			doc:  evmDoc(cid, readmodel.Ethereum, contract),
			msgs: []*readmodel.Message{
				listingsMsg(ob, cid, evmRow(cid, contract, "1", "5", "NATIVE", "kept")),
				statusMsg(ob, cid, false, t0.Add(-time.Minute)),
				statusMsg(mi, cid, true, t0),
			},
			wantOrder: []string{"kept"},
			wantStale: []readmodel.Source{ob},
		},
		{
			name: "rows of a source failing longer than the retention are dropped",
			doc:  evmDoc(cid, readmodel.Ethereum, contract),
			msgs: []*readmodel.Message{
				listingsMsg(ob, cid, evmRow(cid, contract, "1", "5", "NATIVE", "old")),
				listingsMsg(mi, cid, evmRow(cid, contract, "2", "6", "opensea", "ext")),
				statusMsg(ob, cid, false, t0.Add(-time.Hour)),
			},
			wantOrder: []string{"ext"},
			wantStale: []readmodel.Source{ob},
		},
		{
			name: "collection without contract contributes no native rows and reports order-book",
			doc:  evmDoc(cid, readmodel.Ethereum, ""),
			msgs: []*readmodel.Message{
				listingsMsg(ob, cid, evmRow(cid, contract, "1", "5", "NATIVE", "native")),
				listingsMsg(mi, cid, evmRow(cid, contract, "2", "6", "opensea", "ext")),
			},
			wantOrder: []string{"ext"},
			wantStale: []readmodel.Source{ob},
		},
		{
			name: "both sources failed",
			doc:  evmDoc(cid, readmodel.Ethereum, contract),
			msgs: []*readmodel.Message{
				statusMsg(ob, cid, false, time.Time{}),
				statusMsg(mi, cid, false, time.Time{}),
			},
			wantStale: []readmodel.Source{ob, mi},
			allFailed: true,
		},
		{
			name: "a source that answered with no rows is not stale",
			doc:  evmDoc(cid, readmodel.Ethereum, contract),
			msgs: []*readmodel.Message{
				listingsMsg(ob, cid), listingsMsg(mi, cid), statusMsg(ob, cid, true, t0), statusMsg(mi, cid, true, t0),
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := mustEnv(t)
			e.run(append([]*readmodel.Message{docMsg(tc.doc)}, tc.msgs...)...)
			v, err := e.st.Listings(context.Background(), cid, 0)
			require.NoError(t, err)
			assert.Equal(t, tc.wantOrder, orderIDs(t, v))
			assert.Equal(t, tc.wantStale, v.StaleSources)
			assert.Equal(t, tc.allFailed, v.AllFailed)
			assert.Len(t, v.ExpiresAt, len(v.Items))
		})
	}
}

func TestListingsItemShape(t *testing.T) {
	e := mustEnv(t)
	sol := "solana_coll"
	row := solRow(sol, "MintCase1", "1500000000", "NATIVE", "MintCase1_1700000000000")
	row.ExpiresAt = tp(t0.Add(time.Hour))
	e.run(docMsg(readmodel.CollectionDoc{ID: sol, Chain: readmodel.Solana, ContractAddress: "CollMint"}),
		ratesMsg(readmodel.USDRates{"SOL": 100}),
		listingsMsg(readmodel.SourceOrderBook, sol, row))
	v, err := e.st.Listings(context.Background(), sol, 0)
	require.NoError(t, err)
	require.Len(t, v.Items, 1)
	assert.JSONEq(t, `{"chain":"solana","contractAddress":null,"tokenId":null,"mint":"MintCase1","collectionId":"solana_coll",
		"price":{"raw":"1500000000","decimal":1.5,"currency":"SOL","usd":150},"seller":"SellerMintCase1","buyer":null,
		"marketplace":"NATIVE","status":"active","expiresAt":"2026-09-01T13:00:00.000Z","timestamp":"2026-09-01T11:00:00.000Z",
		"orderId":"MintCase1_1700000000000","tx":"sigMintCase1",
		"fees":[{"kind":"platform","bps":300,"amount":{"raw":"45000000","decimal":0.045,"currency":"SOL","usd":4.5}},
			{"kind":"royalty","bps":null,"amount":null}],"buyerPrice":null}`, string(render.AppendUSD(nil, v.Items[0], e.st.USD())))
	assert.Equal(t, t0.Add(time.Hour).UnixMilli(), v.ExpiresAt[0])
	assert.Regexp(t, `^\{"chain":"solana","contractAddress":null,"tokenId":null,"mint":`, string(v.Items[0]), "SPEC field order")
}

// TestListingsRenderedFromTheirRows: a listing snapshot is stored as its
// rows and rendered on read, and still renders as projected: a row
// without a timestamp of its own is dated when its source was read (the
// message's observation time), not when the snapshot is read, and the
// royalty fee is the collection's as of projection.
func TestListingsRenderedFromTheirRows(t *testing.T) {
	e := mustEnv(t)
	cid, contract := "ethereum_0xabc", "0xabc"
	doc := evmDoc(cid, readmodel.Ethereum, contract)
	doc.RoyaltyBps = i64(500)
	undated := evmRow(cid, contract, "1", "1000000000000000000", "NATIVE", "o1")
	undated.Timestamp = time.Time{}
	dated := evmRow(cid, contract, "2", "2000000000000000000", "NATIVE", "o2")
	e.run(docMsg(doc), listingsMsg(readmodel.SourceOrderBook, cid, undated, dated))
	e.setNow(t0.Add(time.Hour)) // a read later renders the same items

	v, err := e.st.Listings(context.Background(), cid, 0)
	require.NoError(t, err)
	require.Len(t, v.Items, 2)
	first, second := jsonMap(t, v.Items[0]), jsonMap(t, v.Items[1])
	assert.Equal(t, readmodel.FormatTime(t0), first["timestamp"], "an undated row is dated when it was observed")
	assert.Equal(t, readmodel.FormatTime(t0.Add(-time.Hour)), second["timestamp"])
	fees := first["fees"].([]any)
	require.Len(t, fees, 2)
	assert.Equal(t, map[string]any{"kind": "royalty", "bps": 500.0,
		"amount": map[string]any{"raw": "50000000000000000", "decimal": 0.05, "currency": "ETH", "usd": nil}}, fees[1])
	assert.Equal(t, 2, v.Listed)
}

func TestListingsCappedAt250(t *testing.T) {
	e := mustEnv(t)
	var rows []readmodel.ListingRow
	for i := 0; i < 300; i++ {
		rows = append(rows, evmRow(cid, contract, fmt.Sprint(i), fmt.Sprint(1000+i), "NATIVE", fmt.Sprintf("o%03d", i)))
	}
	e.run(docMsg(evmDoc(cid, readmodel.Ethereum, contract)), listingsMsg(readmodel.SourceOrderBook, cid, rows...))
	v, err := e.st.Listings(context.Background(), cid, 0)
	require.NoError(t, err)
	ids := orderIDs(t, v)
	require.Len(t, ids, readmodel.ListingsCeiling)
	assert.Equal(t, "o000", ids[0])
	assert.Equal(t, "o249", ids[249])
}

func TestListingsSweepAndVersions(t *testing.T) {
	e := mustEnv(t)
	soon := evmRow(cid, contract, "1", "1", "NATIVE", "soon")
	soon.ExpiresAt = tp(t0.Add(time.Minute))
	e.run(docMsg(evmDoc(cid, readmodel.Ethereum, contract)),
		listingsMsg(readmodel.SourceOrderBook, cid, soon, evmRow(cid, contract, "2", "2", "NATIVE", "stays")))
	ctx := context.Background()
	before, err := e.st.Listings(ctx, cid, 0)
	require.NoError(t, err)
	assert.Equal(t, []string{"soon", "stays"}, orderIDs(t, before))

	t.Run("sweep before the deadline changes nothing", func(t *testing.T) {
		n, err := e.p.Sweep(ctx, t0.Add(30*time.Second))
		require.NoError(t, err)
		assert.Zero(t, n)
		assert.Zero(t, e.p.Swept().Listings)
	})
	t.Run("sweep after an expiry re-projects the snapshot", func(t *testing.T) {
		n, err := e.p.Sweep(ctx, t0.Add(2*time.Minute))
		require.NoError(t, err)
		assert.Equal(t, 1, n)
		sw := e.p.Swept()
		assert.Equal(t, int64(1), sw.Listings, "the snapshot re-rendered is counted")
		assert.Positive(t, sw.Duration)
		now, err := e.st.Listings(ctx, cid, 0)
		require.NoError(t, err)
		assert.Equal(t, []string{"stays"}, orderIDs(t, now))
		assert.Greater(t, now.Version, before.Version)
	})
	t.Run("superseded version stays readable", func(t *testing.T) {
		old, err := e.st.Listings(ctx, cid, before.Version)
		require.NoError(t, err)
		assert.Equal(t, before.Version, old.Version)
		assert.Equal(t, []string{"soon", "stays"}, orderIDs(t, old))
	})
	t.Run("unknown version falls back to current", func(t *testing.T) {
		cur, err := e.st.Listings(ctx, cid, 987654)
		require.NoError(t, err)
		assert.Equal(t, []string{"stays"}, orderIDs(t, cur))
	})
	t.Run("retention of a failing source ends by the clock", func(t *testing.T) {
		e.setNow(t0.Add(3 * time.Minute))
		e.run(statusMsg(readmodel.SourceOrderBook, cid, false, t0.Add(3*time.Minute)))
		cur, err := e.st.Listings(ctx, cid, 0)
		require.NoError(t, err)
		assert.Equal(t, []string{"stays"}, orderIDs(t, cur))
		_, err = e.p.Sweep(ctx, t0.Add(14*time.Minute))
		require.NoError(t, err)
		cur, err = e.st.Listings(ctx, cid, 0)
		require.NoError(t, err)
		assert.Empty(t, cur.Items)
		assert.Equal(t, []readmodel.Source{readmodel.SourceOrderBook}, cur.StaleSources)
	})
}

// TestSweepRendersOnlyWhatServingCannotSkip: the API skips rows expired by
// request time (it has each row's expiry), so the sweep re-renders a
// snapshot only when an expiry changes something else: the floor's row, a
// row of the same asset moving in, a row from beyond the ceiling.
func TestSweepRendersOnlyWhatServingCannotSkip(t *testing.T) {
	at := func(d time.Duration) *time.Time { return tp(t0.Add(d)) }
	expiring := func(r readmodel.ListingRow, d time.Duration) readmodel.ListingRow { r.ExpiresAt = at(d); return r }
	var beyond []readmodel.ListingRow
	for i := 0; i <= readmodel.ListingsCeiling; i++ {
		beyond = append(beyond, evmRow(cid, contract, fmt.Sprint(i), fmt.Sprint(1000+i), "NATIVE", fmt.Sprintf("o%03d", i)))
	}
	beyond[10] = expiring(beyond[10], time.Minute)
	cases := []struct {
		name    string
		book    []readmodel.ListingRow
		mirror  []readmodel.ListingRow
		renders int64
		first   string // the current snapshot's first and last rows after the sweep
		last    string
		stored  int // rows the current snapshot stores after the sweep
	}{
		{"a row behind the floor expires: kept, skipped when served",
			[]readmodel.ListingRow{evmRow(cid, contract, "1", "1", "NATIVE", "floor"), expiring(evmRow(cid, contract, "2", "2", "NATIVE", "dear"), time.Minute)},
			nil, 0, "floor", "dear", 2},
		{"the floor's row expires",
			[]readmodel.ListingRow{expiring(evmRow(cid, contract, "1", "1", "NATIVE", "floor"), time.Minute), evmRow(cid, contract, "2", "2", "NATIVE", "next")},
			nil, 1, "next", "next", 1},
		{"a native row and the mirror's copy of it expire together",
			[]readmodel.ListingRow{evmRow(cid, contract, "1", "1", "NATIVE", "floor"), expiring(evmRow(cid, contract, "2", "5", "NATIVE", "n2"), time.Minute)},
			[]readmodel.ListingRow{evmRow(cid, contract, "1", "1", "NATIVE", "floor"), expiring(evmRow(cid, contract, "2", "5", "NATIVE", "n2"), time.Minute)},
			0, "floor", "n2", 2},
		{"a native row expires before the external row it hides",
			[]readmodel.ListingRow{evmRow(cid, contract, "1", "1", "NATIVE", "floor"), expiring(evmRow(cid, contract, "2", "5", "NATIVE", "n2"), time.Minute)},
			[]readmodel.ListingRow{evmRow(cid, contract, "2", "4", "opensea", "x2")},
			1, "floor", "x2", 2},
		{"a row expires in a snapshot cut at the ceiling", beyond, nil, 1, "o000", "o250", readmodel.ListingsCeiling},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			e := mustEnv(t)
			e.run(docMsg(evmDoc(cid, readmodel.Ethereum, contract)),
				listingsMsg(readmodel.SourceOrderBook, cid, tc.book...), listingsMsg(readmodel.SourceIndexerMirror, cid, tc.mirror...))
			_, err := e.p.Sweep(ctx, t0.Add(2*time.Minute))
			require.NoError(t, err)
			assert.Equal(t, tc.renders, e.p.Swept().Listings)
			v, err := e.st.Listings(ctx, cid, 0)
			require.NoError(t, err)
			ids := orderIDs(t, v)
			require.NotEmpty(t, ids)
			assert.Equal(t, tc.first, ids[0])
			assert.Equal(t, tc.last, ids[len(ids)-1])
			assert.Len(t, ids, tc.stored)
			require.Len(t, v.ExpiresAt, len(v.Items), "every stored row carries its expiry for the API")
		})
	}
}

// TestSweepReleasesTheLockBetweenBatches: a sweep with many due views
// takes the write lock one batch at a time, so the consumer can apply
// between its batches instead of waiting for the whole walk, and still
// re-renders every due view. Token views are rendered on read: the sweep
// writes none, and they show no expired listing.
func TestSweepReleasesTheLockBetweenBatches(t *testing.T) {
	ctx := context.Background()
	e := mustEnv(t)
	const collections, tokensEach = 70, 5 // 70 snapshots (two batches), 350 tokens
	var msgs []*readmodel.Message
	for i := 0; i < collections; i++ {
		addr := fmt.Sprintf("0xc%03d", i)
		id := "ethereum_" + addr
		var rows []readmodel.ListingRow
		var toks []readmodel.TokenDoc
		for k := 0; k < tokensEach; k++ {
			r := evmRow(id, addr, fmt.Sprint(k), fmt.Sprint(1+k), "NATIVE", fmt.Sprintf("o%d-%d", i, k))
			r.ExpiresAt = tp(t0.Add(time.Minute))
			rows = append(rows, r)
			toks = append(toks, readmodel.TokenDoc{Chain: readmodel.Ethereum, ContractAddress: addr, TokenID: fmt.Sprint(k), CollectionID: id})
		}
		msgs = append(msgs, docMsg(evmDoc(id, readmodel.Ethereum, addr)),
			listingsMsg(readmodel.SourceOrderBook, id, rows...),
			&readmodel.Message{Kind: readmodel.KindTokens, CollectionID: id, Bucket: 1, Tokens: toks})
	}
	e.run(msgs...)

	var batches, lockedBetween int
	projector.SetAfterSweepBatch(e.p, func() {
		batches++
		if !projector.WriteLockFree(e.p) {
			lockedBetween++
		}
	})
	e.setNow(t0.Add(2 * time.Minute))
	n, err := e.p.Sweep(ctx, t0.Add(2*time.Minute))
	require.NoError(t, err)
	assert.Equal(t, collections, n, "every due snapshot re-rendered")
	assert.Equal(t, projector.SweepStats{Listings: collections},
		projector.SweepStats{Listings: e.p.Swept().Listings, Tokens: e.p.Swept().Tokens})
	assert.GreaterOrEqual(t, batches, 2, "two batches of snapshots")
	assert.Zero(t, lockedBetween, "the write lock is free between the sweep's batches")

	last := fmt.Sprintf("0xc%03d", collections-1)
	v, err := e.st.Listings(ctx, "ethereum_"+last, 0)
	require.NoError(t, err)
	assert.Empty(t, v.Items, "the last batch's snapshot was re-rendered without its expired rows")
	tok, err := e.st.Token(ctx, readmodel.Ethereum, last, "4")
	require.NoError(t, err)
	assert.Nil(t, timed(t, tok.Body, t0)["listing"], "the token view is read without its expired listing")
}

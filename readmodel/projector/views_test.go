package projector_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/store"
)

func TestCollectionDetail(t *testing.T) {
	st, an := readmodel.SourceIndexerStats, readmodel.SourceAnalytics
	doc := evmDoc(cid, readmodel.Ethereum, contract)
	doc.FloorRaw = "2000000000000000000"
	doc.Owners = i64(7)
	stats := &readmodel.Message{Kind: readmodel.KindStats, CollectionID: cid, Stats: &readmodel.CollectionStats{Owners: i64(40), ListedCount: i64(12), IndexedCount: i64(1000)}}
	analytics := &readmodel.Message{Kind: readmodel.KindAnalytics, CollectionID: cid, Analytics: &readmodel.Analytics{
		FloorRaw: "1500000000000000000", Volume24h: f64(1), Volume7d: f64(7), VolumeAllTime: f64(70), Sales24h: i64(2), Sales7d: i64(14), SalesAllTime: i64(140)}}
	cases := []struct {
		name  string
		msgs  []*readmodel.Message
		check func(t *testing.T, d map[string]any)
	}{
		{"healthy: analytics floor, windows, stats", []*readmodel.Message{stats, analytics, statusMsg(st, cid, true, t0), statusMsg(an, cid, true, t0)},
			func(t *testing.T, d map[string]any) {
				s := d["stats"].(map[string]any)
				assert.Equal(t, "1500000000000000000", s["floor"].(map[string]any)["raw"])
				assert.Equal(t, map[string]any{"allTime": 70.0, "sevenDay": 7.0, "twentyFourHour": 1.0}, s["volume"])
				assert.Equal(t, map[string]any{"allTime": 140.0, "sevenDay": 14.0, "twentyFourHour": 2.0}, s["sales"])
				assert.Equal(t, 40.0, s["owners"])
				assert.Equal(t, 12.0, s["listedCount"])
				assert.Equal(t, 1000.0, s["supply"], "supply falls back to the indexed count")
				assert.NotContains(t, s, "volumeAllTime")
				assert.Equal(t, false, d["stale"])
			}},
		{"analytics failed: snapshot floor, null windows, not stale", []*readmodel.Message{stats, analytics, statusMsg(an, cid, false, t0)},
			func(t *testing.T, d map[string]any) {
				s := d["stats"].(map[string]any)
				assert.Equal(t, "2000000000000000000", s["floor"].(map[string]any)["raw"])
				assert.Equal(t, map[string]any{"allTime": nil, "sevenDay": nil, "twentyFourHour": nil}, s["volume"])
				assert.Equal(t, map[string]any{"allTime": nil, "sevenDay": nil, "twentyFourHour": nil}, s["sales"])
				assert.Equal(t, 40.0, s["owners"])
				assert.Equal(t, false, d["stale"])
			}},
		{"stats failed: owners and listedCount null, not stale", []*readmodel.Message{stats, analytics, statusMsg(st, cid, false, t0)},
			func(t *testing.T, d map[string]any) {
				s := d["stats"].(map[string]any)
				assert.Nil(t, s["owners"])
				assert.Nil(t, s["listedCount"])
				assert.Equal(t, 70.0, s["volume"].(map[string]any)["allTime"])
				assert.Equal(t, false, d["stale"])
			}},
		{"both failed: stale", []*readmodel.Message{stats, analytics, statusMsg(st, cid, false, t0), statusMsg(an, cid, false, t0)},
			func(t *testing.T, d map[string]any) { assert.Equal(t, true, d["stale"]) }},
		{"source-wide failure counts for every collection", []*readmodel.Message{stats, analytics, statusMsg(st, "", false, t0), statusMsg(an, "", false, t0)},
			func(t *testing.T, d map[string]any) { assert.Equal(t, true, d["stale"]) }},
		{"a later per-collection success overrides an earlier source-wide failure", []*readmodel.Message{stats, analytics, statusMsg(st, "", false, t0), statusMsg(an, "", false, t0), statusMsg(an, cid, true, t0)},
			func(t *testing.T, d map[string]any) { assert.Equal(t, false, d["stale"]) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := mustEnv(t)
			e.run(append([]*readmodel.Message{docMsg(doc)}, tc.msgs...)...)
			v, err := e.st.Collection(context.Background(), cid)
			require.NoError(t, err)
			assert.Equal(t, readmodel.Ethereum, v.Chain)
			assert.True(t, v.HasContract)
			d := jsonMap(t, v.Detail)
			assert.Equal(t, cid, d["id"])
			tc.check(t, d)
		})
	}
}

func TestCollectionIdentityNulls(t *testing.T) {
	e := mustEnv(t)
	e.run(docMsg(readmodel.CollectionDoc{ID: "weird_x", Chain: "", FloorRaw: "5"}))
	v, err := e.st.Collection(context.Background(), "weird_x")
	require.NoError(t, err)
	assert.Equal(t, readmodel.Chain(""), v.Chain)
	assert.False(t, v.HasContract)
	d := jsonMap(t, v.Detail)
	assert.Nil(t, d["chain"])
	assert.Equal(t, "weird_x", d["name"], "name falls back to the id")
	assert.Nil(t, d["stats"].(map[string]any)["floor"], "no chain, no floor")
	assert.Regexp(t, `^\{"id":"weird_x","chain":null,"contractAddress":null,"name":"weird_x","slug":null,"image":null,"banner":null,"description":null,"tokenStandard":null,"royaltyBps":null,"stats":\{"floor":null,"volume":`, string(v.Detail))
	_, err = e.st.Floor(context.Background(), "weird_x")
	assert.Equal(t, readmodel.NotFound, readmodel.ErrorCode(err))
	_, err = e.st.Collection(context.Background(), "absent")
	assert.Equal(t, readmodel.NotFound, readmodel.ErrorCode(err))
}

func TestFloor(t *testing.T) {
	ob, mi, an := readmodel.SourceOrderBook, readmodel.SourceIndexerMirror, readmodel.SourceAnalytics
	sol := "solana_c"
	solDoc := readmodel.CollectionDoc{ID: sol, Chain: readmodel.Solana, ContractAddress: "CMint", RoyaltyBps: i64(500), FloorRaw: "9000000000"}
	ethDoc := evmDoc(cid, readmodel.Ethereum, contract)
	ethDoc.FloorRaw = "900"
	baseDoc := evmDoc("base_0xb", readmodel.Base, "0xb")
	ext := evmRow(cid, contract, "2", "1000", "opensea", "ext")
	ext.BuyerTotalRaw = "1070"
	anMsg := func(id, raw string) *readmodel.Message {
		return &readmodel.Message{Kind: readmodel.KindAnalytics, CollectionID: id, Analytics: &readmodel.Analytics{FloorRaw: raw}}
	}
	cases := []struct {
		name       string
		doc        readmodel.CollectionDoc
		msgs       []*readmodel.Message
		now        time.Time
		ask, buyer any
		stale      bool
	}{
		{"solana native: ask plus 3% fee plus royalty", solDoc,
			[]*readmodel.Message{listingsMsg(ob, sol, solRow(sol, "M1", "1000000000", "NATIVE", "o1"))},
			t0, "9000000000", "1080000000", false},
		{"ethereum native: ask plus 2% fee plus royalty; analytics ask floor first", ethDoc,
			[]*readmodel.Message{anMsg(cid, "800"), listingsMsg(ob, cid, evmRow(cid, contract, "1", "1000", "NATIVE", "n"))},
			t0, "800", "1070", false},
		{"external cheapest: its buyer total; ask from the mirror row", ethDoc,
			[]*readmodel.Message{anMsg(cid, "800"), statusMsg(an, cid, false, t0), listingsMsg(mi, cid, ext), listingsMsg(ob, cid, evmRow(cid, contract, "1", "5000", "NATIVE", "n"))},
			t0, "1000", "1070", false},
		{"no listings: ask from the stored snapshot, null buyer", ethDoc,
			nil, t0, "900", nil, false},
		{"both sources failed on solana: last good buyer floor, stale", solDoc,
			[]*readmodel.Message{listingsMsg(ob, sol, solRow(sol, "M1", "1000000000", "NATIVE", "o1")), statusMsg(ob, sol, false, t0), statusMsg(mi, sol, false, t0)},
			t0.Add(10 * time.Minute), "9000000000", "1080000000", true},
		{"last good older than 30 minutes: null, not stale", solDoc,
			[]*readmodel.Message{listingsMsg(ob, sol, solRow(sol, "M1", "1000000000", "NATIVE", "o1")), statusMsg(ob, sol, false, t0), statusMsg(mi, sol, false, t0)},
			t0.Add(31 * time.Minute), "9000000000", nil, false},
		{"both failed on base: null, not stale", baseDoc,
			[]*readmodel.Message{listingsMsg(ob, "base_0xb", evmRow("base_0xb", "0xb", "1", "1000", "NATIVE", "n")), statusMsg(ob, "base_0xb", false, t0), statusMsg(mi, "base_0xb", false, t0)},
			t0, nil, nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := mustEnv(t)
			e.run(append([]*readmodel.Message{docMsg(tc.doc)}, tc.msgs...)...)
			v, err := e.st.Floor(context.Background(), tc.doc.ID)
			require.NoError(t, err)
			body := v.Body
			if !v.FallbackAfter.IsZero() && !tc.now.Before(v.FallbackAfter) {
				body = v.Fallback
			}
			require.True(t, body.Timed, "updatedAt is the slot")
			d := timed(t, body, tc.now)
			assert.Equal(t, tc.doc.ID, d["collectionId"])
			assert.Equal(t, true, d["aggregated"])
			assert.Equal(t, readmodel.FormatTime(tc.now), d["updatedAt"])
			assert.Equal(t, tc.stale, d["stale"])
			raw := func(k string) any {
				if p, ok := d[k].(map[string]any); ok {
					return p["raw"]
				}
				return d[k]
			}
			assert.Equal(t, tc.ask, raw("askFloor"))
			assert.Equal(t, tc.buyer, raw("buyerFloor"))
		})
	}
}

func TestTokenView(t *testing.T) {
	ob := readmodel.SourceOrderBook
	overlay := evmRow(cid, contract, "5", "700", "opensea", "0xorderhash")
	cases := []struct {
		name       string
		doc        readmodel.TokenDoc
		obRows     []readmodel.ListingRow
		owner      map[string]any
		listingMkt any
		timed      bool
		lastSale   any
	}{
		{"native EVM listing preferred: seller is owner, real timestamp",
			readmodel.TokenDoc{Chain: readmodel.Ethereum, ContractAddress: contract, TokenID: "5", OwnerAddress: "0xholder", Overlay: &overlay, LastSaleRaw: "42"},
			[]readmodel.ListingRow{evmRow(cid, contract, "5", "600", "NATIVE", "ethereum_0xc0_5_1")},
			map[string]any{"address": "0xseller5", "kind": "wallet", "label": nil}, "NATIVE", false, "42"},
		{"overlay listing: timestamp is the response-build slot",
			readmodel.TokenDoc{Chain: readmodel.Ethereum, ContractAddress: contract, TokenID: "5", OwnerAddress: "0xholder", Overlay: &overlay},
			nil, map[string]any{"address": "0xseller5", "kind": "wallet", "label": nil}, "opensea", true, nil},
		{"custody without listing: address withheld",
			readmodel.TokenDoc{Chain: readmodel.Solana, ContractAddress: "CMint", TokenID: "AssetMint", OwnerAddress: "EscrowWallet", InCustody: true, CustodyLabel: "in escrow", LastSaleRaw: "not-a-number"},
			nil, map[string]any{"address": nil, "kind": "custody", "label": "in escrow"}, nil, false, nil},
		{"holder from the mirror",
			readmodel.TokenDoc{Chain: readmodel.Ethereum, ContractAddress: contract, TokenID: "6", OwnerAddress: "0xholder"},
			nil, map[string]any{"address": "0xholder", "kind": "wallet", "label": nil}, nil, false, nil},
		{"nothing trustworthy: unknown",
			readmodel.TokenDoc{Chain: readmodel.Ethereum, ContractAddress: contract, TokenID: "7"},
			nil, map[string]any{"address": nil, "kind": "unknown", "label": nil}, nil, false, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := mustEnv(t)
			tc.doc.CollectionID = cid
			msgs := []*readmodel.Message{docMsg(evmDoc(cid, readmodel.Ethereum, contract))}
			if tc.obRows != nil {
				msgs = append(msgs, listingsMsg(ob, cid, tc.obRows...))
			}
			msgs = append(msgs, &readmodel.Message{Kind: readmodel.KindTokens, CollectionID: cid, Bucket: 3, Tokens: []readmodel.TokenDoc{tc.doc}})
			e.run(msgs...)
			v, err := e.st.Token(context.Background(), tc.doc.Chain, tc.doc.ContractAddress, tc.doc.TokenID)
			require.NoError(t, err)
			assert.Equal(t, tc.timed, v.Body.Timed)
			now := t0.Add(5 * time.Minute)
			d := timed(t, v.Body, now)
			assert.Equal(t, tc.owner, d["owner"])
			assert.Contains(t, d, "rarity")
			if tc.listingMkt == nil {
				assert.Nil(t, d["listing"])
			} else {
				l := d["listing"].(map[string]any)
				assert.Equal(t, tc.listingMkt, l["marketplace"])
				assert.Nil(t, l["tx"])
				if tc.timed {
					assert.Equal(t, readmodel.FormatTime(now), l["timestamp"])
				} else {
					assert.Equal(t, readmodel.FormatTime(t0.Add(-time.Hour)), l["timestamp"])
				}
			}
			if tc.lastSale == nil {
				assert.Nil(t, d["lastSale"])
			} else {
				assert.Equal(t, tc.lastSale, d["lastSale"].(map[string]any)["price"].(map[string]any)["raw"])
			}
		})
	}
}

func TestTokenFollowsOrderBookAndBuckets(t *testing.T) {
	e := mustEnv(t)
	ctx := context.Background()
	doc := readmodel.TokenDoc{Chain: readmodel.Ethereum, ContractAddress: contract, TokenID: "5", CollectionID: cid, OwnerAddress: "0xholder"}
	e.run(docMsg(evmDoc(cid, readmodel.Ethereum, contract)),
		&readmodel.Message{Kind: readmodel.KindTokens, CollectionID: cid, Bucket: 1, Tokens: []readmodel.TokenDoc{doc}},
		listingsMsg(readmodel.SourceOrderBook, cid, evmRow(cid, contract, "5", "600", "NATIVE", "n5")))
	v, err := e.st.Token(ctx, readmodel.Ethereum, contract, "5")
	require.NoError(t, err)
	assert.Equal(t, "NATIVE", jsonMap(t, v.Body.Head)["listing"].(map[string]any)["marketplace"], "a new order-book listing re-renders the token")

	e.run(listingsMsg(readmodel.SourceOrderBook, cid))
	v, err = e.st.Token(ctx, readmodel.Ethereum, contract, "5")
	require.NoError(t, err)
	assert.Nil(t, jsonMap(t, v.Body.Head)["listing"], "a cancelled listing re-renders the token")

	e.run(&readmodel.Message{Kind: readmodel.KindTokens, CollectionID: cid, Bucket: 1, Tokens: []readmodel.TokenDoc{}})
	_, err = e.st.Token(ctx, readmodel.Ethereum, contract, "5")
	assert.Equal(t, readmodel.NotFound, readmodel.ErrorCode(err), "a token dropped from its bucket is gone")
}

// TestOrderBookTouchesOnlyChangedTokens: after an order-book message every
// token view shows its current cheapest live native listing (new,
// repriced, gone), and a token whose shown listing is unchanged keeps its
// view and version. That no token record is written at all is
// TestOrderBookWritesNoTokenRecord.
func TestOrderBookTouchesOnlyChangedTokens(t *testing.T) {
	e := mustEnv(t)
	ctx := context.Background()
	var docs []readmodel.TokenDoc
	for _, id := range []string{"1", "2", "3", "4", "5"} {
		docs = append(docs, readmodel.TokenDoc{Chain: readmodel.Ethereum, ContractAddress: contract, TokenID: id, CollectionID: cid, OwnerAddress: "0xholder"})
	}
	e.run(docMsg(evmDoc(cid, readmodel.Ethereum, contract)),
		&readmodel.Message{Kind: readmodel.KindTokens, CollectionID: cid, Bucket: 1, Tokens: docs},
		listingsMsg(readmodel.SourceOrderBook, cid,
			evmRow(cid, contract, "1", "100", "NATIVE", "a1"),
			evmRow(cid, contract, "2", "200", "NATIVE", "a2"),
			evmRow(cid, contract, "3", "300", "NATIVE", "a3"),
			evmRow(cid, contract, "4", "400", "opensea", "x4")))
	version := func(id string) uint64 {
		v, err := e.st.Token(ctx, readmodel.Ethereum, contract, id)
		require.NoError(t, err)
		return v.Version
	}
	was := map[string]uint64{}
	for _, id := range []string{"1", "2", "3", "4", "5"} {
		was[id] = version(id)
	}
	e.run(listingsMsg(readmodel.SourceOrderBook, cid,
		evmRow(cid, contract, "1", "100", "NATIVE", "a1"),  // unchanged
		evmRow(cid, contract, "1", "150", "NATIVE", "b1"),  // dearer second listing: not shown (until a1 expires)
		evmRow(cid, contract, "2", "250", "NATIVE", "a2"),  // repriced
		evmRow(cid, contract, "4", "450", "opensea", "x4"), // not native: not a token view input
		evmRow(cid, contract, "5", "500", "NATIVE", "a5"))) // new; token 3 lost its listing
	tests := []struct {
		id      string
		changed bool
	}{
		{"1", false}, {"2", true}, {"3", true}, {"4", false}, {"5", true},
	}
	for _, tt := range tests {
		t.Run("token "+tt.id, func(t *testing.T) {
			assert.Equal(t, tt.changed, version(tt.id) != was[tt.id])
		})
	}
	v, err := e.st.Token(ctx, readmodel.Ethereum, contract, "3")
	require.NoError(t, err)
	assert.Nil(t, jsonMap(t, v.Body.Head)["listing"], "token 3's listing is gone from its view")

}

func TestUSD(t *testing.T) {
	ctx := context.Background()
	e := mustEnv(t)
	poly := evmDoc("polygon_0xp", readmodel.Polygon, "0xp")
	poly.FloorRaw = "1000000000000000000"
	eth := evmDoc(cid, readmodel.Ethereum, contract)
	eth.FloorRaw = "2000000000000000000"
	usdOf := func(id string) any {
		v, err := e.st.Collection(ctx, id)
		require.NoError(t, err)
		return jsonMapQ(t, v.Detail, e.st.USD())["stats"].(map[string]any)["floor"].(map[string]any)["usd"]
	}
	e.run(docMsg(poly), docMsg(eth))
	assert.Nil(t, usdOf(cid), "rates unknown")
	e.run(ratesMsg(readmodel.USDRates{"ETH": 3000, "MATIC": 1}))
	assert.Equal(t, 6000.0, usdOf(cid), "a rates change reaches every view through the quote")
	assert.Nil(t, usdOf("polygon_0xp"), "polygon has no feed")
	e.run(statusMsg(readmodel.SourcePriceFeed, "", false, t0))
	assert.Nil(t, usdOf(cid), "price feed failed")
	e.run(statusMsg(readmodel.SourcePriceFeed, "", true, t0))
	assert.Equal(t, 6000.0, usdOf(cid))
}

func TestTokenListingExpiresBySweep(t *testing.T) {
	ctx := context.Background()
	e := mustEnv(t)
	native := evmRow(cid, contract, "5", "600", "NATIVE", "n5")
	native.ExpiresAt = tp(t0.Add(time.Minute))
	overlay := evmRow(cid, contract, "5", "700", "opensea", "0xhash")
	overlay.ExpiresAt = tp(t0.Add(2 * time.Minute))
	e.run(docMsg(evmDoc(cid, readmodel.Ethereum, contract)),
		listingsMsg(readmodel.SourceOrderBook, cid, native),
		&readmodel.Message{Kind: readmodel.KindTokens, CollectionID: cid, Bucket: 1, Tokens: []readmodel.TokenDoc{
			{Chain: readmodel.Ethereum, ContractAddress: contract, TokenID: "5", CollectionID: cid, OwnerAddress: "0xholder", Overlay: &overlay}}})
	listing := func() any {
		v, err := e.st.Token(ctx, readmodel.Ethereum, contract, "5")
		require.NoError(t, err)
		l, _ := timed(t, v.Body, t0)["listing"].(map[string]any)
		if l == nil {
			return nil
		}
		return l["marketplace"]
	}
	cases := []struct {
		name string
		at   time.Duration
		want any
	}{
		{"native listing while live", 30 * time.Second, "NATIVE"},
		{"overlay once the native listing expired", 90 * time.Second, "opensea"},
		{"none once both expired", 3 * time.Minute, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e.setNow(t0.Add(tc.at))
			_, err := e.p.Sweep(ctx, t0.Add(tc.at))
			require.NoError(t, err)
			assert.Equal(t, tc.want, listing())
		})
	}
	assert.Zero(t, e.p.Swept().Tokens, "the view is rendered on read: an expiry writes nothing")
}

// TestRatesChangeRewritesNoView: a rates change replaces only the store's
// USD quote; every sale and token reads the new usd through it, and no
// view is re-rendered (page versions, hence ETags of the bytes, stay).
func TestRatesChangeRewritesNoView(t *testing.T) {
	ctx := context.Background()
	e := mustEnv(t)
	var sales []readmodel.SaleRow
	var toks []readmodel.TokenDoc
	for i := 0; i < 1100; i++ {
		sales = append(sales, saleRow(fmt.Sprint("tx", i), t0.Add(-time.Duration(i)*time.Second), "1000000000000000000"))
		toks = append(toks, readmodel.TokenDoc{Chain: readmodel.Ethereum, ContractAddress: contract, TokenID: fmt.Sprint(i), LastSaleRaw: "1000000000000000000"})
	}
	e.run(docMsg(evmDoc(cid, readmodel.Ethereum, contract)), ratesMsg(readmodel.USDRates{"ETH": 1000}),
		salesMsg(sales...), &readmodel.Message{Kind: readmodel.KindTokens, CollectionID: cid, Tokens: toks})
	firstPage, err := e.st.Sales(ctx, cid, "", 5)
	require.NoError(t, err)
	tok0, err := e.st.Token(ctx, readmodel.Ethereum, contract, "0")
	require.NoError(t, err)
	q1 := e.st.USD()
	e.run(ratesMsg(readmodel.USDRates{"ETH": 2000}))
	q2 := e.st.USD()
	assert.NotEqual(t, q1.Version, q2.Version, "the quote (part of every ETag) changed")

	var usds []any
	after := ""
	for {
		p, err := e.st.Sales(ctx, cid, after, 100)
		require.NoError(t, err)
		for _, it := range p.Items {
			usds = append(usds, jsonMapQ(t, it, q2)["price"].(map[string]any)["usd"])
		}
		if !p.HasMore {
			break
		}
		after = p.Next
	}
	require.Len(t, usds, 1100)
	for i, u := range usds {
		require.Equal(t, 2000.0, u, "sale %d", i)
	}
	p0, err := e.st.Sales(ctx, cid, "", 5)
	require.NoError(t, err)
	assert.Equal(t, firstPage.Version, p0.Version, "no sale was rewritten")
	for _, id := range []string{"0", "1099"} {
		v, err := e.st.Token(ctx, readmodel.Ethereum, contract, id)
		require.NoError(t, err)
		assert.Equal(t, 2000.0, jsonMapQ(t, v.Body.Head, q2)["lastSale"].(map[string]any)["price"].(map[string]any)["usd"])
	}
	tok0b, err := e.st.Token(ctx, readmodel.Ethereum, contract, "0")
	require.NoError(t, err)
	assert.Equal(t, tok0.Version, tok0b.Version, "no token view was rewritten")
}

// TestTokensMovingBetweenBuckets: when a collection's bucket count changes,
// ingest publishes every bucket in order, and a token leaves one bucket's
// message and joins another's. Whichever comes first, the token must keep
// its view: only a token that is in no bucket any more is deleted. Each
// case runs with the bucket count in the messages (a bucket then trusts
// the hashes it stored while the count stays) and without (older
// publishers: every decision reads the token's record).
func TestTokensMovingBetweenBuckets(t *testing.T) {
	// tok is token id's document; "id@owner" gives it another owner.
	tok := func(id string) readmodel.TokenDoc {
		id, owner, ok := strings.Cut(id, "@")
		if !ok {
			owner = "0xholder"
		}
		return readmodel.TokenDoc{Chain: readmodel.Ethereum, ContractAddress: contract, TokenID: id, CollectionID: cid, OwnerAddress: owner}
	}
	bucket := func(b, n uint32, ids ...string) *readmodel.Message {
		docs := []readmodel.TokenDoc{}
		for _, id := range ids {
			docs = append(docs, tok(id))
		}
		return &readmodel.Message{Kind: readmodel.KindTokens, CollectionID: cid, Bucket: b, Buckets: n, Tokens: docs}
	}
	tests := []struct {
		name     string
		before   []*readmodel.Message
		after    []*readmodel.Message
		together bool // the after messages in one batch
		live     []string
		gone     []string
		owners   map[string]string // token id → the owner its view shows
	}{
		{name: "shrink 2→1: bucket 0 takes 2 and 4, then bucket 1 empties",
			before: []*readmodel.Message{bucket(0, 2, "1", "3"), bucket(1, 2, "2", "4")},
			after:  []*readmodel.Message{bucket(0, 1, "1", "2", "3", "4"), bucket(1, 1)},
			live:   []string{"1", "2", "3", "4"}},
		{name: "shrink 2→1 in one batch",
			before: []*readmodel.Message{bucket(0, 2, "1", "3"), bucket(1, 2, "2", "4")},
			after:  []*readmodel.Message{bucket(0, 1, "1", "2", "3", "4"), bucket(1, 1)}, together: true,
			live: []string{"1", "2", "3", "4"}},
		{name: "grow 1→2: bucket 0 gives up 2 and 4, bucket 1 takes them",
			before: []*readmodel.Message{bucket(0, 1, "1", "2", "3", "4")},
			after:  []*readmodel.Message{bucket(0, 2, "1", "3"), bucket(1, 2, "2", "4")},
			live:   []string{"1", "2", "3", "4"}},
		{name: "shrink with a token gone for good",
			before: []*readmodel.Message{bucket(0, 2, "1", "3"), bucket(1, 2, "2", "4")},
			after:  []*readmodel.Message{bucket(0, 1, "1", "2", "3"), bucket(1, 1)},
			live:   []string{"1", "2", "3"}, gone: []string{"4"}},
		{name: "a token moved, then dropped by its new bucket",
			before: []*readmodel.Message{bucket(0, 2, "1"), bucket(1, 2, "2")},
			after:  []*readmodel.Message{bucket(0, 1, "1", "2"), bucket(1, 1), bucket(0, 1, "1")},
			live:   []string{"1"}, gone: []string{"2"}},
		{name: "grow, changed in its new bucket, shrink back to its old document",
			before: []*readmodel.Message{bucket(0, 1, "1", "2")},
			after: []*readmodel.Message{bucket(0, 2, "1"), bucket(1, 2, "2@0xnew"),
				bucket(0, 1, "1", "2"), bucket(1, 1)},
			live: []string{"1", "2"}, owners: map[string]string{"2": "0xholder"}},
		{name: "a shrink that left its emptied bucket unpublished (ingest restarted), then a grow back",
			before: []*readmodel.Message{bucket(0, 2, "1"), bucket(1, 2, "2")},
			after:  []*readmodel.Message{bucket(0, 1, "1", "2"), bucket(0, 2, "1"), bucket(1, 2, "2")},
			live:   []string{"1", "2"}},
		{name: "changed while in another bucket, then dropped there",
			before: []*readmodel.Message{bucket(0, 1, "1", "2")},
			after: []*readmodel.Message{bucket(0, 2, "1"), bucket(1, 2, "2@0xnew"), bucket(1, 2),
				bucket(0, 1, "1", "2"), bucket(1, 1)},
			live: []string{"1", "2"}, owners: map[string]string{"2": "0xholder"}},
	}
	for _, mode := range []string{"counts", "no counts"} {
		for _, tt := range tests {
			t.Run(mode+"/"+tt.name, func(t *testing.T) {
				e := mustEnv(t)
				ctx := context.Background()
				prep := func(msgs []*readmodel.Message) []*readmodel.Message {
					out := make([]*readmodel.Message, len(msgs))
					for i, m := range msgs {
						c := *m
						if mode == "no counts" {
							c.Buckets = 0
						}
						out[i] = &c
					}
					return out
				}
				e.run(append([]*readmodel.Message{docMsg(evmDoc(cid, readmodel.Ethereum, contract))}, prep(tt.before)...)...)
				if tt.together {
					e.run(prep(tt.after)...)
				} else {
					for _, m := range prep(tt.after) {
						e.run(m)
					}
				}
				for _, id := range tt.live {
					v, err := e.st.Token(ctx, readmodel.Ethereum, contract, id)
					if !assert.NoError(t, err, "token %s", id) {
						continue
					}
					if want, ok := tt.owners[id]; ok {
						owner, _ := timed(t, v.Body, t0)["owner"].(map[string]any)
						assert.Equal(t, want, owner["address"], "token %s shows its latest document", id)
					}
				}
				for _, id := range tt.gone {
					_, err := e.st.Token(ctx, readmodel.Ethereum, contract, id)
					assert.Equal(t, readmodel.NotFound, readmodel.ErrorCode(err), "token %s", id)
				}
			})
		}
	}
}

// TestTokensOfCollectionsSharingAnAddress: two collections whose tokens
// share a contract address (and bucket numbers) keep their own tokens: a
// bucket that drops or empties deletes only its collection's.
func TestTokensOfCollectionsSharingAnAddress(t *testing.T) {
	const other = "ethereum_other"
	bucket := func(c string, ids ...string) *readmodel.Message {
		docs := []readmodel.TokenDoc{}
		for _, id := range ids {
			docs = append(docs, readmodel.TokenDoc{Chain: readmodel.Ethereum, ContractAddress: contract, TokenID: id, CollectionID: c, OwnerAddress: "0xholder"})
		}
		return &readmodel.Message{Kind: readmodel.KindTokens, CollectionID: c, Bucket: 0, Buckets: 1, Tokens: docs}
	}
	tests := []struct {
		name string
		msgs []*readmodel.Message
		live []string
		gone []string
	}{
		{name: "one drops a token",
			msgs: []*readmodel.Message{bucket(cid, "1", "2"), bucket(other, "10", "11"), bucket(cid, "1")},
			live: []string{"1", "10", "11"}, gone: []string{"2"}},
		{name: "one empties its bucket",
			msgs: []*readmodel.Message{bucket(cid, "1", "2"), bucket(other, "10", "11"), bucket(other)},
			live: []string{"1", "2"}, gone: []string{"10", "11"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := mustEnv(t)
			ctx := context.Background()
			e.run(docMsg(evmDoc(cid, readmodel.Ethereum, contract)))
			for _, m := range tt.msgs {
				e.run(m)
			}
			for _, id := range tt.live {
				_, err := e.st.Token(ctx, readmodel.Ethereum, contract, id)
				assert.NoError(t, err, "token %s", id)
			}
			for _, id := range tt.gone {
				_, err := e.st.Token(ctx, readmodel.Ethereum, contract, id)
				assert.Equal(t, readmodel.NotFound, readmodel.ErrorCode(err), "token %s", id)
			}
		})
	}
}

// TestNewBucketTokenMoves: a token first listed by a new bucket gets its
// view, and when another new bucket lists it again (the collection
// re-bucketed) the view follows the new document: its overlay shows until
// the new expiry, not the old one.
func TestNewBucketTokenMoves(t *testing.T) {
	e := mustEnv(t)
	ctx := context.Background()
	withOverlay := func(exp time.Time) readmodel.TokenDoc {
		return readmodel.TokenDoc{Chain: readmodel.Ethereum, ContractAddress: contract, TokenID: "5", CollectionID: cid, OwnerAddress: "0xholder",
			Overlay: &readmodel.ListingRow{Chain: readmodel.Ethereum, ContractAddress: contract, TokenID: "5", CollectionID: cid,
				PriceRaw: "700", Seller: "0xholder", Marketplace: "opensea", Status: readmodel.StatusActive, ExpiresAt: tp(exp), Timestamp: t0, OrderID: "o5"}}
	}
	listedAt := func(at time.Time) bool {
		e.setNow(at)
		v, err := e.st.Token(ctx, readmodel.Ethereum, contract, "5")
		require.NoError(t, err)
		return timed(t, v.Body, t0)["listing"] != nil
	}
	e.run(docMsg(evmDoc(cid, readmodel.Ethereum, contract)),
		&readmodel.Message{Kind: readmodel.KindTokens, CollectionID: cid, Bucket: 1, Tokens: []readmodel.TokenDoc{withOverlay(t0.Add(time.Hour))}})
	assert.True(t, listedAt(t0.Add(30*time.Minute)))
	assert.False(t, listedAt(t0.Add(90*time.Minute)), "expired at the overlay's expiry")

	// The collection's tokens are re-bucketed: bucket 2 is new and lists
	// the token with a later expiry.
	e.setNow(t0)
	e.run(&readmodel.Message{Kind: readmodel.KindTokens, CollectionID: cid, Bucket: 2, Tokens: []readmodel.TokenDoc{withOverlay(t0.Add(3 * time.Hour))}})
	assert.True(t, listedAt(t0.Add(90*time.Minute)), "the new document's expiry")
	assert.False(t, listedAt(t0.Add(4*time.Hour)))
}

// TestRepublishedBucketKeepsUnchangedRecords: a bucket republished because
// one of its tokens changed rewrites that token's record and view only;
// the others keep the record their view was rendered from (observation
// time included), with a bucket count or without one (the records'
// hashes decide either way).
func TestRepublishedBucketKeepsUnchangedRecords(t *testing.T) {
	tests := []struct {
		name    string
		buckets uint32 // 0: a message without a bucket count
	}{
		{"with a bucket count", 1},
		{"without a bucket count", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := mustEnv(t)
			ctx := context.Background()
			var docs []readmodel.TokenDoc
			for _, id := range []string{"1", "2", "3"} {
				docs = append(docs, readmodel.TokenDoc{Chain: readmodel.Ethereum, ContractAddress: contract, TokenID: id, CollectionID: cid, OwnerAddress: "0xholder"})
			}
			bucket := func(docs []readmodel.TokenDoc) *readmodel.Message {
				return &readmodel.Message{Kind: readmodel.KindTokens, CollectionID: cid, Bucket: 0, Buckets: tt.buckets, Tokens: append([]readmodel.TokenDoc(nil), docs...)}
			}
			e.run(docMsg(evmDoc(cid, readmodel.Ethereum, contract)), bucket(docs))
			record := func(id string) *store.TokenRecord {
				var r *store.TokenRecord
				require.NoError(t, e.st.View(ctx, func(tx *store.Tx) error {
					var err error
					r, err = tx.TokenRecord(readmodel.TokenKey(readmodel.Ethereum, contract, id))
					return err
				}))
				require.NotNil(t, r, "token %s has a record", id)
				return r
			}
			was := map[string]*store.TokenRecord{"1": record("1"), "2": record("2"), "3": record("3")}

			e.setNow(t0.Add(2 * time.Minute))
			docs[1].OwnerAddress = "0xbuyer"
			e.run(bucket(docs))
			assert.Equal(t, was["1"], record("1"), "unchanged token 1 keeps its record")
			assert.Equal(t, was["3"], record("3"), "unchanged token 3 keeps its record")
			assert.NotEqual(t, was["2"], record("2"), "changed token 2 has a new record")
			v, err := e.st.Token(ctx, readmodel.Ethereum, contract, "2")
			require.NoError(t, err)
			assert.Equal(t, "0xbuyer", jsonMap(t, v.Body.Head)["owner"].(map[string]any)["address"])
		})
	}
}

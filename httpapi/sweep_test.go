package httpapi

import (
	"encoding/json"
	"math/big"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/render"
	"github.com/marketd/marketd/readmodel/wire"
)

// sweepView is snapshot version v of testID with n rows rendered as the
// store renders them (render.ListingRowJSON): rows 0, 2, 4... native,
// the others external, asks 1 ETH + i wei, usd at 3000 a unit, royalty
// royaltyBps (nil: unknown).
func sweepView(t testing.TB, v uint64, n int, royaltyBps *int64) render.ListingsView {
	t.Helper()
	usd := 3000.0
	lv := render.ListingsView{Version: v}
	for i := 0; i < n; i++ {
		mp := readmodel.MarketplaceNative
		if i%2 == 1 {
			mp = "opensea"
		}
		row := readmodel.ListingRow{
			Chain: readmodel.Ethereum, ContractAddress: testContract, TokenID: strconv.Itoa(i), CollectionID: testID,
			PriceRaw: strconv.Itoa(1_000_000_000_000_000_000 + i), Seller: "0x00000000000000000000000000000000000000aa",
			Marketplace: mp, Status: readmodel.StatusActive, Timestamp: t0.Add(-time.Hour),
			OrderID: "w" + strconv.FormatUint(v, 10) + "-" + strconv.Itoa(i),
		}
		b, ok := render.ListingRowJSON(&row, royaltyBps, &usd, time.Time{})
		require.True(t, ok)
		lv.Items = append(lv.Items, b)
		lv.ExpiresAt = append(lv.ExpiresAt, 0)
	}
	lv.Listed = n
	return lv
}

func decodeSweep(t testing.TB, r result) wire.SweepResponse {
	t.Helper()
	var s wire.SweepResponse
	require.NoError(t, json.Unmarshal(r.body, &s), "%s", r.body)
	return s
}

// TestSweep: the count cheapest rows of the snapshot and their totals.
func TestSweep(t *testing.T) {
	sweep := "/v1/collections/" + testID + "/sweep"
	tests := []struct {
		name     string
		target   string
		view     func(t testing.TB) render.ListingsView
		status   int
		code     string
		items    int
		totalsOK bool // fee and buyer totals known
	}{
		{name: "default count is 10", target: sweep, view: func(t testing.TB) render.ListingsView { return sweepView(t, 2, 30, ptr(int64(500))) }, status: 200, items: 10, totalsOK: true},
		{name: "count 1", target: sweep + "?count=1", view: func(t testing.TB) render.ListingsView { return sweepView(t, 2, 30, ptr(int64(500))) }, status: 200, items: 1, totalsOK: true},
		{name: "count 50", target: sweep + "?count=50", view: func(t testing.TB) render.ListingsView { return sweepView(t, 2, 60, ptr(int64(500))) }, status: 200, items: 50, totalsOK: true},
		{name: "fewer listed than asked", target: sweep + "?count=50", view: func(t testing.TB) render.ListingsView { return sweepView(t, 2, 7, ptr(int64(0))) }, status: 200, items: 7, totalsOK: true},
		{name: "nothing listed: zero totals", target: sweep, view: func(t testing.TB) render.ListingsView { return render.ListingsView{Version: 2} }, status: 200, items: 0, totalsOK: true},
		{name: "count 0 is 400", target: sweep + "?count=0", status: 400, code: "bad_request"},
		{name: "count 51 is 400", target: sweep + "?count=51", status: 400, code: "bad_request"},
		{name: "count empty is 400", target: sweep + "?count=", status: 400, code: "bad_request"},
		{name: "count not a number is 400", target: sweep + "?count=ten", status: 400, code: "bad_request"},
		{name: "unknown royalty makes the totals it is in null", target: sweep + "?count=5", view: func(t testing.TB) render.ListingsView { return sweepView(t, 2, 30, nil) }, status: 200, items: 5, totalsOK: false},
		{name: "unknown collection is 404", target: "/v1/collections/nope/sweep", status: 404, code: "not_found"},
		{name: "collection without a chain is 404", target: "/v1/collections/" + noChainID + "/sweep", status: 404, code: "not_found"},
		{name: "every source failed, nothing known: 502", target: sweep, view: func(t testing.TB) render.ListingsView {
			return withStale(render.ListingsView{Version: 2}, true, readmodel.SourceOrderBook, readmodel.SourceIndexerMirror)
		}, status: 502, code: "upstream_error"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := MustHarness(t, nil)
			var lv render.ListingsView
			if tc.view != nil {
				lv = tc.view(t)
				h.r.putListings(testID, lv)
			}
			res := h.get(tc.target)
			require.Equal(t, tc.status, res.status, "%s", res.body)
			if tc.code != "" {
				assert.Equal(t, tc.code, res.errorCode(t))
				return
			}
			s := decodeSweep(t, res)
			q := s.Data
			assert.Equal(t, testID, q.CollectionID)
			require.Len(t, q.Items, tc.items)
			for i := range q.Items {
				assert.JSONEq(t, string(lv.Items[i]), mustJSON(t, q.Items[i]), "item %d is the snapshot's row as is", i)
			}
			// Exact sums of the items' own figures.
			var asks, platform, aggregator, royalty, buyer rawSum
			for _, it := range q.Items {
				asks.add(t, &it.Price)
				for _, f := range it.Fees {
					switch f.Kind {
					case wire.FeePlatform:
						platform.add(t, f.Amount)
					case wire.FeeAggregator:
						aggregator.add(t, f.Amount)
					case wire.FeeRoyalty:
						royalty.add(t, f.Amount)
					}
				}
				buyer.add(t, it.BuyerPrice)
			}
			tot := q.Totals
			assert.Equal(t, asks.String(), tot.Asks.Raw)
			assert.Equal(t, "ETH", tot.Asks.Currency)
			require.NotNil(t, tot.Fees.Platform)
			require.NotNil(t, tot.Fees.Aggregator)
			assert.Equal(t, platform.String(), tot.Fees.Platform.Raw)
			assert.Equal(t, aggregator.String(), tot.Fees.Aggregator.Raw)
			if !tc.totalsOK {
				assert.Nil(t, tot.Fees.Royalty, "an unknown royalty is no total")
				assert.Nil(t, tot.BuyerPrice, "an unknown fee makes what the buyer pays unknown")
				return
			}
			require.NotNil(t, tot.Fees.Royalty)
			require.NotNil(t, tot.BuyerPrice)
			assert.Equal(t, royalty.String(), tot.Fees.Royalty.Raw)
			assert.Equal(t, buyer.String(), tot.BuyerPrice.Raw)
			var sum rawSum
			sum.addRaw(t, tot.Asks.Raw)
			sum.addRaw(t, tot.Fees.Platform.Raw)
			sum.addRaw(t, tot.Fees.Aggregator.Raw)
			sum.addRaw(t, tot.Fees.Royalty.Raw)
			assert.Equal(t, sum.String(), tot.BuyerPrice.Raw, "the totals add up")
			if tc.items > 0 {
				require.NotNil(t, tot.BuyerPrice.USD)
			} else {
				assert.Nil(t, tot.BuyerPrice.USD, "no items: no rate to convert with")
			}
		})
	}
}

// TestSweepSnapshot: the listings page's snapshot rules (expiry at
// request time, meta, ETag per snapshot version).
func TestSweepSnapshot(t *testing.T) {
	sweep := "/v1/collections/" + testID + "/sweep?count=3"
	t.Run("expired rows are skipped", func(t *testing.T) {
		h := MustHarness(t, nil)
		lv := sweepView(t, 2, 6, ptr(int64(500)))
		lv.ExpiresAt[0], lv.ExpiresAt[2] = t0.UnixMilli(), t0.Add(time.Minute).UnixMilli()
		h.r.putListings(testID, lv)
		q := decodeSweep(t, h.get(sweep))
		require.Len(t, q.Data.Items, 3)
		assert.Equal(t, "w2-1", *q.Data.Items[0].OrderID)
		assert.Equal(t, "w2-2", *q.Data.Items[1].OrderID)
		assert.Equal(t, int64(5), q.Snapshot.ListedCount)
		h.clock.Add(time.Minute)
		q = decodeSweep(t, h.get(sweep))
		assert.Equal(t, "w2-3", *q.Data.Items[1].OrderID, "row 2 expired since")
	})
	t.Run("meta names a stale source", func(t *testing.T) {
		h := MustHarness(t, nil)
		h.r.putListings(testID, withStale(sweepView(t, 2, 6, ptr(int64(500))), false, readmodel.SourceIndexerMirror))
		q := decodeSweep(t, h.get(sweep))
		require.NotNil(t, q.Meta)
		assert.Equal(t, []readmodel.Source{readmodel.SourceIndexerMirror}, q.Meta.StaleSources)
		h.r.putListings(testID, sweepView(t, 3, 6, ptr(int64(500))))
		assert.NotContains(t, h.get(sweep).json(t), "meta")
	})
	t.Run("same snapshot: same ETag and 304; a new snapshot: another", func(t *testing.T) {
		h := MustHarness(t, nil)
		h.r.putListings(testID, sweepView(t, 2, 6, ptr(int64(500))))
		first := h.get(sweep)
		tag := first.header.Get("ETag")
		require.NotEmpty(t, tag)
		assert.Equal(t, "public, s-maxage=15, stale-while-revalidate=30", first.header.Get("Cache-Control"))
		again := h.get(sweep, "If-None-Match", tag)
		assert.Equal(t, http.StatusNotModified, again.status)
		assert.Empty(t, again.body)
		other := h.get("/v1/collections/" + testID + "/sweep?count=4")
		assert.NotEqual(t, tag, other.header.Get("ETag"), "another count is another body")
		h.r.putListings(testID, sweepView(t, 3, 6, ptr(int64(500))))
		next := h.get(sweep, "If-None-Match", tag)
		assert.Equal(t, http.StatusOK, next.status)
		assert.NotEqual(t, tag, next.header.Get("ETag"))
	})
}

// rawSum is an exact running sum of raw amounts for the tests.
type rawSum struct{ n big.Int }

func (b *rawSum) addRaw(t testing.TB, raw string) {
	t.Helper()
	v, ok := new(big.Int).SetString(raw, 10)
	require.True(t, ok, raw)
	b.n.Add(&b.n, v)
}

func (b *rawSum) add(t testing.TB, p *readmodel.Price) {
	t.Helper()
	if p != nil {
		b.addRaw(t, p.Raw)
	}
}

func (b *rawSum) String() string { return b.n.String() }

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

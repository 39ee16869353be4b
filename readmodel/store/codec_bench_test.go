package store

import (
	"fmt"
	"testing"
	"time"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/render"
)

// BenchmarkRenderToken measures rendering a listed EVM token's view from
// its record, what a token read that misses the cache pays.
func BenchmarkRenderToken(b *testing.B) {
	t0 := time.Date(2026, 11, 22, 21, 0, 0, 0, time.UTC)
	k, r, native := evmToken(t0)
	raw := EncodeTokenRecord(r)
	rows := nativeSets(t0, native)[k]
	b.ReportAllocs()
	for b.Loop() {
		rec, err := DecodeTokenRecord(raw)
		if err != nil {
			b.Fatal(err)
		}
		royalty := int64(500)
		RenderToken(rec, rows, &royalty, t0)
	}
}

// listingsRecord100 is a listing snapshot of 100 rows of one collection.
func listingsRecord100() render.ListingsRecord {
	royalty := int64(500)
	v := render.ListingsRecord{Version: 7, Listed: 100, RoyaltyBps: &royalty}
	for i := range 100 {
		r := *sampleListing()
		r.TokenID = fmt.Sprint(1000 + i)
		r.PriceRaw = fmt.Sprintf("%d000000000000000", 1000+i)
		r.Seller = fmt.Sprintf("0x93066daaaef549e37277f48e18b57c0ffffa%04x", i)
		r.OrderID = fmt.Sprintf("%s_%d_1795591471000", sampleCID, 1000+i)
		v.Rows = append(v.Rows, r)
	}
	return v
}

// BenchmarkEncodeListings measures encoding a listing snapshot of 100
// rows for the store, what every listings render pays once.
func BenchmarkEncodeListings(b *testing.B) {
	v := listingsRecord100()
	b.ReportAllocs()
	for b.Loop() {
		if len(encodeListings(v)) == 0 {
			b.Fatal("empty")
		}
	}
}

// BenchmarkRenderListings measures decoding a stored listing snapshot of
// 100 rows and rendering its items with USD values, what a listings read
// that misses the cache pays.
func BenchmarkRenderListings(b *testing.B) {
	raw := encodeListings(listingsRecord100())
	q := render.NewUSDQuote(readmodel.USDRates{"ETH": 3000}, true)
	b.ReportAllocs()
	for b.Loop() {
		rec, ok := decodeListings(raw)
		if !ok {
			b.Fatal("corrupt")
		}
		if v := rec.View(q); len(v.Items) != 100 {
			b.Fatalf("%d items", len(v.Items))
		}
	}
}

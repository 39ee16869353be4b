package store

import (
	"fmt"
	"testing"
	"time"

	"github.com/marketd/marketd/readmodel/render"
)

// BenchmarkRenderToken measures rendering a listed EVM token's view from
// its record, what a token read that misses the cache pays.
func BenchmarkRenderToken(b *testing.B) {
	t0 := time.Date(2026, 11, 22, 21, 0, 0, 0, time.UTC)
	_, r := evmToken(t0)
	raw := EncodeTokenRecord(r)
	b.ReportAllocs()
	for b.Loop() {
		rec, err := DecodeTokenRecord(raw)
		if err != nil {
			b.Fatal(err)
		}
		royalty := int64(500)
		RenderToken(rec, &royalty, t0)
	}
}

// BenchmarkEncodeListings measures encoding a listing snapshot of 100
// items for the store, what every listings render pays once.
func BenchmarkEncodeListings(b *testing.B) {
	v := render.ListingsView{Version: 7, Listed: 100}
	for i := range 100 {
		item := fmt.Sprintf(`{"chain":"ethereum","contractAddress":"0x51e88f7b90ee7382105217d72efb3a216c78e75e","tokenId":"%d","price":{"raw":"%d000000000000000","decimal":"0.%d"},"marketplace":"NATIVE","orderId":"ethereum_0x51e88f7b90ee7382105217d72efb3a216c78e75e_%d_1795348711000","timestamp":"2026-11-22T11:58:31Z"}`, i, 1000+i, 1000+i, i)
		v.Items = append(v.Items, []byte(item))
		v.ExpiresAt = append(v.ExpiresAt, int64(1795348711000+i))
	}
	b.ReportAllocs()
	for b.Loop() {
		if len(encodeListings(v)) == 0 {
			b.Fatal("empty")
		}
	}
}

package store

import (
	"testing"
	"time"
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

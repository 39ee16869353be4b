package store

import "testing"

// BenchmarkEncodeToken measures storing a rendered token page (a listed
// EVM token): the projector pays it once per token view it writes.
func BenchmarkEncodeToken(b *testing.B) {
	v := tokenViews()[0]
	b.ReportAllocs()
	for b.Loop() {
		encodeToken(v, 5)
	}
}

// BenchmarkDecodeToken measures reading it back: a token read pays it
// when the view is not in the in-process cache.
func BenchmarkDecodeToken(b *testing.B) {
	e := encodeToken(tokenViews()[0], 5)
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := decodeToken(e); !ok {
			b.Fatal("decode failed")
		}
	}
}

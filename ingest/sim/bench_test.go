package sim

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// discard is a ResponseWriter that drops the body, so a benchmark
// counts the simulator's own allocations, not a recorder's growing copy.
type discard struct {
	h      http.Header
	status int
	n      int
}

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) WriteHeader(status int)      { d.status = status }
func (d *discard) Write(b []byte) (int, error) { d.n += len(b); return len(b), nil }

// BenchmarkTokensPage measures the simulator answering one page of the
// indexer mirror's tokens (100 collections × 100 tokens): in `marketd all`
// at 100,000 collections the simulator shares the CPU with the node.
func BenchmarkTokensPage(b *testing.B) {
	s := New(Options{Collections: 100, TokensPerCollection: 100, Anchor: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)})
	h := s.Handler()
	req := httptest.NewRequest("GET", "/indexer-mirror/tokens?limit=100000", nil)
	b.ReportAllocs()
	for b.Loop() {
		w := &discard{h: http.Header{}}
		h.ServeHTTP(w, req)
		if w.status != 200 || w.n == 0 {
			b.Fatal(w.status, w.n)
		}
	}
}

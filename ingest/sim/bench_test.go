package sim

import (
	"net/http/httptest"
	"testing"
	"time"
)

// BenchmarkTokensPage measures the simulator answering one page of the
// indexer mirror's tokens (100 collections × 100 tokens): in `marketd all`
// at 100,000 collections the simulator shares the CPU with the node.
func BenchmarkTokensPage(b *testing.B) {
	s := New(Options{Collections: 100, TokensPerCollection: 100, Anchor: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)})
	h := s.Handler()
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/indexer-mirror/tokens?limit=100000", nil))
		if w.Code != 200 {
			b.Fatal(w.Code, w.Body.String())
		}
	}
}

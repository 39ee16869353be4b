package httpapi

import (
	"net"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
)

// benchRequest serves target through the app's handler directly (no
// network), reusing one RequestCtx, so allocations are the handler's own.
// Paged routes are then answered from the page memo, as a hot page is in
// production; the *Built benchmarks turn the memo off to measure building
// a page (what a page read once, or the first reads of a new view, cost).
func benchRequest(b *testing.B, h *harness, target string) {
	b.Helper()
	handler := h.srv.App().Handler()
	var fctx fasthttp.RequestCtx
	var req fasthttp.Request
	req.SetRequestURI(target)
	req.Header.Set("X-Forwarded-For", "192.0.2.10")
	fctx.Init(&req, &net.TCPAddr{IP: net.IPv4zero}, nil)
	handler(&fctx)
	if fctx.Response.StatusCode() != 200 {
		b.Fatalf("%s → %d %s", target, fctx.Response.StatusCode(), fctx.Response.Body())
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		fctx.Response.Reset()
		handler(&fctx)
	}
	b.SetBytes(int64(len(fctx.Response.Body())))
}

func benchHarness(b *testing.B) *harness {
	h := MustHarness(b, func(c *Config) { c.RateList, c.RateItem = 1<<30, 1<<30 })
	h.r.putListings(testID, listingsView(2, 250, nil))
	h.r.tokens["ethereum|"+testContract+"|1"] = tokenView(1)
	return h
}

func BenchmarkListings25(b *testing.B) {
	benchRequest(b, benchHarness(b), "/v1/collections/"+testID+"/listings?limit=25")
}

func BenchmarkListings100(b *testing.B) {
	benchRequest(b, benchHarness(b), "/v1/collections/"+testID+"/listings?limit=100")
}

func BenchmarkListings25Built(b *testing.B) {
	h := benchHarness(b)
	h.srv.memo = nil
	benchRequest(b, h, "/v1/collections/"+testID+"/listings?limit=25")
}

func BenchmarkListings100Built(b *testing.B) {
	h := benchHarness(b)
	h.srv.memo = nil
	benchRequest(b, h, "/v1/collections/"+testID+"/listings?limit=100")
}

func BenchmarkDetail(b *testing.B) {
	benchRequest(b, benchHarness(b), "/v1/collections/"+testSlug)
}

func BenchmarkFloor(b *testing.B) {
	benchRequest(b, benchHarness(b), "/v1/collections/"+testID+"/floor")
}

func BenchmarkToken(b *testing.B) {
	benchRequest(b, benchHarness(b), "/v1/tokens/ethereum/"+testContract+"/1")
}

func BenchmarkSales(b *testing.B) {
	benchRequest(b, benchHarness(b), "/v1/collections/"+testID+"/sales?limit=10")
}

func BenchmarkSalesBuilt(b *testing.B) {
	h := benchHarness(b)
	h.srv.memo = nil
	benchRequest(b, h, "/v1/collections/"+testID+"/sales?limit=10")
}

func BenchmarkCollections(b *testing.B) {
	benchRequest(b, benchHarness(b), "/v1/collections?limit=5")
}

// BenchmarkTokens50 is GET /v1/tokens with 50 ids: compare its ns/op with
// 50 × BenchmarkToken (the batch reads the same prepared records).
func BenchmarkTokens50(b *testing.B) {
	ids := strings.TrimSuffix(strings.Repeat("ethereum/"+testContract+"/1,", MaxBatchTokens), ",")
	benchRequest(b, benchHarness(b), "/v1/tokens?ids="+ids)
}

// BenchmarkEventsFull is a full page of 25 change-feed events after a
// cursor: immutable, answered from the page memo once hot.
func BenchmarkEventsFull(b *testing.B) {
	h := benchHarness(b)
	h.r.addEvents(testID, 200)
	cur := h.srv.cursors.appendCursorUntil(nil, cursor{kind: cursorEvents, bind: testID, pos: "s100-0-x", offset: 100}, neverExpires)
	benchRequest(b, h, "/v1/collections/"+testID+"/events?limit=25&cursor="+string(cur))
}

// BenchmarkEventsFirst is the first page (no cursor): full, but built on
// every request (it moves as old events are dropped).
func BenchmarkEventsFirst(b *testing.B) {
	h := benchHarness(b)
	h.r.addEvents(testID, 200)
	benchRequest(b, h, "/v1/collections/"+testID+"/events?limit=25")
}

// BenchmarkEventsHead is the head page: the last 10 events, after a cursor.
func BenchmarkEventsHead(b *testing.B) {
	h := benchHarness(b)
	h.r.addEvents(testID, 200)
	cur := h.srv.cursors.appendCursorUntil(nil, cursor{kind: cursorEvents, bind: testID, pos: "s190-0-x", offset: 190}, neverExpires)
	benchRequest(b, h, "/v1/collections/"+testID+"/events?limit=25&cursor="+string(cur))
}

// BenchmarkSweep50 is a hot sweep quote of 50, answered from the page memo.
func BenchmarkSweep50(b *testing.B) {
	benchRequest(b, benchHarness(b), "/v1/collections/"+testID+"/sweep?count=50")
}

// BenchmarkSweep50Built builds the quote every time: the rows copied and
// their totals decoded and added up.
func BenchmarkSweep50Built(b *testing.B) {
	h := benchHarness(b)
	h.srv.memo = nil
	benchRequest(b, h, "/v1/collections/"+testID+"/sweep?count=50")
}

package httpapi

import (
	"context"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/wire"
)

// fakeStatus is a StatusReader answering what a test set.
type fakeStatus struct {
	mu  sync.Mutex
	st  wire.Status
	err error
}

func (f *fakeStatus) Status(context.Context) (wire.Status, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st, f.err
}

func (f *fakeStatus) set(mod func(st *wire.Status)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	mod(&f.st)
}

func healthyStatus() wire.Status {
	at := "2026-11-22T11:58:00.000Z"
	return wire.Status{
		Sources: []wire.SourceStatus{
			{Source: readmodel.SourceOrderBook, Healthy: true, LastSuccess: &at},
			{Source: readmodel.SourceIndexerMirror, Healthy: false, LastSuccess: &at, FailingCollections: 3},
			{Source: readmodel.SourcePriceFeed, Healthy: true},
		},
		Node: wire.NodeStatus{Ready: true, Applied: readmodel.Position{State: 120, Sales: 40}, Behind: &readmodel.Position{State: 2}},
	}
}

// TestStatus: GET /v1/status answers what its reader holds, its ETag
// moves with every value it shows, and it is in the item bucket.
func TestStatus(t *testing.T) {
	later := "2026-11-22T12:00:00.000Z"
	tests := []struct {
		name   string
		change func(st *wire.Status)
	}{
		{"a source's health", func(st *wire.Status) { st.Sources[0].Healthy = false }},
		{"a source's last success", func(st *wire.Status) { st.Sources[0].LastSuccess = &later }},
		{"a first success", func(st *wire.Status) { st.Sources[2].LastSuccess = &later }},
		{"collections failing", func(st *wire.Status) { st.Sources[1].FailingCollections = 4 }},
		{"readiness", func(st *wire.Status) { st.Node.Ready = false }},
		{"applied state", func(st *wire.Status) { st.Node.Applied.State++ }},
		{"applied sales", func(st *wire.Status) { st.Node.Applied.Sales++ }},
		{"behind", func(st *wire.Status) { st.Node.Behind = &readmodel.Position{State: 1} }},
		{"heads unknown", func(st *wire.Status) { st.Node.Behind = nil }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs := &fakeStatus{st: healthyStatus()}
			h := MustHarness(t, func(c *Config) { c.Status = fs })
			first := h.get("/v1/status")
			require.Equal(t, http.StatusOK, first.status, "%s", first.body)
			assert.Equal(t, "public, s-maxage=10, stale-while-revalidate=20", first.header.Get("Cache-Control"))
			tag := first.header.Get("ETag")
			require.NotEmpty(t, tag)
			assert.Equal(t, http.StatusNotModified, h.get("/v1/status", "If-None-Match", tag).status, "same values, same tag")

			fs.set(tc.change)
			res := h.get("/v1/status", "If-None-Match", tag)
			require.Equal(t, http.StatusOK, res.status, "a changed value is a new body")
			assert.NotEqual(t, tag, res.header.Get("ETag"))
			assert.NotEqual(t, string(first.body), string(res.body))
		})
	}
	t.Run("body", func(t *testing.T) {
		fs := &fakeStatus{st: healthyStatus()}
		h := MustHarness(t, func(c *Config) { c.Status = fs })
		assert.JSONEq(t, `{"data":{"sources":[
			{"source":"order-book","healthy":true,"lastSuccess":"2026-11-22T11:58:00.000Z","failingCollections":0},
			{"source":"indexer-mirror","healthy":false,"lastSuccess":"2026-11-22T11:58:00.000Z","failingCollections":3},
			{"source":"price-feed","healthy":true,"lastSuccess":null,"failingCollections":0}],
			"node":{"ready":true,"applied":{"state":120,"sales":40},"behind":{"state":2,"sales":0}}}}`, string(h.get("/v1/status").body))
	})
	t.Run("item bucket", func(t *testing.T) {
		fs := &fakeStatus{st: healthyStatus()}
		h := MustHarness(t, func(c *Config) { c.Status = fs; c.RateItem = 2; c.RateList = 50 })
		for i := 0; i < 2; i++ {
			require.Equal(t, http.StatusOK, h.get("/v1/status").status)
		}
		res := h.get("/v1")
		assert.Equal(t, http.StatusTooManyRequests, res.status, "status spent the item bucket")
		assert.Equal(t, http.StatusOK, h.get("/v1/collections").status, "not the list bucket")
	})
	t.Run("the node cannot read its views: 502", func(t *testing.T) {
		fs := &fakeStatus{err: readmodel.Errorf(readmodel.Internal, "views are being rebuilt")}
		h := MustHarness(t, func(c *Config) { c.Status = fs })
		res := h.get("/v1/status")
		require.Equal(t, http.StatusBadGateway, res.status)
		assert.Equal(t, "upstream_error", res.errorCode(t))
	})
	t.Run("no status reader: 502", func(t *testing.T) {
		h := MustHarness(t, nil)
		res := h.get("/v1/status")
		require.Equal(t, http.StatusBadGateway, res.status)
		assert.Equal(t, "upstream_error", res.errorCode(t))
	})
}

// TestSweepBucket: a sweep quote is counted in the list bucket, as the
// listings page whose rows it reads.
func TestSweepBucket(t *testing.T) {
	h := MustHarness(t, func(c *Config) { c.RateList = 2; c.RateItem = 50 })
	for i := 0; i < 2; i++ {
		require.Equal(t, http.StatusOK, h.get("/v1/collections/"+testID+"/sweep").status)
	}
	assert.Equal(t, http.StatusTooManyRequests, h.get("/v1/collections/"+testID+"/listings").status, "the sweep spent the list bucket")
	assert.Equal(t, http.StatusOK, h.get("/v1/collections/"+testID).status, "not the item bucket")
}

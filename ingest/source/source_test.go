package source_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/ingest/sim"
	"github.com/marketd/marketd/ingest/source"
	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/normalize"
)

var anchor = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

// MustSim serves a real simulator; closed at cleanup.
func MustSim(t *testing.T) (*sim.Sim, string) {
	t.Helper()
	s := sim.New(sim.Options{Seed: 3, Collections: 24, TokensPerCollection: 30, Anchor: anchor})
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		require.NoError(t, s.Close(context.Background()))
		srv.Close()
	})
	return s, srv.URL
}

func client(base string, src readmodel.Source, timeout time.Duration) *source.Client {
	return source.NewClient(src, base+"/"+string(src), timeout, nil)
}

// TestPagingIsComplete walks every paged endpoint with tiny pages and with
// one big page: the same rows arrive either way.
func TestPagingIsComplete(t *testing.T) {
	_, base := MustSim(t)
	ctx := context.Background()
	type walker func(limit int) (int, error)
	listings := func(src readmodel.Source) walker {
		return func(limit int) (int, error) {
			n := 0
			err := client(base, src, 30*time.Second).Listings(ctx, limit, func(gs []source.LazyGroup[normalize.RawListing]) error {
				for _, g := range gs {
					rows, rejects := g.Decode()
					n += len(rows) + len(rejects)
				}
				return nil
			})
			return n, err
		}
	}
	tests := []struct {
		name string
		walk walker
	}{
		{name: "collections", walk: func(limit int) (int, error) {
			n := 0
			err := client(base, readmodel.SourceCollectionIndex, 30*time.Second).Collections(ctx, limit, func(p source.Rows[normalize.RawCollection]) error {
				n += len(p.Rows)
				return nil
			})
			return n, err
		}},
		{name: "order-book listings", walk: listings(readmodel.SourceOrderBook)},
		{name: "mirror listings", walk: listings(readmodel.SourceIndexerMirror)},
		{name: "tokens", walk: func(limit int) (int, error) {
			n := 0
			_, err := client(base, readmodel.SourceIndexerMirror, 30*time.Second).Tokens(ctx, "", limit, func(gs []source.RowsGroup[normalize.RawToken]) error {
				for _, g := range gs {
					n += len(g.Rows)
				}
				return nil
			})
			return n, err
		}},
		{name: "stats", walk: func(limit int) (int, error) {
			n := 0
			err := client(base, readmodel.SourceIndexerStats, 30*time.Second).Stats(ctx, limit, func(p source.Rows[normalize.RawStats]) error {
				n += len(p.Rows)
				return nil
			})
			return n, err
		}},
		{name: "analytics", walk: func(limit int) (int, error) {
			n := 0
			err := client(base, readmodel.SourceAnalytics, 30*time.Second).Analytics(ctx, limit, func(p source.Rows[normalize.RawAnalytics]) error {
				n += len(p.Rows)
				return nil
			})
			return n, err
		}},
		{name: "sales", walk: func(limit int) (int, error) {
			n := 0
			_, err := client(base, readmodel.SourceSales, 30*time.Second).Sales(ctx, "", limit, func(p source.Rows[normalize.RawSale], _ string) error {
				n += len(p.Rows) + len(p.Rejects)
				return nil
			})
			return n, err
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			small, err := tc.walk(7)
			require.NoError(t, err)
			big, err := tc.walk(100000)
			require.NoError(t, err)
			assert.Positive(t, big)
			assert.Equal(t, big, small)
		})
	}
}

func TestSalesFeedIsIncremental(t *testing.T) {
	s, base := MustSim(t)
	c := client(base, readmodel.SourceSales, 30*time.Second)
	ctx := context.Background()
	count := func(cursor string) (int, string) {
		n := 0
		next, err := c.Sales(ctx, cursor, 50, func(p source.Rows[normalize.RawSale], _ string) error { n += len(p.Rows); return nil })
		require.NoError(t, err)
		return n, next
	}
	all, cur := count("")
	assert.Positive(t, all)
	none, again := count(cur)
	assert.Zero(t, none, "nothing new without a tick")
	assert.Equal(t, cur, again)
	for i := 0; i < 5; i++ {
		s.Tick()
	}
	fresh, _ := count(cur)
	assert.Positive(t, fresh, "new sales after ticks")
}

func TestTokensChangedSince(t *testing.T) {
	s, base := MustSim(t)
	c := client(base, readmodel.SourceIndexerMirror, 30*time.Second)
	ctx := context.Background()
	walk := func(since string) (int, string) {
		n := 0
		wm, err := c.Tokens(ctx, since, 1000, func(gs []source.RowsGroup[normalize.RawToken]) error { n += len(gs); return nil })
		require.NoError(t, err)
		return n, wm
	}
	all, wm := walk("")
	assert.Equal(t, 22, all, "every collection with tokens")
	none, wm2 := walk(wm)
	assert.Zero(t, none)
	assert.Equal(t, wm, wm2)
	s.Tick()
	some, _ := walk(wm)
	assert.Positive(t, some)
	assert.Less(t, some, all, "only collections whose tokens changed")
}

func TestPollErrorsAreClassified(t *testing.T) {
	s, base := MustSim(t)
	garbage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.Contains(r.URL.Path, "huge"):
			_, _ = w.Write([]byte(`{"items":[`))
			for i := 0; i < 100_000; i++ { // 1.1 MB
				_, _ = w.Write([]byte(`{"a":1234},`))
			}
		case strings.Contains(r.URL.Path, "404"):
			http.NotFound(w, r)
		default:
			_, _ = w.Write([]byte(`<html>not json</html>`))
		}
	}))
	defer garbage.Close()
	tests := []struct {
		name  string
		fault sim.Mode
		base  string
		class string
	}{
		{name: "HTTP 500", fault: sim.ModeError, base: base + "/analytics", class: source.ClassHTTP5xx},
		{name: "timeout", fault: sim.ModeTimeout, base: base + "/analytics", class: source.ClassTimeout},
		{name: "invalid JSON", base: garbage.URL, class: source.ClassBadPayload},
		{name: "oversized body", base: garbage.URL + "/huge", class: source.ClassBadPayload},
		{name: "other status", base: garbage.URL + "/404", class: source.ClassHTTPStatus},
		{name: "connection refused", base: "http://127.0.0.1:1", class: source.ClassTransport},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s.SetFault(readmodel.SourceAnalytics, sim.ModeOK)
			if tc.fault != "" {
				s.SetFault(readmodel.SourceAnalytics, tc.fault)
			}
			timeout := 5 * time.Second
			if tc.fault == sim.ModeTimeout {
				timeout = 200 * time.Millisecond
			}
			c := source.NewClient(readmodel.SourceAnalytics, tc.base, timeout, nil).WithMaxBody(1 << 20)
			err := c.Analytics(context.Background(), 0, func(source.Rows[normalize.RawAnalytics]) error { return nil })
			require.Error(t, err)
			assert.Equal(t, tc.class, source.ErrorClass(err))
			assert.Equal(t, readmodel.UpstreamError, readmodel.ErrorCode(err))
		})
	}
}

func TestRatesAndRowDecoding(t *testing.T) {
	_, base := MustSim(t)
	rates, bad, err := client(base, readmodel.SourcePriceFeed, 30*time.Second).Rates(context.Background())
	require.NoError(t, err)
	assert.Empty(t, bad)
	assert.Positive(t, rates["SOL"])

	tests := []struct {
		name   string
		row    string
		reason normalize.RejectReason
	}{
		{name: "object", row: `{"chain":"ethereum"}`},
		{name: "string", row: `"x"`, reason: normalize.RejectBadJSON},
		{name: "wrong type", row: `{"chain":1}`, reason: normalize.RejectBadJSON},
		{name: "oversized", row: `{"chain":"` + strings.Repeat("a", source.MaxRow) + `"}`, reason: normalize.RejectOversized},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var r normalize.RawListing
			err := source.DecodeRow(json.RawMessage(tc.row), &r)
			assert.Equal(t, tc.reason, normalize.ReasonOf(err))
		})
	}
}

func TestBuckets(t *testing.T) {
	tests := []struct {
		name string
		n    int
		want int
	}{
		{name: "empty", n: 0, want: 1},
		{name: "small", n: 128, want: 1},
		{name: "medium", n: 129, want: 2},
		{name: "large", n: 600, want: 8},
		{name: "huge", n: 100000, want: 1024},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, source.BucketCount(tc.n))
			assert.Equal(t, readmodel.TokenBucket("ethereum|0xab|1", tc.want), readmodel.TokenBucket("ethereum|0xab|1", tc.want), "stable")
			assert.Less(t, int(readmodel.TokenBucket("solana|x|y", tc.want)), tc.want)
		})
	}
}

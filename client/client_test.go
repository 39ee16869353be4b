package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel/wire"
)

// fakeSleep records the waits a client asked for without waiting.
type fakeSleep struct{ waits []time.Duration }

func (f *fakeSleep) sleep(_ context.Context, d time.Duration) error {
	f.waits = append(f.waits, d)
	return nil
}

func newTest(t *testing.T, h http.HandlerFunc, opts ...Option) (*Client, *fakeSleep) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c := New(srv.URL, opts...)
	fs := &fakeSleep{}
	c.sleep = fs.sleep
	return c, fs
}

func rateLimited(w http.ResponseWriter, retry string) {
	w.Header().Set("Retry-After", retry)
	w.Header().Set("X-RateLimit-Limit", "2")
	w.Header().Set("X-RateLimit-Remaining", "0")
	w.Header().Set("X-RateLimit-Reset", "2026-11-25T03:00:00.000Z")
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusTooManyRequests)
	fmt.Fprint(w, `{"error":{"code":"rate_limited","message":"slow down"}}`)
}

func TestRetryAfter(t *testing.T) {
	tests := []struct {
		name       string
		limited    int    // 429s before a 200
		retryAfter string // header value
		opts       []Option
		wantErr    error
		wantWaits  []time.Duration
	}{
		{"one 429 then 200", 1, "7", nil, nil, []time.Duration{7 * time.Second}},
		{"three 429s then 200", 3, "1", nil, nil, []time.Duration{time.Second, time.Second, time.Second}},
		{"more 429s than retries", 5, "1", []Option{WithRetries(2)}, ErrRateLimited, []time.Duration{time.Second, time.Second}},
		{"no retries", 1, "1", []Option{WithRetries(0)}, ErrRateLimited, nil},
		{"wait beyond the bound", 1, "90", []Option{WithMaxRetryWait(time.Minute)}, ErrRateLimited, nil},
		{"no Retry-After", 1, "", nil, ErrRateLimited, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32
			c, fs := newTest(t, func(w http.ResponseWriter, r *http.Request) {
				if int(calls.Add(1)) <= tc.limited {
					rateLimited(w, tc.retryAfter)
					return
				}
				fmt.Fprint(w, `{"data":{"collectionId":"c","askFloor":null,"buyerFloor":null,"aggregated":true,"updatedAt":"2026-11-25T03:00:00.000Z","stale":false}}`)
			}, tc.opts...)
			f, err := c.Floor(context.Background(), "c")
			assert.Equal(t, tc.wantWaits, fs.waits)
			if tc.wantErr == nil {
				require.NoError(t, err)
				assert.Equal(t, "c", f.CollectionID)
				return
			}
			require.ErrorIs(t, err, tc.wantErr)
			var e *Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, 2, e.Limit)
			assert.Equal(t, 0, e.Remaining)
			assert.Equal(t, time.Date(2026, 11, 25, 3, 0, 0, 0, time.UTC), e.Reset.UTC())
		})
	}
}

func TestErrorsAreTyped(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		is     error
		code   string
	}{
		{"502 is unknown, never empty", 502, `{"error":{"code":"upstream_error","message":"m"}}`, ErrUnknown, "upstream_error"},
		{"502 without a body", 502, `<html>bad gateway</html>`, ErrUnknown, "upstream_error"},
		{"404", 404, `{"error":{"code":"not_found","message":"m"}}`, ErrNotFound, "not_found"},
		{"400", 400, `{"error":{"code":"bad_request","message":"m"}}`, ErrBadRequest, "bad_request"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := newTest(t, func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tc.status)
				fmt.Fprint(w, tc.body)
			})
			p, err := c.Listings(context.Background(), "c", PageQuery{})
			require.ErrorIs(t, err, tc.is)
			assert.Nil(t, p.Data, "no page is made up")
			var e *Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, tc.code, string(e.Code))
			for _, other := range []error{ErrUnknown, ErrNotFound, ErrBadRequest, ErrRateLimited} {
				if other != tc.is {
					assert.False(t, errors.Is(err, other), "%v", other)
				}
			}
		})
	}
}

// pages serves fixed pages of items, each a JSON array, chained by cursor
// "p<i>"; it records the cursors asked for.
func pages(t *testing.T, items ...string) (*Client, *[]string) {
	var cursors []string
	c, _ := newTest(t, func(w http.ResponseWriter, r *http.Request) {
		cur := r.URL.Query().Get("cursor")
		cursors = append(cursors, cur)
		i := 0
		if cur != "" {
			fmt.Sscanf(cur, "p%d", &i)
		}
		next, more := "null", "false"
		if i+1 < len(items) {
			next, more = fmt.Sprintf(`"p%d"`, i+1), "true"
		}
		fmt.Fprintf(w, `{"data":%s,"pagination":{"nextCursor":%s,"hasMore":%s}}`, items[i], next, more)
	})
	return c, &cursors
}

func item(order, tx string) string {
	o, x := "null", "null"
	if order != "" {
		o = `"` + order + `"`
	}
	if tx != "" {
		x = `"` + tx + `"`
	}
	return `{"chain":"ethereum","contractAddress":"0xa","tokenId":"1","mint":null,"collectionId":"c","price":{"raw":"1","decimal":1e-18,"currency":"ETH","usd":null},"seller":null,"buyer":null,"marketplace":"NATIVE","status":"active","expiresAt":null,"timestamp":"2026-11-25T03:00:00.000Z","orderId":` + o + `,"tx":` + x + `}`
}

func TestWalksDedupe(t *testing.T) {
	t.Run("listings by orderId across pages", func(t *testing.T) {
		c, cursors := pages(t,
			"["+item("a", "")+","+item("b", "")+"]",
			"["+item("b", "")+","+item("c", "")+"]", // b repeated: the snapshot moved
			"[]",
			"["+item("", "")+","+item("", "")+","+item("a", "")+"]")
		var got []string
		for it, err := range c.AllListings(context.Background(), "c", 2) {
			require.NoError(t, err)
			got = append(got, ListingKey(it.MarketItem))
		}
		assert.Equal(t, []string{"a", "b", "c", "", ""}, got, "repeats dropped; null orderIds are never merged")
		assert.Equal(t, []string{"", "p1", "p2", "p3"}, *cursors, "an empty page with hasMore does not end the walk")
	})
	t.Run("sales by tx plus orderId", func(t *testing.T) {
		c, _ := pages(t,
			"["+item("o1", "t1")+","+item("o1", "t2")+"]",
			"["+item("o1", "t1")+","+item("", "t3")+","+item("", "t3")+"]")
		var got []string
		for it, err := range c.AllSales(context.Background(), "c", 2) {
			require.NoError(t, err)
			got = append(got, *it.Tx)
		}
		assert.Equal(t, []string{"t1", "t2", "t3"}, got)
	})
	t.Run("events by eventId, from the cursor given", func(t *testing.T) {
		ev := func(id string) string {
			return `{"eventId":"` + id + `","type":"sale","collectionId":"c","observedAt":"2026-11-25T03:00:00.000Z","upstreamAt":null,"reason":null,"listing":null,"previousPrice":null,"sale":null,"floor":null}`
		}
		c, cursors := pages(t, "["+ev("e1")+"]", "["+ev("e2")+","+ev("e3")+"]", "["+ev("e3")+","+ev("e4")+"]")
		var got []string
		for e, err := range c.AllEvents(context.Background(), "c", EventsQuery{PageQuery: PageQuery{Limit: 2, Cursor: "p1"}}) {
			require.NoError(t, err)
			got = append(got, e.EventID)
		}
		assert.Equal(t, []string{"e2", "e3", "e4"}, got)
		assert.Equal(t, []string{"p1", "p2"}, *cursors, "the walk starts at the cursor given")
	})
	t.Run("an error ends the walk once", func(t *testing.T) {
		var n atomic.Int32
		c, _ := newTest(t, func(w http.ResponseWriter, r *http.Request) {
			if n.Add(1) == 2 {
				w.WriteHeader(502)
				fmt.Fprint(w, `{"error":{"code":"upstream_error","message":"m"}}`)
				return
			}
			fmt.Fprintf(w, `{"data":[%s],"pagination":{"nextCursor":"x","hasMore":true}}`, item("a", ""))
		})
		var errs []error
		items := 0
		for _, err := range c.AllListings(context.Background(), "c", 1) {
			if err != nil {
				errs = append(errs, err)
			} else {
				items++
			}
		}
		assert.Equal(t, 1, items)
		require.Len(t, errs, 1)
		assert.ErrorIs(t, errs[0], ErrUnknown)
	})
}

func TestPathsAndQueries(t *testing.T) {
	var got []string
	c, _ := newTest(t, func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.URL.RequestURI())
		switch {
		case r.URL.Path == "/v1/openapi.json":
			fmt.Fprint(w, `{"openapi":"3.1.0"}`)
		case r.URL.Path == "/v1/collections" || strings.HasSuffix(r.URL.Path, "/sales") || strings.HasSuffix(r.URL.Path, "/listings") || strings.HasSuffix(r.URL.Path, "/events"):
			fmt.Fprint(w, `{"data":[],"pagination":{"nextCursor":null,"hasMore":false}}`)
		case r.URL.Path == "/v1/tokens":
			fmt.Fprint(w, `{"data":[]}`)
		default:
			fmt.Fprint(w, `{"data":{}}`)
		}
	})
	ctx := context.Background()
	_, err := c.Index(ctx)
	require.NoError(t, err)
	_, err = c.OpenAPI(ctx)
	require.NoError(t, err)
	_, err = c.Collections(ctx, CollectionsQuery{Chain: "solana", Sort: "floor", PageQuery: PageQuery{Limit: 5, Cursor: "k"}})
	require.NoError(t, err)
	_, err = c.Collection(ctx, "a/b")
	require.NoError(t, err)
	_, err = c.Floor(ctx, "x")
	require.NoError(t, err)
	_, err = c.Listings(ctx, "x", PageQuery{Limit: 100})
	require.NoError(t, err)
	_, err = c.Sales(ctx, "x", PageQuery{})
	require.NoError(t, err)
	_, err = c.Token(ctx, "solana", "Col1", "Asset1")
	require.NoError(t, err)
	_, err = c.Events(ctx, "x", EventsQuery{Types: []string{wire.EventSale, wire.EventFloorChanged}, PageQuery: PageQuery{Limit: 3, Cursor: "e"}})
	require.NoError(t, err)
	_, err = c.Tokens(ctx, TokenRef{"ethereum", "0xab", "7"}, TokenRef{"solana", "Col1", "Asset1"})
	require.NoError(t, err)
	assert.Equal(t, []string{
		"/v1", "/v1/openapi.json", "/v1/collections?chain=solana&cursor=k&limit=5&sort=floor",
		"/v1/collections/a%2Fb", "/v1/collections/x/floor", "/v1/collections/x/listings?limit=100",
		"/v1/collections/x/sales", "/v1/tokens/solana/Col1/Asset1",
		"/v1/collections/x/events?cursor=e&limit=3&types=sale%2Cfloor_changed",
		"/v1/tokens?ids=ethereum%2F0xab%2F7%2Csolana%2FCol1%2FAsset1",
	}, got)
}

// TestTokensAnswersEachRef: a batch answer's items become a token or a
// typed error, in request order.
func TestTokensAnswersEachRef(t *testing.T) {
	c, _ := newTest(t, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"data":[`+
			`{"chain":"ethereum","contractAddress":"0xab","tokenId":"7","mint":null,"collectionId":"ethereum_0xab","name":null,"image":null,"rarity":{"rank":3},"owner":{"address":null,"kind":"unknown","label":null},"listing":null,"lastSale":null,"asOf":null},`+
			`{"error":{"code":"not_found","message":"no such token"}},`+
			`{"error":{"code":"bad_request","message":"bad address"}}]}`)
	})
	got, err := c.Tokens(context.Background(), TokenRef{"ethereum", "0xab", "7"}, TokenRef{"ethereum", "0xab", "8"}, TokenRef{"ethereum", "x", "1"})
	require.NoError(t, err)
	require.Len(t, got, 3)
	require.NoError(t, got[0].Err)
	require.NotNil(t, got[0].Token)
	assert.Equal(t, "ethereum_0xab", got[0].Token.CollectionID)
	assert.Equal(t, int64(3), *got[0].Token.Rarity.Rank)
	assert.Nil(t, got[1].Token)
	assert.ErrorIs(t, got[1].Err, ErrNotFound)
	assert.ErrorIs(t, got[2].Err, ErrBadRequest)
	var e *Error
	require.ErrorAs(t, got[2].Err, &e)
	assert.Equal(t, "bad address", e.Message)
}

// TestStrictDecoding: by default a field the client does not know is
// ignored; WithStrictDecoding makes it an error.
func TestStrictDecoding(t *testing.T) {
	body := `{"data":{"collectionId":"c","askFloor":null,"buyerFloor":null,"aggregated":true,"updatedAt":"2026-11-25T03:00:00.000Z","stale":false,"fees":null,"buyerPrice":null,"asOf":null,"depth":3}}`
	tests := []struct {
		name    string
		opts    []Option
		wantErr bool
	}{
		{"lenient by default", nil, false},
		{"strict", []Option{WithStrictDecoding()}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := newTest(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, body) }, tc.opts...)
			f, err := c.Floor(context.Background(), "c")
			if tc.wantErr {
				assert.ErrorContains(t, err, `unknown field "depth"`)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, "c", f.CollectionID)
		})
	}
}

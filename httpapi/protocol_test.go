package httpapi

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func assertCORS(t *testing.T, res result) {
	t.Helper()
	assert.Equal(t, "*", res.header.Get("Access-Control-Allow-Origin"))
	assert.Equal(t, "GET, OPTIONS", res.header.Get("Access-Control-Allow-Methods"))
	assert.Equal(t, "Content-Type, Accept", res.header.Get("Access-Control-Allow-Headers"))
	assert.Equal(t, "86400", res.header.Get("Access-Control-Max-Age"))
	assert.Empty(t, res.header.Get("Access-Control-Allow-Credentials"))
	assert.Equal(t, "ETag, Retry-After, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset",
		res.header.Get("Access-Control-Expose-Headers"), "a page must be able to read the validator and the rate-limit wait")
}

// TestCORSEverywhere: SPEC §5's four headers on every response, success or
// error, with or without Origin, and Authorization changes nothing.
func TestCORSEverywhere(t *testing.T) {
	tests := []struct {
		name, method, target string
		status               int
	}{
		{"index", "GET", "/v1", 200},
		{"listings", "GET", "/v1/collections/" + testID + "/listings", 200},
		{"400", "GET", "/v1/collections?limit=0", 400},
		{"404 collection", "GET", "/v1/collections/nope", 404},
		{"404 no route", "GET", "/v2/nothing", 404},
		{"405", "POST", "/v1/collections", 405},
		{"preflight", "OPTIONS", "/v1/collections/" + testID + "/sales", 204},
		{"502", "GET", "/v1/collections/" + testID + "/sales", 502},
	}
	headerSets := map[string][]string{
		"no origin":     nil,
		"origin":        {"Origin", "https://example.com"},
		"authorization": {"Origin", "https://example.com", "Authorization", "Bearer secret"},
	}
	for _, tc := range tests {
		for hname, hdr := range headerSets {
			t.Run(tc.name+"/"+hname, func(t *testing.T) {
				h := MustHarness(t, nil)
				if tc.status == 502 {
					h.r.setErr("Sales", assert.AnError)
				}
				res := h.do(tc.method, tc.target, hdr...)
				require.Equal(t, tc.status, res.status, "%s", res.body)
				assertCORS(t, res)
			})
		}
	}
	t.Run("429", func(t *testing.T) {
		h := MustHarness(t, func(c *Config) { c.RateItem = 1 })
		h.get("/v1")
		res := h.get("/v1", "Origin", "https://x.test")
		require.Equal(t, 429, res.status)
		assertCORS(t, res)
	})
}

func TestPreflight(t *testing.T) {
	h := MustHarness(t, func(c *Config) { c.RateList, c.RateItem = 1, 1 })
	h.r.tokens["ethereum|"+testContract+"|1"] = tokenView(1)
	for _, target := range []string{
		"/v1", "/v1/openapi.json", "/v1/collections", "/v1/collections/" + testID,
		"/v1/collections/" + testID + "/floor", "/v1/collections/" + testID + "/listings",
		"/v1/collections/" + testID + "/sales", "/v1/tokens/ethereum/" + testContract + "/1",
	} {
		t.Run(target, func(t *testing.T) {
			for i := 0; i < 3; i++ { // preflights do not spend the budget
				res := h.do(http.MethodOptions, target, "Origin", "https://x.test", "Access-Control-Request-Method", "GET")
				require.Equal(t, http.StatusNoContent, res.status)
				assertCORS(t, res)
				assert.Empty(t, res.body)
			}
		})
	}
}

// TestMethodNotAllowed: any method but GET, HEAD and OPTIONS is 405 with
// the error body (code bad_request), an Allow header and no-store.
func TestMethodNotAllowed(t *testing.T) {
	h := MustHarness(t, nil)
	for _, m := range []string{"POST", "PUT", "PATCH", "DELETE", "TRACE"} {
		for _, target := range []string{"/v1", "/v1/collections", "/v1/collections/" + testID + "/listings", "/v1/tokens/ethereum/" + testContract + "/1"} {
			t.Run(m+" "+target, func(t *testing.T) {
				res := h.do(m, target)
				require.Equal(t, http.StatusMethodNotAllowed, res.status)
				assert.Equal(t, "GET, HEAD, OPTIONS", res.header.Get("Allow"))
				assert.Equal(t, "no-store", res.header.Get("Cache-Control"))
				assertCORS(t, res)
				assert.Equal(t, "bad_request", res.errorCode(t))
			})
		}
	}
}

// TestHead: HEAD is answered as GET without a body (RFC 9110 §9.1): same
// status and headers, including the error and cache headers, and it is
// counted in the route's rate bucket.
func TestHead(t *testing.T) {
	tests := []struct {
		name, target string
		status       int
	}{
		{"index", "/v1", 200},
		{"openapi", "/v1/openapi.json", 200},
		{"collections", "/v1/collections", 200},
		{"detail", "/v1/collections/" + testID, 200},
		{"floor", "/v1/collections/" + testID + "/floor", 200},
		{"listings", "/v1/collections/" + testID + "/listings", 200},
		{"sales", "/v1/collections/" + testID + "/sales", 200},
		{"token", "/v1/tokens/ethereum/" + testContract + "/1", 200},
		{"400", "/v1/collections?limit=0", 400},
		{"404", "/v1/collections/nope", 404},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := MustHarness(t, nil)
			h.r.tokens["ethereum|"+testContract+"|1"] = tokenView(1)
			get := h.get(tc.target)
			head := h.do(http.MethodHead, tc.target)
			require.Equal(t, tc.status, get.status, "%s", get.body)
			assert.Equal(t, get.status, head.status)
			assert.Empty(t, head.body)
			for _, k := range []string{"Content-Type", "Cache-Control", "ETag", "Access-Control-Allow-Origin", "Access-Control-Expose-Headers"} {
				assert.Equal(t, get.header.Get(k), head.header.Get(k), k)
			}
		})
	}
	t.Run("same bucket as GET", func(t *testing.T) {
		h := MustHarness(t, func(c *Config) { c.RateList, c.RateItem = 2, 2 })
		require.Equal(t, 200, h.do(http.MethodHead, "/v1").status)
		require.Equal(t, 200, h.get("/v1").status)
		res := h.do(http.MethodHead, "/v1")
		assert.Equal(t, http.StatusTooManyRequests, res.status)
		assert.NotEmpty(t, res.header.Get("Retry-After"))
		assert.Equal(t, http.StatusTooManyRequests, h.get("/v1").status, "HEAD spent the GET budget")
		assert.Equal(t, 200, h.get("/v1/collections").status, "the list bucket is independent")
	})
}

// TestErrorEnvelope: errors are exactly {error:{code,message}}, no-store,
// with no cache validators, and upstream failure text is not passed through.
func TestErrorEnvelope(t *testing.T) {
	h := MustHarness(t, nil)
	h.r.setErr("Browse", assert.AnError)
	res := h.get("/v1/collections")
	require.Equal(t, http.StatusBadGateway, res.status)
	m := res.json(t)
	require.Len(t, m, 1)
	e := m["error"].(map[string]any)
	assert.Len(t, e, 2)
	assert.Equal(t, "upstream_error", e["code"])
	assert.NotContains(t, e["message"], assert.AnError.Error())
	assert.Equal(t, "no-store", res.header.Get("Cache-Control"))
	assert.Empty(t, res.header.Get("CDN-Cache-Control"))
	assert.Empty(t, res.header.Get("ETag"))
}

// TestNever502 is SPEC §7's "never" column: detail, floor and token answer
// no 502 whatever the node's reads do.
func TestNever502(t *testing.T) {
	tests := []struct {
		name, target, method string
	}{
		{"detail resolve", "/v1/collections/" + testID, "ResolveCollection"},
		{"detail read", "/v1/collections/" + testID, "Collection"},
		{"floor resolve", "/v1/collections/" + testID + "/floor", "ResolveCollection"},
		{"floor read", "/v1/collections/" + testID + "/floor", "Floor"},
		{"token read", "/v1/tokens/ethereum/" + testContract + "/1", "Token"},
	}
	for _, tc := range tests {
		for _, ename := range []string{"foreign", "upstream"} {
			t.Run(tc.name+"/"+ename, func(t *testing.T) {
				h := MustHarness(t, nil)
				err := error(assert.AnError)
				if ename == "upstream" {
					err = errAllListFeeds
				}
				h.r.setErr(tc.method, err)
				res := h.get(tc.target)
				assert.Equal(t, http.StatusNotFound, res.status)
				assert.Equal(t, "not_found", res.errorCode(t))
				assert.Equal(t, "no-store", res.header.Get("Cache-Control"))
			})
		}
	}
}

func TestUnknownRoute(t *testing.T) {
	h := MustHarness(t, nil)
	for _, target := range []string{"/", "/v2", "/v1/nope", "/v1/collections/a/b/c", "/v1/tokens/ethereum/x"} {
		res := h.get(target)
		assert.Equal(t, http.StatusNotFound, res.status, target)
		assert.Equal(t, "not_found", res.errorCode(t))
		assertCORS(t, res)
	}
}

// TestBadInputNeverPanics throws hostile paths and queries at every route:
// each gets an answer from the four codes' statuses.
func TestBadInputNeverPanics(t *testing.T) {
	h := MustHarness(t, nil)
	weird := []string{
		"%00", "%ff%fe", "..", "%2e%2e", "a%2Fb", strings.Repeat("%41", 300), "null", "🙂",
		strings.Repeat("x", 2000), "0x", "0X" + strings.Repeat("A", 40),
	}
	for _, w := range weird {
		for _, target := range []string{
			"/v1/collections/" + w, "/v1/collections/" + w + "/floor", "/v1/collections/" + w + "/listings",
			"/v1/collections/" + w + "/sales", "/v1/tokens/" + w + "/" + w + "/" + w, "/v1/tokens/solana/" + w + "/1",
			"/v1/tokens/ethereum/" + w + "/1", "/v1/tokens/ethereum/" + testContract + "/" + w,
			"/v1/collections?cursor=" + w, "/v1/collections?limit=" + w, "/v1/collections?sort=" + w + "&chain=" + w,
			"/v1/collections/" + testID + "/listings?cursor=" + w, "/v1/collections/" + testID + "/sales?cursor=" + w,
		} {
			res := h.get(target)
			assert.Contains(t, []int{200, 400, 404}, res.status, "%s → %d %s", target, res.status, res.body)
		}
	}
}

// TestListenRawRequests serves on a real socket and sends requests no
// well-behaved client would build: each gets an HTTP answer, none hangs.
func TestListenRawRequests(t *testing.T) {
	h := MustHarness(t, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- h.srv.Listen(ln) }()
	for _, path := range []string{
		"/v1/collections/%", "/v1/collections/%zz/listings", "/v1/tokens/%/%/%", "/v1/collections?limit=%",
		"/v1/collections/" + testID + "/listings?cursor=%", "/v1/collections/" + testID,
		"/v1/collections/" + strings.Repeat("x", 20000),
	} {
		conn, err := net.Dial("tcp", ln.Addr().String())
		require.NoError(t, err)
		require.NoError(t, conn.SetDeadline(time.Now().Add(5*time.Second)))
		_, err = fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", path)
		require.NoError(t, err)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		require.NoError(t, err, path)
		assert.Contains(t, []int{200, 400, 404}, resp.StatusCode, "%.80s", path)
		assert.Equal(t, "*", resp.Header.Get("Access-Control-Allow-Origin"), path)
		_ = conn.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, h.srv.Shutdown(ctx))
	require.NoError(t, <-done)
}

// TestStackRejections sends, on a real socket, requests the HTTP stack
// itself turns away before any route runs (methods Fiber does not know,
// heads or bodies over the limits, requests that do not parse): each is
// answered with SPEC §7's error body, CORS and no-store, not the stack's
// own text/plain.
func TestStackRejections(t *testing.T) {
	big := strings.Repeat("x", MaxRequestHead+100)
	var many strings.Builder
	for i := 0; many.Len() < MaxRequestHead+100; i++ {
		fmt.Fprintf(&many, "X-Pad-%d: %s\r\n", i, strings.Repeat("p", 40))
	}
	tests := []struct {
		name, raw string
		status    int
		code      string
	}{
		{"lower-case get", "get /v1 HTTP/1.1\r\nHost: x\r\n\r\n", 405, "bad_request"},
		{"unknown method on a route", "FOO /v1/collections HTTP/1.1\r\nHost: x\r\n\r\n", 405, "bad_request"},
		{"unknown method off the routes", "FOO /nope HTTP/1.1\r\nHost: x\r\n\r\n", 405, "bad_request"},
		{"HTTP/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 405, "bad_request"},
		{"request line over the limit", "GET /v1/collections/" + big + " HTTP/1.1\r\nHost: x\r\n\r\n", 400, "bad_request"},
		{"one header over the limit", "GET /v1 HTTP/1.1\r\nHost: x\r\nX-Big: " + big + "\r\n\r\n", 400, "bad_request"},
		{"headers together over the limit", "GET /v1 HTTP/1.1\r\nHost: x\r\n" + many.String() + "\r\n", 400, "bad_request"},
		{"body over the limit", "GET /v1 HTTP/1.1\r\nHost: x\r\nContent-Length: " + fmt.Sprint(MaxRequestBody+1) + "\r\n\r\n" + strings.Repeat("b", MaxRequestBody+1), 400, "bad_request"},
		{"bad content-length", "GET /v1 HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n", 400, "bad_request"},
		{"bad chunk size", "GET /v1 HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n\r\n", 400, "bad_request"},
		{"garbage request line", "\x00\x01garbage\r\n\r\n", 400, "bad_request"},
	}
	h := MustHarness(t, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- h.srv.Listen(ln) }()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", ln.Addr().String())
			require.NoError(t, err)
			defer conn.Close()
			require.NoError(t, conn.SetDeadline(time.Now().Add(5*time.Second)))
			_, err = io.WriteString(conn, tc.raw)
			require.NoError(t, err)
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			require.NoError(t, err)
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			res := result{status: resp.StatusCode, header: resp.Header, body: body}
			assert.Equal(t, tc.status, res.status, "%s", body)
			assert.Equal(t, "application/json", res.header.Get("Content-Type"))
			assert.Equal(t, tc.code, res.errorCode(t))
			assert.NotEmpty(t, res.json(t)["error"].(map[string]any)["message"])
			assert.Equal(t, "no-store", res.header.Get("Cache-Control"))
			assertCORS(t, res)
			if res.status == 405 {
				assert.Equal(t, "GET, HEAD, OPTIONS", res.header.Get("Allow"))
			}
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, h.srv.Shutdown(ctx))
	require.NoError(t, <-done)
}

// TestUnknownMethodsInProcess: the same through app.Test (the server's
// handler), with the metrics counting them as unmatched.
func TestUnknownMethodsInProcess(t *testing.T) {
	h := MustHarness(t, nil)
	for _, m := range []string{"get", "Get", "FOO", "PROPFIND", "options"} {
		t.Run(m, func(t *testing.T) {
			res := h.do(m, "/v1/collections")
			require.Equal(t, http.StatusMethodNotAllowed, res.status, "%s", res.body)
			assert.Equal(t, "bad_request", res.errorCode(t))
			assert.Equal(t, "no-store", res.header.Get("Cache-Control"))
			assertCORS(t, res)
		})
	}
}

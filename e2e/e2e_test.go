//go:build e2e

// Package e2e is `make e2e`'s Go half: against a running `marketd all`
// behind nginx (deploy/nginx/marketd.conf) it checks the edge cache, 304s
// and the rate limiter through the edge, and validates every response the
// whole run received (its own, and those the browser and the TypeScript
// client recorded) against the OpenAPI document. scripts/e2e starts
// everything and sets the E2E_* variables; `go test ./...` never builds
// this file (build tag e2e).
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/client"
	"github.com/marketd/marketd/httpapi"
)

// TestMain writes the responses this run received to
// E2E_TRAFFIC_DIR/go-<pid>.jsonl, so a later run (-run TestZZValidateTraffic)
// validates them with the browser's and the TypeScript client's.
func TestMain(m *testing.M) {
	code := m.Run()
	if dir := os.Getenv("E2E_TRAFFIC_DIR"); dir != "" && len(traffic) > 0 {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		for _, r := range traffic {
			_ = enc.Encode(r)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("go-%d.jsonl", os.Getpid())), buf.Bytes(), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "e2e: write traffic:", err)
			code = 1
		}
	}
	os.Exit(code)
}

func env(t testing.TB, k string) string {
	t.Helper()
	v := os.Getenv(k)
	if v == "" {
		t.Fatalf("%s is not set: run this through make e2e (scripts/e2e)", k)
	}
	return v
}

// from returns an HTTP client whose connections leave from ip (any
// 127.0.0.0/8 address works on loopback), so each check has its own
// rate-limit identity behind the edge.
func from(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
}

// rec is one request and its response, as recorded for validation.
type rec struct {
	Method  string            `json:"method"`
	URL     string            `json:"url"`
	Status  int               `json:"status"`
	Headers map[string]string `json:"headers"`
	Body    string            `json:"body"`
	Source  string            `json:"source"`
}

var (
	traffic   []rec
	trafficMu sync.Mutex
)

func do(t testing.TB, hc *http.Client, method, url string, hdr ...string) rec {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	require.NoError(t, err)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := hc.Do(req)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	r := rec{Method: method, URL: url, Status: resp.StatusCode, Headers: map[string]string{}, Body: string(body), Source: "go"}
	for k := range resp.Header {
		r.Headers[strings.ToLower(k)] = resp.Header.Get(k)
	}
	trafficMu.Lock()
	traffic = append(traffic, r)
	trafficMu.Unlock()
	return r
}

func (r rec) cache() string { return r.Headers["x-cache-status"] }

// ids finds what the checks read: a collection with listings and sales,
// and one of its listed tokens.
type ids struct {
	collection, tokenPath string
}

func discover(t *testing.T, base string) ids {
	t.Helper()
	c := client.New(base, client.WithHTTPClient(from("127.0.0.20")))
	ctx := context.Background()
	for s, err := range c.AllCollections(ctx, client.CollectionsQuery{PageQuery: client.PageQuery{Limit: 100}}) {
		require.NoError(t, err)
		p, err := c.Listings(ctx, s.ID, client.PageQuery{Limit: 1})
		require.NoError(t, err)
		if len(p.Data) == 0 {
			continue
		}
		it := p.Data[0]
		var tok string
		if it.Mint != nil {
			tok = "/v1/tokens/solana/" + *s.ContractAddress + "/" + *it.Mint
		} else {
			tok = "/v1/tokens/" + string(it.Chain) + "/" + *it.ContractAddress + "/" + *it.TokenID
		}
		return ids{collection: s.ID, tokenPath: tok}
	}
	t.Fatal("no collection with listings")
	return ids{}
}

// TestEdgeCache: per endpoint class the edge caches by marketd's
// Cache-Control. Every class: MISS, then HIT with the same body. The floor
// class (s-maxage 10 s, stale-while-revalidate 20 s), whole: STALE (or
// UPDATING) after s-maxage with a background refresh that makes the next
// request a HIT, then a refetch from marketd once s-maxage +
// stale-while-revalidate have passed without a request. (The other
// classes' lifetimes are 15 s to 3600 s; running them whole would make the
// run minutes longer for the same nginx code path.)
func TestEdgeCache(t *testing.T) {
	edge := env(t, "E2E_EDGE")
	id := discover(t, edge)
	hc := from("127.0.0.21")
	classes := []struct {
		name, path, cacheControl string
	}{
		{"index", "/v1", "public, s-maxage=3600, stale-while-revalidate=7200"},
		{"openapi", "/v1/openapi.json", "public, s-maxage=3600, stale-while-revalidate=7200"},
		{"collections", "/v1/collections?limit=3&sort=recent", "public, s-maxage=60, stale-while-revalidate=120"},
		{"detail", "/v1/collections/" + id.collection, "public, s-maxage=30, stale-while-revalidate=60"},
		{"listings", "/v1/collections/" + id.collection + "/listings?limit=7", "public, s-maxage=15, stale-while-revalidate=30"},
		{"sales", "/v1/collections/" + id.collection + "/sales?limit=7", "public, s-maxage=30, stale-while-revalidate=60"},
		{"token", id.tokenPath, "public, s-maxage=30, stale-while-revalidate=60"},
		{"floor", "/v1/collections/" + id.collection + "/floor", "public, s-maxage=10, stale-while-revalidate=20"},
		{"sweep", "/v1/collections/" + id.collection + "/sweep?count=5", "public, s-maxage=15, stale-while-revalidate=30"},
		{"status", "/v1/status", "public, s-maxage=10, stale-while-revalidate=20"},
		{"floor history", "/v1/collections/" + id.collection + "/floor/history?interval=1d", "public, s-maxage=60, stale-while-revalidate=120"},
		{"market feed", "/v1/events?limit=3", "public, s-maxage=5, stale-while-revalidate=10"},
	}
	for _, tc := range classes {
		t.Run(tc.name, func(t *testing.T) {
			a := do(t, hc, "GET", edge+tc.path)
			require.Equal(t, 200, a.Status, "%s", a.Body)
			assert.Equal(t, "MISS", a.cache())
			assert.Equal(t, tc.cacheControl, a.Headers["cache-control"])
			b := do(t, hc, "GET", edge+tc.path)
			assert.Equal(t, "HIT", b.cache())
			if tc.name != "floor" { // the floor's updatedAt is the build time: the cached body is the same
				assert.Equal(t, a.Body, b.Body)
			} else {
				assert.Equal(t, a.Body, b.Body, "a HIT is the cached body")
			}
			assert.NotEmpty(t, b.Headers["access-control-expose-headers"], "CORS headers are cached with the body")
		})
	}

	t.Run("floor class through stale-while-revalidate", func(t *testing.T) {
		path := edge + "/v1/collections/" + id.collection + "/floor?e2e=swr"
		first := do(t, hc, "GET", path)
		require.Equal(t, "MISS", first.cache())
		cached := time.Now()
		time.Sleep(time.Until(cached.Add(11 * time.Second)))
		stale := do(t, hc, "GET", path)
		assert.Contains(t, []string{"STALE", "UPDATING"}, stale.cache(), "past s-maxage, inside stale-while-revalidate: served stale")
		assert.Equal(t, first.Body, stale.Body, "the stale body is the cached one")
		// The background update has refreshed the entry: a HIT with a new body.
		var refreshed rec
		for i := 0; i < 50; i++ {
			refreshed = do(t, hc, "GET", path)
			if refreshed.cache() == "HIT" {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		// (The refresh revalidates with If-None-Match: marketd answers 304 while
		// the floor view is unchanged, so the body may be the cached one.)
		require.Equal(t, "HIT", refreshed.cache(), "background refresh completed")
		refreshedAt := time.Now()
		time.Sleep(time.Until(refreshedAt.Add(31 * time.Second)))
		after := do(t, hc, "GET", path)
		assert.Contains(t, []string{"EXPIRED", "REVALIDATED"}, after.cache(), "past s-maxage + stale-while-revalidate: fetched from marketd before answering, not served stale")
		assert.Equal(t, 200, after.Status)
	})
}

// TestEdgeErrorsNotCached: 400, 404 and 405 pass through the edge every
// time (no-store), with their bodies.
func TestEdgeErrorsNotCached(t *testing.T) {
	edge := env(t, "E2E_EDGE")
	hc := from("127.0.0.22")
	for _, tc := range []struct {
		method, path string
		status       int
		code         string
	}{
		{"GET", "/v1/collections?limit=0", 400, "bad_request"},
		{"GET", "/v1/collections/e2e-no-such-collection", 404, "not_found"},
		{"GET", "/v1/tokens/ethereum/0x0000000000000000000000000000000000000001/1", 404, "not_found"},
		{"POST", "/v1/collections", 405, "bad_request"},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			for i := 0; i < 2; i++ {
				r := do(t, hc, tc.method, edge+tc.path)
				require.Equal(t, tc.status, r.Status, "%s", r.Body)
				assert.Equal(t, "no-store", r.Headers["cache-control"])
				assert.NotEqual(t, "HIT", r.cache(), "request %d", i)
				assert.Contains(t, r.Body, `"code":"`+tc.code+`"`)
			}
		})
	}
}

// TestEdgeConditional: a client's If-None-Match gets a 304 through the
// edge, for a cached entry and for a HEAD.
func TestEdgeConditional(t *testing.T) {
	edge := env(t, "E2E_EDGE")
	hc := from("127.0.0.23")
	path := edge + "/v1/collections?limit=4"
	a := do(t, hc, "GET", path)
	require.Equal(t, 200, a.Status)
	tag := a.Headers["etag"]
	require.NotEmpty(t, tag)
	b := do(t, hc, "GET", path, "If-None-Match", tag)
	assert.Equal(t, 304, b.Status)
	assert.Empty(t, b.Body)
	c := do(t, hc, "GET", path, "If-None-Match", `W/"0000000000000000"`)
	assert.Equal(t, 200, c.Status, "another tag gets the body")
	h := do(t, hc, "HEAD", path)
	assert.Equal(t, 200, h.Status)
	assert.Empty(t, h.Body)
	direct := do(t, hc, "GET", env(t, "E2E_API")+"/v1/collections?limit=4", "If-None-Match", tag)
	assert.Equal(t, 304, direct.Status, "marketd's own ETag check agrees with the edge's")
}

// TestEdgeRateLimit: with the edge trusted (--trusted-proxies 127.0.0.1),
// marketd counts the client the edge saw, not the edge; a client cannot
// buy a fresh budget with its own X-Forwarded-For.
func TestEdgeRateLimit(t *testing.T) {
	edge := env(t, "E2E_EDGE")
	limit, err := strconv.Atoi(env(t, "E2E_RATE_LIST"))
	require.NoError(t, err)
	require.LessOrEqual(t, limit, 90)
	// Start inside one rate window (they are aligned to the wall-clock minute).
	if s := time.Now().Second(); s > 40 {
		time.Sleep(time.Duration(61-s) * time.Second)
	}
	a, b := from("127.0.0.30"), from("127.0.0.31")
	id := discover(t, edge)
	url := func(i int) string { // distinct URLs: each a MISS, so each reaches marketd
		return fmt.Sprintf("%s/v1/collections/%s/listings?limit=%d&e2e=ratelimit", edge, id.collection, i)
	}
	var last rec
	n := 0
	for i := 1; i <= limit+1; i++ {
		last = do(t, a, "GET", url(i))
		if last.Status != 200 {
			break
		}
		n++
	}
	// discover spent none of a's budget (it ran from another address).
	assert.Equal(t, limit, n, "the list bucket of client a allows exactly --rate-list requests")
	require.Equal(t, 429, last.Status, "%s", last.Body)
	assert.NotEmpty(t, last.Headers["retry-after"])
	assert.Equal(t, strconv.Itoa(limit), last.Headers["x-ratelimit-limit"])
	assert.Equal(t, "no-store", last.Headers["cache-control"])

	forged := do(t, a, "GET", url(limit+2), "X-Forwarded-For", "203.0.113.77")
	assert.Equal(t, 429, forged.Status, "a client-sent X-Forwarded-For does not buy a fresh budget")
	forged2 := do(t, a, "GET", env(t, "E2E_API")+"/v1/collections/"+id.collection+"/listings?limit=99&e2e=ratelimit", "X-Forwarded-For", "203.0.113.78")
	assert.Equal(t, 429, forged2.Status, "nor straight to marketd: an untrusted peer's header is ignored")

	other := do(t, b, "GET", url(limit+3))
	assert.Equal(t, 200, other.Status, "another client behind the same edge has its own budget")
	item := do(t, a, "GET", edge+"/v1/collections/"+id.collection+"?e2e=item")
	assert.Equal(t, 200, item.Status, "the item bucket is independent")
}

var validatorOnce = sync.OnceValues(func() (validator.Validator, error) {
	doc, err := libopenapi.NewDocument(httpapi.OpenAPIDocument)
	if err != nil {
		return nil, err
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		return nil, fmt.Errorf("%v", errs)
	}
	return v, nil
})

// validate checks one recorded response against the OpenAPI document.
// HEAD is checked as the GET it mirrors (no body); a method the API does
// not handle must be SPEC §7's error body with status 405.
func validate(t *testing.T, r rec) {
	t.Helper()
	v, err := validatorOnce()
	require.NoError(t, err)
	if r.Method != "GET" && r.Method != "HEAD" && r.Method != "OPTIONS" {
		assert.Equal(t, 405, r.Status, "%s %s", r.Method, r.URL)
		var e struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		require.NoError(t, json.Unmarshal([]byte(r.Body), &e), "%s %s: %s", r.Method, r.URL, r.Body)
		assert.Equal(t, "bad_request", e.Error.Code)
		assert.Equal(t, "GET, HEAD, OPTIONS", r.Headers["allow"])
		return
	}
	if r.Method == "HEAD" {
		assert.Empty(t, r.Body, "%s %s", r.Method, r.URL)
		return // the same status and headers as GET; checked in TestEdgeConditional and httpapi's tests
	}
	req := httptest.NewRequest(r.Method, r.URL, nil)
	resp := &http.Response{StatusCode: r.Status, Header: http.Header{}, Body: io.NopCloser(bytes.NewReader([]byte(r.Body))), Request: req}
	for k, val := range r.Headers {
		resp.Header.Set(k, val)
	}
	if ok, errs := v.ValidateHttpResponse(req, resp); !ok {
		var msgs []string
		for _, e := range errs {
			msgs = append(msgs, e.Message+": "+e.Reason)
			for _, se := range e.SchemaValidationErrors {
				msgs = append(msgs, "  "+se.Reason+" at "+se.FieldPath)
			}
		}
		t.Errorf("%s %s (%s) → %d violates openapi.json:\n%s\nbody: %.500s", r.Method, r.URL, r.Source, r.Status, strings.Join(msgs, "\n"), r.Body)
	}
}

// TestZZValidateTraffic runs last (tests run in source order): every
// response this run received, from Go, the browser and the TypeScript
// client (E2E_TRAFFIC_DIR/*.jsonl), against the OpenAPI document.
func TestZZValidateTraffic(t *testing.T) {
	var all []rec
	files, err := filepath.Glob(filepath.Join(env(t, "E2E_TRAFFIC_DIR"), "*.jsonl"))
	require.NoError(t, err)
	for _, f := range files {
		fh, err := os.Open(f)
		require.NoError(t, err)
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			var r rec
			require.NoError(t, json.Unmarshal(sc.Bytes(), &r))
			if r.Source == "" {
				r.Source = filepath.Base(f)
			}
			all = append(all, r)
		}
		fh.Close()
		require.NoError(t, sc.Err())
	}
	sources := map[string]int{}
	for _, r := range all {
		sources[r.Source]++
		validate(t, r)
	}
	t.Logf("validated %d responses against openapi.json: %v", len(all), sources)
	if os.Getenv("E2E_REQUIRE_RECORDED") != "" {
		for _, s := range strings.Split(os.Getenv("E2E_REQUIRE_RECORDED"), ",") {
			assert.NotZero(t, sources[s], "no responses recorded by %s", s)
		}
	}
}

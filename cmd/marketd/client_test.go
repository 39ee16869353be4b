package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/marketd/marketd/httpapi"
	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// resp is one decoded HTTP response.
type resp struct {
	Status int
	Header http.Header
	Body   []byte
	JSON   map[string]any
}

// do sends a request and decodes a JSON object body when there is one.
func do(tb testing.TB, method, url string, body io.Reader, headers ...string) resp {
	tb.Helper()
	req, err := http.NewRequest(method, url, body)
	require.NoError(tb, err)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(tb, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(tb, err)
	r := resp{Status: res.StatusCode, Header: res.Header, Body: b}
	validateAgainstOpenAPI(tb, req, res, b)
	if len(b) > 0 && b[0] == '{' {
		require.NoError(tb, json.Unmarshal(b, &r.JSON), "body: %s", b)
	}
	return r
}

func get(tb testing.TB, url string, headers ...string) resp {
	tb.Helper()
	return do(tb, http.MethodGet, url, nil, headers...)
}

func post(tb testing.TB, url, body string) resp {
	tb.Helper()
	return do(tb, http.MethodPost, url, strings.NewReader(body), "Content-Type", "application/json")
}

func obj(v any) map[string]any { m, _ := v.(map[string]any); return m }
func arr(v any) []any          { a, _ := v.([]any); return a }

var (
	evmAddr   = regexp.MustCompile(`^0x[0-9a-f]{40}$`)
	base58    = regexp.MustCompile(`^[1-9A-HJ-NP-Za-km-z]{32,44}$`)
	decimalID = regexp.MustCompile(`^[0-9]+$`)
	chains    = map[string]bool{"solana": true, "ethereum": true, "polygon": true, "base": true, "ink": true, "apechain": true, "abstract": true, "robinhood": true}
	statuses  = map[string]bool{"active": true, "filled": true, "cancelled": true, "expired": true, "sold": true}
)

// assertPrice checks SPEC's Price rules: all four fields present; raw an
// exact integer string; decimal equal to raw scaled by the chain's decimals;
// currency per chain; usd null on chains without a feed.
func assertPrice(t *testing.T, chain string, v any) {
	t.Helper()
	p := obj(v)
	require.NotNil(t, p, "price object")
	for _, f := range []string{"raw", "decimal", "currency", "usd"} {
		_, ok := p[f]
		assert.True(t, ok, "price.%s present", f)
	}
	raw, _ := p["raw"].(string)
	n, ok := new(big.Int).SetString(raw, 10)
	require.True(t, ok, "price.raw %q is an integer string", raw)
	assert.True(t, n.Sign() >= 0)
	dec := 18
	if chain == "solana" {
		dec = 9
	}
	want, _ := new(big.Float).SetPrec(200).Quo(new(big.Float).SetInt(n), new(big.Float).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(dec)), nil))).Float64()
	assert.InEpsilon(t, want+1e-300, p["decimal"].(float64)+1e-300, 1e-12, "decimal matches raw")
	cur := map[string]string{"solana": "SOL", "ethereum": "ETH", "base": "ETH", "ink": "ETH", "polygon": "MATIC", "apechain": "APE", "abstract": "ETH", "robinhood": "ETH"}[chain]
	assert.Equal(t, cur, p["currency"], "currency of %s", chain)
	if chain == "polygon" || chain == "apechain" {
		assert.Nil(t, p["usd"], "usd is always null on %s", chain)
	}
}

// assertMarketItem checks SPEC's MarketItem field rules.
func assertMarketItem(t *testing.T, v any) {
	t.Helper()
	it := obj(v)
	require.NotNil(t, it)
	for _, f := range []string{"chain", "contractAddress", "tokenId", "mint", "collectionId", "price", "seller", "buyer", "marketplace", "status", "expiresAt", "timestamp", "orderId", "tx"} {
		_, ok := it[f]
		assert.True(t, ok, "MarketItem.%s present", f)
	}
	chain, _ := it["chain"].(string)
	assert.True(t, chains[chain], "chain %q", chain)
	assert.True(t, statuses[it["status"].(string)])
	cid, _ := it["collectionId"].(string)
	assert.Equal(t, strings.ToLower(cid), cid, "collectionId is lowercase")
	if chain == "solana" {
		assert.Nil(t, it["contractAddress"])
		assert.Nil(t, it["tokenId"])
		assert.Regexp(t, base58, it["mint"])
	} else {
		assert.Regexp(t, evmAddr, it["contractAddress"])
		assert.Regexp(t, decimalID, it["tokenId"])
		assert.Nil(t, it["mint"])
	}
	assertPrice(t, chain, it["price"])
}

// assertCORS checks SPEC §5's four headers.
func assertCORS(t *testing.T, r resp) {
	t.Helper()
	assert.Equal(t, "*", r.Header.Get("Access-Control-Allow-Origin"))
	assert.Equal(t, "GET, OPTIONS", r.Header.Get("Access-Control-Allow-Methods"))
	assert.Equal(t, "Content-Type, Accept", r.Header.Get("Access-Control-Allow-Headers"))
	assert.Equal(t, "86400", r.Header.Get("Access-Control-Max-Age"))
}

// documentedPath matches the paths the OpenAPI document describes.
var documentedPath = regexp.MustCompile(`^/v1(/openapi\.json|/docs(/[^/]+)?|/collections(/[^/]+(/(floor|listings|sales|events))?)?|/tokens(/[^/]+/[^/]+/[^/]+)?)?$`)

var (
	oaOnce sync.Once
	oaV    validator.Validator
	oaErr  error
)

// validateAgainstOpenAPI checks every public API response (GET under /v1
// with a documented status) against the OpenAPI 3.1 document marketd
// serves, so the document and the server cannot drift apart.
func validateAgainstOpenAPI(tb testing.TB, req *http.Request, res *http.Response, body []byte) {
	tb.Helper()
	if req.Method != http.MethodGet || !documentedPath.MatchString(req.URL.EscapedPath()) || res.StatusCode == http.StatusNotModified {
		return
	}
	oaOnce.Do(func() {
		doc, err := libopenapi.NewDocument(httpapi.OpenAPIDocument)
		if err != nil {
			oaErr = err
			return
		}
		v, errs := validator.NewValidator(doc)
		if len(errs) > 0 {
			oaErr = fmt.Errorf("%v", errs)
			return
		}
		oaV = v
	})
	require.NoError(tb, oaErr)
	vreq, err := http.NewRequest(req.Method, "http://localhost"+req.URL.RequestURI(), nil)
	require.NoError(tb, err)
	cp := *res
	cp.Body = io.NopCloser(bytes.NewReader(body))
	ok, errs := oaV.ValidateHttpResponse(vreq, &cp)
	if !ok {
		var msgs []string
		for _, e := range errs {
			m := e.Message + ": " + e.Reason
			for _, se := range e.SchemaValidationErrors {
				m += " [" + se.FieldPath + ": " + se.Reason + "]"
			}
			msgs = append(msgs, m)
		}
		tb.Errorf("response to %s %s does not match the OpenAPI document: %s\nbody: %.600s", req.Method, req.URL.RequestURI(), strings.Join(msgs, "; "), body)
	}
}

// esc escapes one path segment.
func esc(s string) string { return url.PathEscape(s) }

// postQuiet posts with no body and no test assertions (for background calls).
func postQuiet(url string) (int, error) {
	res, err := http.Post(url, "application/json", nil)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, res.Body)
	return res.StatusCode, nil
}

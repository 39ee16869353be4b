package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOpenAPIDocument(t *testing.T) {
	h := MustHarness(t, nil)
	res := h.get("/v1/openapi.json")
	require.Equal(t, http.StatusOK, res.status)
	assert.Equal(t, OpenAPIDocument, res.body, "served bare, byte for byte")

	var doc struct {
		OpenAPI string `json:"openapi"`
		Info    struct {
			Version string `json:"version"`
		} `json:"info"`
		Paths map[string]map[string]any `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(res.body, &doc))
	assert.Equal(t, "3.1.0", doc.OpenAPI)
	assert.Equal(t, "1.0.0", doc.Info.Version)
	for _, rt := range routeTable() {
		p := openAPIPath(rt.pattern)
		require.Contains(t, doc.Paths, p)
		assert.Contains(t, doc.Paths[p], "get", p)
		assert.Contains(t, doc.Paths[p], "options", p)
	}
	assert.Len(t, doc.Paths, len(routeTable()), "no path the server does not serve")

	d, err := libopenapi.NewDocument(OpenAPIDocument)
	require.NoError(t, err)
	v, errs := validator.NewValidator(d)
	require.Empty(t, errs)
	ok, verrs := v.ValidateDocument()
	assert.True(t, ok, "%v", verrs)
}

func TestIndex(t *testing.T) {
	h := MustHarness(t, nil)
	res := h.get("/v1")
	require.Equal(t, http.StatusOK, res.status)
	d := res.json(t)["data"].(map[string]any)
	assert.Equal(t, "marketd", d["name"])
	assert.Equal(t, "1.0.0", d["version"])
	assert.Equal(t, "/v1/docs", d["documentation"])
	var paths []string
	for _, e := range d["endpoints"].([]any) {
		paths = append(paths, e.(map[string]any)["path"].(string))
	}
	assert.ElementsMatch(t, []string{
		"/v1", "/v1/openapi.json", "/v1/docs", "/v1/docs/redoc-2.5.4.standalone.js", "/v1/collections", "/v1/collections/{id}", "/v1/collections/{id}/floor",
		"/v1/collections/{id}/floor/history", "/v1/collections/{id}/listings", "/v1/collections/{id}/sales", "/v1/collections/{id}/events", "/v1/tokens", "/v1/tokens/{chain}/{address}/{tokenId}",
		"/v1/collections/{id}/sweep", "/v1/events", "/v1/status",
	}, paths)
}

// TestCacheHeaders checks SPEC §8's edge cache table on success, and the
// RFC 9213 CDN-Cache-Control twin.
func TestCacheHeaders(t *testing.T) {
	tests := []struct {
		name, target string
		n            string
		twoN         string
	}{
		{"index", "/v1", "3600", "7200"},
		{"openapi", "/v1/openapi.json", "3600", "7200"},
		{"collections", "/v1/collections", "60", "120"},
		{"detail", "/v1/collections/" + testID, "30", "60"},
		{"floor", "/v1/collections/" + testID + "/floor", "10", "20"},
		{"listings", "/v1/collections/" + testID + "/listings", "15", "30"},
		{"sales", "/v1/collections/" + testID + "/sales", "30", "60"},
		{"token", "/v1/tokens/ethereum/" + testContract + "/1", "30", "60"},
	}
	h := MustHarness(t, nil)
	h.r.tokens["ethereum|"+testContract+"|1"] = tokenView(1)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := h.get(tc.target)
			require.Equal(t, http.StatusOK, res.status, "%s", res.body)
			assert.Equal(t, "public, s-maxage="+tc.n+", stale-while-revalidate="+tc.twoN, res.header.Get("Cache-Control"))
			assert.Equal(t, "max-age="+tc.n+", stale-while-revalidate="+tc.twoN, res.header.Get("CDN-Cache-Control"))
			assert.NotEmpty(t, res.header.Get("ETag"))
			assert.True(t, strings.HasPrefix(res.header.Get("Content-Type"), "application/json"))
			for _, k := range []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "Retry-After"} {
				assert.Empty(t, res.header.Get(k), "success carries no rate-limit header %s", k)
			}
		})
	}
}

func TestCollectionDetail(t *testing.T) {
	tests := []struct {
		name   string
		id     string
		status int
		code   string
	}{
		{"document id", testID, 200, ""},
		{"slug", testSlug, 200, ""},
		{"contract address", testContract, 200, ""},
		{"unknown", "nope", 404, "not_found"},
		{"201 characters", strings.Repeat("a", 201), 404, "not_found"},
		{"no chain still has detail", noChainID, 200, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := MustHarness(t, nil)
			if tc.id == strings.Repeat("a", 201) {
				h.r.aliases[tc.id] = testID // would resolve if looked up
			}
			res := h.get("/v1/collections/" + tc.id)
			require.Equal(t, tc.status, res.status, "%s", res.body)
			if tc.code != "" {
				assert.Equal(t, tc.code, res.errorCode(t))
				return
			}
			var want any
			require.NoError(t, json.Unmarshal(h.r.collections[h.resolveFake(tc.id)].Detail, &want))
			assert.Equal(t, want, res.json(t)["data"])
		})
	}
	t.Run("200 characters is looked up", func(t *testing.T) {
		h := MustHarness(t, nil)
		id := strings.Repeat("b", 200)
		h.r.aliases[id] = testID
		assert.Equal(t, 200, h.get("/v1/collections/"+id).status)
	})
	t.Run("over 200 characters is 404 without a lookup", func(t *testing.T) {
		h := MustHarness(t, nil)
		for _, p := range []string{"", "/floor", "/listings", "/sales"} {
			res := h.get("/v1/collections/" + strings.Repeat("a", 201) + p)
			assert.Equal(t, 404, res.status, p)
		}
		assert.Zero(t, h.r.count("ResolveCollection"))
	})
}

func (h *harness) resolveFake(id string) string {
	if c, ok := h.r.aliases[id]; ok {
		return c
	}
	return id
}

// TestOnRequestSeesEveryRequest: Config.OnRequest is called once for every
// request, answered or not (cmd/marketd counts arriving reads with it, so
// that background work gives way to them).
func TestOnRequestSeesEveryRequest(t *testing.T) {
	var n atomic.Int64
	h := MustHarness(t, func(c *Config) { c.OnRequest = func() { n.Add(1) } })
	assert.Equal(t, 200, h.get("/v1/collections").status)
	assert.Equal(t, 404, h.get("/v1/nowhere").status)
	assert.Equal(t, int64(2), n.Load())
}

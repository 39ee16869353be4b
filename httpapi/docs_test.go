package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDocsPage checks the reference page and its script: what they are,
// their cache headers and ETags, that the page names no other origin, and
// that the embedded bundle, its recorded version, its path and the
// OpenAPI document agree.
func TestDocsPage(t *testing.T) {
	h := MustHarness(t, nil)

	t.Run("page", func(t *testing.T) {
		res := h.get("/v1/docs")
		require.Equal(t, http.StatusOK, res.status, "%s", res.body)
		assert.Equal(t, "text/html; charset=utf-8", res.header.Get("Content-Type"))
		assert.Equal(t, "public, s-maxage=300, stale-while-revalidate=600", res.header.Get("Cache-Control"))
		assert.Equal(t, "max-age=300, stale-while-revalidate=600", res.header.Get("CDN-Cache-Control"))
		assert.NotEmpty(t, res.header.Get("ETag"))
		assert.Equal(t, "nosniff", res.header.Get("X-Content-Type-Options"))
		csp := res.header.Get("Content-Security-Policy")
		assert.Contains(t, csp, "default-src 'none'")
		assert.Contains(t, csp, "script-src 'self';")
		assert.NotContains(t, csp, "http", "the policy allows no other origin")
		assert.Equal(t, "*", res.header.Get("Access-Control-Allow-Origin"))
		body := string(res.body)
		assert.Contains(t, body, `<script src="`+docsScriptPath+`">`)
		assert.Contains(t, body, `spec-url="/v1/openapi.json"`)
		assert.NotRegexp(t, `(?i)(https?:)?//[a-z0-9]`, body, "no URL of another origin (no CDN)")
	})
	t.Run("script", func(t *testing.T) {
		res := h.get(docsScriptPath)
		require.Equal(t, http.StatusOK, res.status)
		assert.Equal(t, "text/javascript; charset=utf-8", res.header.Get("Content-Type"))
		assert.Equal(t, "public, s-maxage=31536000, max-age=31536000, immutable", res.header.Get("Cache-Control"))
		assert.Equal(t, "max-age=31536000, immutable", res.header.Get("CDN-Cache-Control"))
		assert.NotEmpty(t, res.header.Get("ETag"))
		assert.True(t, bytes.Equal(redocScript, res.body), "the embedded bundle, byte for byte")
		file, err := os.ReadFile("reference/redoc.standalone.js")
		require.NoError(t, err)
		assert.True(t, bytes.Equal(file, redocScript))
	})
	t.Run("revalidation", func(t *testing.T) {
		for _, p := range []string{"/v1/docs", docsScriptPath} {
			first := h.get(p)
			require.Equal(t, http.StatusOK, first.status)
			again := h.get(p, "If-None-Match", first.header.Get("ETag"))
			assert.Equal(t, http.StatusNotModified, again.status, p)
			assert.Empty(t, again.body, p)
		}
		assert.NotEqual(t, h.get("/v1/docs").header.Get("ETag"), h.get(docsScriptPath).header.Get("ETag"))
	})
	t.Run("HEAD", func(t *testing.T) {
		res := h.do(http.MethodHead, "/v1/docs")
		assert.Equal(t, http.StatusOK, res.status)
		assert.Empty(t, res.body)
	})
	t.Run("the version agrees", func(t *testing.T) {
		// The bundle states its version in its code and in its licence file.
		assert.Contains(t, string(redocScript), `"`+redocVersion+`"`)
		lic, err := os.ReadFile("reference/redoc.standalone.js.LICENSE.txt")
		require.NoError(t, err)
		assert.Contains(t, string(lic), `Version: "`+redocVersion+`"`)
		readme, err := os.ReadFile("reference/README.md")
		require.NoError(t, err)
		assert.Contains(t, string(readme), "version **"+redocVersion+"**")
		var doc struct {
			Paths map[string]json.RawMessage `json:"paths"`
		}
		require.NoError(t, json.Unmarshal(OpenAPIDocument, &doc))
		assert.Contains(t, doc.Paths, docsScriptPath)
		var scripts []string
		for p := range doc.Paths {
			if strings.HasPrefix(p, "/v1/docs/") {
				scripts = append(scripts, p)
			}
		}
		assert.Equal(t, []string{docsScriptPath}, scripts, "one script path, the served one")
		assert.Regexp(t, regexp.MustCompile(`^\d+\.\d+\.\d+$`), redocVersion)
	})
}

//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDocsPage: the API reference page, as a reader's browser meets it
// through the edge. Debian's Chromium, headless, with every host name but
// loopback unresolvable (no outside network), renders /v1/docs; every
// path of the served /v1/openapi.json must appear in the rendered DOM as
// an operation (Redoc's "http-verb" label followed by the path). The DOM
// and a screenshot are kept in E2E_OUT.
func TestDocsPage(t *testing.T) {
	edge := env(t, "E2E_EDGE")
	out := env(t, "E2E_OUT")
	hc := from("127.0.0.30")

	page := do(t, hc, "GET", edge+"/v1/docs")
	require.Equal(t, 200, page.Status, "%s", page.Body)
	assert.Equal(t, "text/html; charset=utf-8", page.Headers["content-type"])
	assert.Contains(t, page.Headers["content-security-policy"], "default-src 'none'")
	assert.NotRegexp(t, `(?i)(https?:)?//[a-z0-9]`, page.Body, "the page names no other origin (no CDN)")
	m := regexp.MustCompile(`<script src="(/v1/docs/[^"]+)">`).FindStringSubmatch(page.Body)
	require.NotNil(t, m, "the page loads its script from the node")
	script := do(t, hc, "GET", edge+m[1])
	require.Equal(t, 200, script.Status)
	assert.Equal(t, "public, s-maxage=31536000, max-age=31536000, immutable", script.Headers["cache-control"])
	again := do(t, hc, "GET", edge+m[1])
	assert.Equal(t, "HIT", again.cache(), "the edge keeps the immutable script")
	spec := do(t, hc, "GET", edge+"/v1/openapi.json")
	require.Equal(t, 200, spec.Status)
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	require.NoError(t, json.Unmarshal([]byte(spec.Body), &doc))
	require.NotEmpty(t, doc.Paths)

	chromium := func(extra ...string) []byte {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		args := append([]string{
			"--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
			"--user-data-dir=" + t.TempDir(), // a fresh profile: nothing cached
			// No outside network: any name but loopback fails to resolve.
			"--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
			"--virtual-time-budget=30000", "--window-size=1400,2200",
		}, extra...)
		args = append(args, edge+"/v1/docs")
		cmd := exec.CommandContext(ctx, "/usr/bin/chromium", args...)
		var stderr limitedBuffer
		cmd.Stderr = &stderr
		b, err := cmd.Output()
		require.NoError(t, err, "chromium: %s", stderr.String())
		return b
	}
	dom := chromium("--dump-dom")
	require.NoError(t, os.WriteFile(filepath.Join(out, "docs.html"), dom, 0o644))
	shot := filepath.Join(out, "docs.png")
	_ = os.Remove(shot)
	chromium("--screenshot=" + shot)

	text := string(dom)
	for p, ops := range doc.Paths {
		for method := range ops {
			if method == "parameters" || method == "summary" || method == "description" {
				continue
			}
			re := regexp.MustCompile(`http-verb ` + method + `">` + method + `</span><span[^>]*>` + regexp.QuoteMeta(html.EscapeString(p)) + `</span>`)
			assert.Regexp(t, re, text, "%s %s is rendered on the page", method, p)
		}
	}
	fi, err := os.Stat(shot)
	require.NoError(t, err, "a screenshot")
	png, err := os.ReadFile(shot)
	require.NoError(t, err)
	assert.Equal(t, "\x89PNG", string(png[:4]))
	assert.Greater(t, fi.Size(), int64(20_000), "a screenshot of a rendered page, not a blank one")
	t.Logf("docs page: %d paths rendered; DOM %d bytes; screenshot %s (%d bytes)", len(doc.Paths), len(dom), shot, fi.Size())
}

// limitedBuffer keeps the last 8 KiB written to it (Chromium's stderr is
// noisy: the failure message needs only its end).
type limitedBuffer struct{ b []byte }

func (l *limitedBuffer) Write(p []byte) (int, error) {
	l.b = append(l.b, p...)
	if len(l.b) > 8<<10 {
		l.b = l.b[len(l.b)-8<<10:]
	}
	return len(p), nil
}

func (l *limitedBuffer) String() string { return string(l.b) }

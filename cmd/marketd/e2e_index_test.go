package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCollectionIndexRetention: while the collection index fails,
// /v1/collections serves its last good summaries for --row-retention after
// the index's last success, then answers 502 upstream_error (SPEC §4, §7);
// the next good poll serves it again. A retention of 1ms has run out by the
// time the failing cycle is projected; one of an hour has not.
func TestCollectionIndexRetention(t *testing.T) {
	tests := []struct {
		name, retention string
		failing         int
	}{
		{"within retention: the last good index", "1h", 200},
		{"past retention: 502", "1ms", 502},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newAPIEnv(t, "--row-retention", tc.retention)
			good := e.get(t, "/v1/collections?limit=5")
			require.Equal(t, 200, good.Status, "%s", good.Body)
			require.NotEmpty(t, arr(good.JSON["data"]))

			e.fault(t, "collection-index", "error")
			e.cycle(t)
			r := e.get(t, "/v1/collections?limit=5")
			if tc.failing == 502 {
				assertError(t, r, 502, "upstream_error")
				assertError(t, e.get(t, "/v1/collections?chain=ethereum&sort=floor"), 502, "upstream_error")
				assert.Equal(t, 200, e.get(t, "/v1/collections/"+esc(arr(good.JSON["data"])[0].(map[string]any)["id"].(string))).Status,
					"the detail never answers 502")
			} else {
				require.Equal(t, 200, r.Status, "%s", r.Body)
				assert.Equal(t, good.JSON["data"], r.JSON["data"], "the last good index, unflagged")
				assert.NotContains(t, r.JSON, "meta")
			}

			e.reset(t)
			e.cycle(t)
			r = e.get(t, "/v1/collections?limit=5")
			require.Equal(t, 200, r.Status, "%s", r.Body)
			assert.Equal(t, good.JSON["data"], r.JSON["data"])
		})
	}
}

// TestStackRejectionsEndToEnd: methods Fiber does not know answer SPEC's
// error body with CORS and no-store on the real node too.
func TestStackRejectionsEndToEnd(t *testing.T) {
	e := newAPIEnv(t)
	for _, m := range []string{"get", "FOO"} {
		t.Run(m, func(t *testing.T) {
			r := do(t, m, e.API+"/v1/collections", nil)
			assertError(t, r, 405, "bad_request")
			assert.Equal(t, "GET, HEAD, OPTIONS", r.Header.Get("Allow"))
		})
	}
}

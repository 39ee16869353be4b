package httpapi

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/render"
)

// countedName is the view module the tests of this package register.
const countedName = "test counted"

// mustRegisterCounted registers a view module served as it is, whose
// record is a number, until the test ends (the tests of this package do
// not run in parallel: its route is in every server built meanwhile).
func mustRegisterCounted(t *testing.T) {
	t.Helper()
	render.RegisterView(render.ViewSpec[uint64]{
		Name:   countedName,
		Family: "v/m/test-counted/",
		Parts:  render.PartListings,
		Derive: func(_ *render.Rendered, rec *uint64) (*uint64, bool) { return rec, false },
		Encode: func(*uint64) []byte { return nil },
		Decode: func([]byte) (*uint64, error) { return new(uint64), nil },
		Path:   "/v1/collections/:id/counted", Summary: "Counted", MaxAge: 15,
		Body: func(cid string, c readmodel.Chain, rec *uint64) []byte {
			var n uint64
			if rec != nil {
				n = *rec
			}
			return fmt.Appendf(nil, `{"collectionId":%q,"chain":%q,"n":%d}`, cid, c, n)
		},
	})
	t.Cleanup(func() { render.UnregisterView(countedName) })
}

// TestViewModuleRoute: a module that declares a path is served there by
// the generic handler: its body in the envelope, the item bucket's
// headers, an ETag from its record's version (none before a record
// exists), 304 on a match, 404 for an unresolved id; the index lists it.
func TestViewModuleRoute(t *testing.T) {
	mustRegisterCounted(t)
	h := MustHarness(t, nil)
	target := "/v1/collections/" + testSlug + "/counted"

	res := h.get(target)
	require.Equal(t, http.StatusOK, res.status, string(res.body))
	assert.JSONEq(t, `{"data":{"collectionId":"`+testID+`","chain":"ethereum","n":0}}`, string(res.body), "no record yet")
	assert.Empty(t, res.header.Get("ETag"), "version 0: no ETag")
	assert.Equal(t, "public, s-maxage=15, stale-while-revalidate=30", res.header.Get("Cache-Control"))

	n := uint64(7)
	h.r.views[countedName+"|"+testID] = render.ViewValue{Version: 5, Record: &n}
	h.r.bump()
	res = h.get(target)
	require.Equal(t, http.StatusOK, res.status)
	assert.JSONEq(t, `{"data":{"collectionId":"`+testID+`","chain":"ethereum","n":7}}`, string(res.body))
	tag := res.header.Get("ETag")
	require.NotEmpty(t, tag)
	assert.Equal(t, http.StatusNotModified, h.get(target, "If-None-Match", tag).status)

	assert.Equal(t, http.StatusNotFound, h.get("/v1/collections/nope/counted").status)

	var paths []string
	for _, e := range h.get("/v1").json(t)["data"].(map[string]any)["endpoints"].([]any) {
		paths = append(paths, e.(map[string]any)["path"].(string))
	}
	assert.Contains(t, paths, "/v1/collections/{id}/counted")
}

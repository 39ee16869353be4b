package source_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/ingest/source"
	"github.com/marketd/marketd/readmodel/normalize"
)

// lazyMatchesRowByRow checks DecodeLazyGrouped and LazyGroup.Decode
// against the slowest, plainest reading of a grouped page: encoding/json
// down to raw rows, then DecodeRow on each row. Both must accept the same
// bodies and yield the same rows and the same number of rejects per group.
// It reports whether the body was a grouped page.
func lazyMatchesRowByRow[R any](t *testing.T, body []byte) bool {
	t.Helper()
	lazy, lerr := source.DecodeLazyGrouped[R](bytes.Clone(body))
	var ref source.Page[source.Group[json.RawMessage]]
	if rerr := json.Unmarshal(body, &ref); rerr != nil {
		require.Error(t, lerr, "the lazy decoder accepted a body encoding/json rejects: %q", body)
		assert.Equal(t, source.ClassBadPayload, source.ErrorClass(lerr))
		return false
	}
	require.NoError(t, lerr, "%q", body)
	require.Len(t, lazy.Items, len(ref.Items))
	assert.Equal(t, ref.NextCursor, lazy.NextCursor)
	for i, g := range ref.Items {
		var want []R
		rejects := 0
		for _, raw := range g.Rows {
			var r R
			if source.DecodeRow(raw, &r) != nil {
				rejects++
				continue
			}
			want = append(want, r)
		}
		rows, errs := lazy.Items[i].Decode()
		assert.Equal(t, g.CollectionID, lazy.Items[i].CollectionID)
		assert.Equal(t, want, rows, "group %d of %q", i, body)
		assert.Len(t, errs, rejects, "group %d of %q", i, body)
		for _, err := range errs {
			assert.NotEmpty(t, normalize.ReasonOf(err))
		}
	}
	return true
}

// TestLazyGroupsDecodeRowByRow: the simulator's pages (with every upstream
// quirk it knows) and hand-made edge cases read the same through the lazy
// decoder as row by row through encoding/json; a body of the wrong shape
// fails the page as bad_payload.
func TestLazyGroupsDecodeRowByRow(t *testing.T) {
	grouped := 0
	for _, body := range simPages(t) {
		if lazyMatchesRowByRow[normalize.RawListing](t, body) {
			grouped++
		}
		lazyMatchesRowByRow[normalize.RawToken](t, body)
	}
	assert.GreaterOrEqual(t, grouped, 3, "both listings pages and the tokens page are grouped")

	big := `{"chain":"ethereum","tokenId":"1","price":"1","name":"` + strings.Repeat("x", source.MaxRow) + `"}`
	tests := []struct {
		name string
		body string
		ok   bool
	}{
		{name: "clean", body: `{"items":[{"collectionId":"c","rows":[{"chain":"ethereum","tokenId":"1","price":"1"}]}],"nextCursor":"2"}`, ok: true},
		{name: "bad rows among good", body: `{"items":[{"collectionId":"c","rows":["x",1,null,{"chain":"solana","price":1.5},{"price":{}}]}]}`, ok: true},
		{name: "rows null or absent", body: `{"items":[{"collectionId":"c","rows":null},{"collectionId":"d"}]}`, ok: true},
		{name: "group null", body: `{"items":[null]}`, ok: true},
		{name: "oversized row", body: `{"items":[{"collectionId":"c","rows":[` + big + `,{"chain":"ethereum","tokenId":"2","price":"2"}]}]}`, ok: true},
		{name: "rows an object", body: `{"items":[{"collectionId":"c","rows":{}}]}`},
		{name: "rows a string", body: `{"items":[{"collectionId":"c","rows":"[]"}]}`},
		{name: "collection id a number", body: `{"items":[{"collectionId":1,"rows":[]}]}`},
		{name: "truncated", body: `{"items":[{"collectionId":"c","rows":[{"chain":`},
		{name: "not an object", body: `[]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.ok, lazyMatchesRowByRow[normalize.RawListing](t, []byte(tc.body)))
		})
	}
	t.Run("oversized row is rejected alone", func(t *testing.T) {
		p, err := source.DecodeLazyGrouped[normalize.RawListing]([]byte(tests[4].body))
		require.NoError(t, err)
		rows, rejects := p.Items[0].Decode()
		require.Len(t, rows, 1)
		assert.Equal(t, "2", rows[0].TokenID)
		require.Len(t, rejects, 1)
		assert.Equal(t, normalize.RejectOversized, normalize.ReasonOf(rejects[0]))
	})
}

// FuzzLazyGroups: on any body the lazy decoder never panics and reads what
// encoding/json reads row by row.
func FuzzLazyGroups(f *testing.F) {
	for _, b := range simPages(f) {
		if len(b) > 4096 {
			b = append(bytes.Clone(b[:4096]), "]}]}"...)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"items":[{"collectionId":"c","rows":["x",1,null,{"chain":"solana","price":1.5}]}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		lazyMatchesRowByRow[normalize.RawListing](t, body)
	})
}

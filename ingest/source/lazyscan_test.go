package source_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/ingest/source"
	"github.com/marketd/marketd/readmodel/normalize"
)

// scanMatchesStd checks that when the page scanner reads body it reads what
// encoding/json reads into the lazy page shape, each group's rows being the
// same bytes as json.RawMessage holds. It reports whether the scanner read it.
func scanMatchesStd(t *testing.T, body []byte) bool {
	t.Helper()
	ids, rows, next, wm, ok := source.ScanLazyPage(body)
	if !ok {
		return false
	}
	var ref struct {
		Items []*struct {
			CollectionID string          `json:"collectionId"`
			Rows         json.RawMessage `json:"rows"`
		} `json:"items"`
		NextCursor string `json:"nextCursor"`
		HasMore    bool   `json:"hasMore"`
		Watermark  string `json:"watermark"`
	}
	require.NoError(t, json.Unmarshal(body, &ref), "the scanner read a body encoding/json rejects: %q", body)
	require.Len(t, ids, len(ref.Items), "%q", body)
	assert.Equal(t, ref.NextCursor, next)
	assert.Equal(t, ref.Watermark, wm)
	for i, g := range ref.Items {
		if g == nil {
			assert.Empty(t, ids[i])
			assert.Nil(t, rows[i])
			continue
		}
		assert.Equal(t, g.CollectionID, ids[i], "group %d of %q", i, body)
		assert.Equal(t, []byte(g.Rows), rows[i], "group %d of %q", i, body)
	}
	return true
}

// TestScanLazyPage: the scanner reads the simulator's grouped pages and
// plain hand-made ones as encoding/json does, and leaves to encoding/json
// every form whose reading depends on its rules (escapes, a key that
// matches a field only ignoring case, a field given twice, a wrong type).
func TestScanLazyPage(t *testing.T) {
	read := 0
	for _, body := range simPages(t) {
		if bytes.Contains(body, []byte(`"rows"`)) {
			require.True(t, scanMatchesStd(t, body), "a simulator's grouped page is plain: %.200s", body)
			read++
		}
	}
	assert.GreaterOrEqual(t, read, 3, "both listings pages and the tokens page")

	tests := []struct {
		name string
		body string
		read bool
	}{
		{name: "clean", body: `{"items":[{"collectionId":"c","rows":[{"price":"1"}]}],"nextCursor":"2"}`, read: true},
		{name: "spaces everywhere", body: " {\n \"items\" : [ { \"rows\" : [ 1 , \"]\" ] , \"collectionId\" : \"c\" } , null ] , \"watermark\" : \"w\" , \"hasMore\" : true } ", read: true},
		{name: "unknown keys skipped", body: `{"x":{"items":[1]},"items":[{"y":[{"rows":2}],"collectionId":"c","rows":[{}]}],"z":"\"}"}`, read: true},
		{name: "nulls", body: `{"items":[{"collectionId":null,"rows":null}],"nextCursor":null,"hasMore":null,"watermark":null}`, read: true},
		{name: "items null", body: `{"items":null}`, read: true},
		{name: "rows any value", body: `{"items":[{"collectionId":"c","rows":{"a":[1,2]}},{"collectionId":"d","rows":-1.5e3}]}`, read: true},
		{name: "empty", body: `{}`, read: true},
		{name: "escaped id", body: `{"items":[{"collectionId":"c\u0041","rows":[{}]}]}`},
		{name: "escaped key", body: `{"\u0069tems":[]}`},
		{name: "non-ASCII id", body: `{"items":[{"collectionId":"é","rows":[{}]}]}`},
		{name: "key in another case", body: `{"Items":[{"collectionId":"c","rows":[{}]}]}`},
		{name: "group key in another case", body: `{"items":[{"collectionID":"c","rows":[{}]}]}`},
		{name: "items twice", body: `{"items":[],"items":[{"collectionId":"c"}]}`},
		{name: "rows twice", body: `{"items":[{"collectionId":"c","rows":[1],"rows":[2]}]}`},
		{name: "id a number", body: `{"items":[{"collectionId":1,"rows":[{}]}]}`},
		{name: "group a string", body: `{"items":["c"]}`},
		{name: "items an object", body: `{"items":{}}`},
		{name: "cursor a number", body: `{"items":[],"nextCursor":1}`},
		{name: "hasMore a string", body: `{"items":[],"hasMore":"yes"}`},
		{name: "top level an array", body: `[]`},
		{name: "top level null", body: `null`},
		{name: "truncated", body: `{"items":[{"collectionId":"c","rows":[`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.read, scanMatchesStd(t, []byte(tc.body)))
			// Read or not, the lazy decoder answers as the row-by-row reading.
			lazyMatchesRowByRow[normalize.RawListing](t, []byte(tc.body))
		})
	}
}

// TestLazyGroupsAliasThePlainBody: a plain page's groups point into the
// body instead of holding copies (the copies were about a tenth of what a
// large step allocated); a page read by encoding/json holds copies.
func TestLazyGroupsAliasThePlainBody(t *testing.T) {
	within := func(raw, body []byte) bool {
		if len(raw) == 0 {
			return false
		}
		p, lo := uintptr(unsafe.Pointer(&raw[0])), uintptr(unsafe.Pointer(&body[0]))
		return p >= lo && p < lo+uintptr(len(body))
	}
	tests := []struct {
		name    string
		body    string
		aliases bool
	}{
		{name: "plain", body: `{"items":[{"collectionId":"c","rows":[{"price":"1"}]}]}`, aliases: true},
		{name: "escaped id", body: `{"items":[{"collectionId":"\u0063","rows":[{"price":"1"}]}]}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body := []byte(tc.body)
			p, err := source.DecodeLazyGrouped[normalize.RawListing](body)
			require.NoError(t, err)
			require.Len(t, p.Items, 1)
			assert.Equal(t, "c", p.Items[0].CollectionID)
			assert.Equal(t, `[{"price":"1"}]`, string(p.Items[0].Raw))
			assert.Equal(t, tc.aliases, within(p.Items[0].Raw, body))
		})
	}
}

// FuzzScanLazyPage: on any body the scanner never panics, and what it
// reads is what encoding/json reads.
func FuzzScanLazyPage(f *testing.F) {
	for _, b := range simPages(f) {
		if len(b) > 4096 {
			b = append(bytes.Clone(b[:4096]), "]}]}"...)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"items":[{"collectionId":"c","rows":["]",{"a":"}"}]}],"x":[{}],"nextCursor":"n"}`))
	f.Add([]byte(strings.Repeat(`{"items":[`, 3)))
	f.Fuzz(func(t *testing.T, body []byte) {
		scanMatchesStd(t, body)
	})
}

// BenchmarkDecodeLazyGrouped is one simulator listings page (about 200
// collections' rows) read down to its lazy groups.
func BenchmarkDecodeLazyGrouped(b *testing.B) {
	var body []byte
	for _, p := range simPages(b) {
		if _, rows, _, _, ok := source.ScanLazyPage(p); ok && len(rows) > 0 {
			body = p
			break
		}
	}
	require.NotNil(b, body)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := source.DecodeLazyGrouped[normalize.RawListing](body); err != nil {
			b.Fatal(err)
		}
	}
}

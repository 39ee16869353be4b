package main

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseHeaderDump(t *testing.T) {
	tests := []struct {
		name    string
		dump    string
		want    []header
		wantErr bool
	}{
		{
			name: "marketd success keeps replayed headers only",
			dump: "HTTP/1.1 200 OK\r\nDate: Sun, 22 Nov 2026 18:00:00 GMT\r\nContent-Type: application/json\r\n" +
				"Content-Length: 42\r\ncache-control: public, s-maxage=15, stale-while-revalidate=30\r\n" +
				"CDN-Cache-Control: public, s-maxage=15\r\nETag: W/\"00ff\"\r\nAccess-Control-Allow-Origin: *\r\n" +
				"Access-Control-Allow-Methods: GET, OPTIONS\r\nAccess-Control-Allow-Headers: Content-Type, Accept\r\n" +
				"Access-Control-Max-Age: 86400\r\nVary: Origin\r\n\r\n",
			want: []header{
				{"Content-Type", "application/json"},
				{"Cache-Control", "public, s-maxage=15, stale-while-revalidate=30"},
				{"CDN-Cache-Control", "public, s-maxage=15"},
				{"ETag", `W/"00ff"`},
				{"Access-Control-Allow-Origin", "*"},
				{"Access-Control-Allow-Methods", "GET, OPTIONS"},
				{"Access-Control-Allow-Headers", "Content-Type, Accept"},
				{"Access-Control-Max-Age", "86400"},
				{"Vary", "Origin"},
			},
		},
		{
			name: "last response of several wins",
			dump: "HTTP/1.1 100 Continue\r\nETag: old\r\n\r\nHTTP/1.1 200 OK\r\nETag: new\r\n\r\n",
			want: []header{{"ETag", "new"}},
		},
		{name: "no status line", dump: "Content-Type: text/plain\n", wantErr: true},
		{name: "empty", dump: "", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseHeaderDump(strings.NewReader(tc.dump))
			if tc.wantErr {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestSyntheticBodySize(t *testing.T) {
	for _, n := range []int{12, 100, 6144, 25000} {
		b := syntheticBody(n)
		assert.Len(t, b, n)
		assert.True(t, strings.HasPrefix(string(b), `{"data":"`))
	}
}

func TestAppServesFixedBodyWithHeaders(t *testing.T) {
	body := []byte(`{"data":{"id":"ethereum_0xabc"}}`)
	hs := []header{
		{"Content-Type", "application/json"},
		{"Cache-Control", "public, s-maxage=30, stale-while-revalidate=60"},
		{"ETag", `W/"1"`},
		{"Access-Control-Allow-Origin", "*"},
	}
	app := newApp(body, hs)
	for _, path := range []string{"/", "/v1/collections/x", "/v1/tokens/a/b/c"} {
		t.Run(path, func(t *testing.T) {
			resp, err := app.Test(httptest.NewRequest("GET", path, nil))
			require.NoError(t, err)
			defer resp.Body.Close()
			got, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			assert.Equal(t, 200, resp.StatusCode)
			assert.Equal(t, body, got)
			for _, h := range hs {
				assert.Equal(t, h.value, resp.Header.Get(h.name), h.name)
			}
		})
	}
}

package httpapi

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestValidatorCatchesDrift proves the response validation used by every
// API test is live: bodies that break the document are rejected.
func TestValidatorCatchesDrift(t *testing.T) {
	tests := []struct {
		name, target string
		status       int
		body         string
		valid        bool
	}{
		{"good error", "/v1/collections/x", 404, `{"error":{"code":"not_found","message":"m"}}`, true},
		{"unknown error code", "/v1/collections/x", 404, `{"error":{"code":"gone","message":"m"}}`, false},
		{"extra envelope key", "/v1/collections/x/sales", 200, `{"data":[],"pagination":{"nextCursor":null,"hasMore":false},"x":1}`, false},
		{"meta stale false", "/v1/collections/x/listings", 200, `{"data":[],"pagination":{"nextCursor":null,"hasMore":false},"meta":{"stale":false,"staleSources":[]}}`, false},
		{"meta unknown source", "/v1/collections/x/listings", 200, `{"data":[],"pagination":{"nextCursor":null,"hasMore":false},"meta":{"stale":true,"staleSources":["sales"]}}`, false},
		{"good listings", "/v1/collections/x/listings", 200, `{"data":[],"pagination":{"nextCursor":null,"hasMore":false},"snapshot":{"asOf":null,"listedCount":0,"truncated":false},"meta":{"stale":true,"staleSources":["order-book"]}}`, true},
		{"missing nullable field", "/v1/collections/x/floor", 200, `{"data":{"collectionId":"x","askFloor":null,"aggregated":true,"updatedAt":"2026-01-01T00:00:00.000Z","stale":false}}`, false},
		{"aggregated false", "/v1/collections/x/floor", 200, `{"data":{"collectionId":"x","askFloor":null,"buyerFloor":null,"aggregated":false,"updatedAt":"2026-01-01T00:00:00.000Z","stale":false}}`, false},
		{"bad chain", "/v1/tokens/ethereum/a/1", 200, `{"data":{"chain":"bitcoin","contractAddress":null,"tokenId":null,"mint":null,"collectionId":"x","name":null,"image":null,"rarity":{"rank":null},"owner":{"address":null,"kind":"unknown","label":null},"listing":null,"lastSale":null}}`, false},
		{"good token", "/v1/tokens/ethereum/a/1", 200, `{"data":{"chain":"ethereum","contractAddress":null,"tokenId":null,"mint":null,"collectionId":"x","name":null,"image":null,"rarity":{"rank":null},"owner":{"address":null,"kind":"unknown","label":null},"listing":null,"lastSale":null,"asOf":"2026-11-22T12:00:00.000Z"}}`, true},
		{"undocumented status", "/v1/collections/x", 502, `{"error":{"code":"upstream_error","message":"m"}}`, false},
	}
	v := openAPIValidator(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, tc.target, nil)
			resp := &http.Response{
				StatusCode: tc.status,
				Header:     http.Header{"Content-Type": []string{"application/json"}},
				Body:       io.NopCloser(bytes.NewReader([]byte(tc.body))),
				Request:    req,
			}
			ok, errs := v.ValidateHttpResponse(req, resp)
			assert.Equal(t, tc.valid, ok, "%v", errs)
		})
	}
}

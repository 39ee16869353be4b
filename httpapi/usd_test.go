package httpapi

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel"
)

// TestETagFollowsTheUSDQuote: the reader fills prices' usd from its USD
// quote and names the quote's version in each view (readmodel.USDQuote);
// a new quote is a new body, so every view endpoint's ETag must change
// with it, while the same quote still answers 304.
func TestETagFollowsTheUSDQuote(t *testing.T) {
	h := MustHarness(t, nil)
	tokenKey := readmodel.TokenKey(readmodel.Ethereum, testContract, "1")
	h.r.mu.Lock()
	h.r.tokens[tokenKey] = tokenView(1)
	h.r.mu.Unlock()
	tests := []struct {
		name, target string
		setUSD       func(f *fakeReader, v uint64)
	}{
		{"detail", "/v1/collections/" + testID, func(f *fakeReader, v uint64) {
			cv := f.collections[testID]
			cv.USD = v
			f.collections[testID] = cv
		}},
		{"floor", "/v1/collections/" + testID + "/floor", func(f *fakeReader, v uint64) {
			fv := f.floors[testID]
			fv.USD = v
			f.floors[testID] = fv
		}},
		{"listings", "/v1/collections/" + testID + "/listings", func(f *fakeReader, v uint64) {
			lv := f.listings[testID][f.current[testID]]
			lv.USD = v
			f.listings[testID][f.current[testID]] = lv
		}},
		{"token", "/v1/tokens/ethereum/" + testContract + "/1", func(f *fakeReader, v uint64) {
			tv := f.tokens[tokenKey]
			tv.USD = v
			f.tokens[tokenKey] = tv
		}},
		{"sales", "/v1/collections/" + testID + "/sales", func(f *fakeReader, v uint64) { f.pageUSD = v }},
		{"collections", "/v1/collections", func(f *fakeReader, v uint64) { f.pageUSD = v }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := func(v uint64) {
				h.r.mu.Lock()
				defer h.r.mu.Unlock()
				tt.setUSD(h.r, v)
			}
			set(1)
			first := h.get(tt.target)
			require.Equal(t, 200, first.status, "%s", first.body)
			tag := first.header.Get("ETag")
			require.NotEmpty(t, tag)
			assert.Equal(t, 304, h.get(tt.target, "If-None-Match", tag).status, "same quote: not modified")
			set(2)
			second := h.get(tt.target, "If-None-Match", tag)
			assert.Equal(t, 200, second.status, "a new quote is a new body")
			assert.NotEqual(t, tag, second.header.Get("ETag"))
		})
	}
}

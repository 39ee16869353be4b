package httpapi

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel"
)

// TestUSDFilledAtServeTime: prepared bodies carry USD slots (SPEC §2 Price
// usd is best-effort); every view endpoint fills them from the reader's
// current quote, null when the feed is down, and the ETag follows the
// quote so a CDN revalidates when usd changes.
func TestUSDFilledAtServeTime(t *testing.T) {
	h := MustHarness(t, nil)
	h.r.mu.Lock()
	cv := h.r.collections[testID]
	cv.Detail = readmodel.TemplateUSD(detailJSON)
	h.r.collections[testID] = cv
	fv := h.r.floors[testID]
	fv.Body = readmodel.TimedBody{Head: readmodel.TemplateUSD(fv.Body.Head), Tail: readmodel.TemplateUSD(fv.Body.Tail), Timed: fv.Body.Timed}
	h.r.floors[testID] = fv
	lv := h.r.listings[testID][h.r.current[testID]]
	for i := range lv.Items {
		var it readmodel.MarketItem
		require.NoError(t, json.Unmarshal(lv.Items[i], &it))
		it.Price = readmodel.Price{Raw: "1500000000000000000", Decimal: 1.5, Currency: "ETH"}
		lv.Items[i] = readmodel.TemplateUSD(readmodel.MarshalItem(it))
	}
	h.r.mu.Unlock()

	tests := []struct {
		name, target string
		want         float64 // usd at 2000 USD/ETH
		usd          func(m map[string]any) any
	}{
		{"detail", "/v1/collections/" + testID, 2000, func(m map[string]any) any {
			return m["data"].(map[string]any)["stats"].(map[string]any)["floor"].(map[string]any)["usd"]
		}},
		{"floor", "/v1/collections/" + testID + "/floor", 2100, func(m map[string]any) any {
			return m["data"].(map[string]any)["buyerFloor"].(map[string]any)["usd"]
		}},
		{"listings", "/v1/collections/" + testID + "/listings?limit=1", 3000, func(m map[string]any) any {
			return m["data"].([]any)[0].(map[string]any)["price"].(map[string]any)["usd"]
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h.r.setQuote(readmodel.NewUSDQuote(readmodel.USDRates{"ETH": 2000}, true))
			first := h.get(tt.target)
			require.Equal(t, 200, first.status, "%s", first.body)
			assert.Equal(t, tt.want, tt.usd(first.json(t)), "usd filled: %s", first.body)
			tag := first.header.Get("ETag")
			assert.Equal(t, 304, h.get(tt.target, "If-None-Match", tag).status, "same quote: not modified")

			h.r.setQuote(readmodel.NewUSDQuote(readmodel.USDRates{"ETH": 4000}, true))
			second := h.get(tt.target)
			assert.Equal(t, 2*tt.want, tt.usd(second.json(t)), "usd follows the rate")
			assert.NotEqual(t, tag, second.header.Get("ETag"))
			assert.Equal(t, 200, h.get(tt.target, "If-None-Match", tag).status, "new quote: a new body")

			h.r.setQuote(readmodel.NewUSDQuote(readmodel.USDRates{"ETH": 4000}, false))
			assert.Nil(t, tt.usd(h.get(tt.target).json(t)), "feed down: usd null")
		})
	}
}

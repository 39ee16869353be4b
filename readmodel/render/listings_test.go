package render

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel"
)

// TestListingsRecordView: a stored listing snapshot renders each row as the
// projector rendered it (ListingRowJSON, slots filled from the quote), in
// order, with its expiry; a row whose price does not parse is left out of
// the items and of Listed.
func TestListingsRecordView(t *testing.T) {
	at := time.Date(2026, 11, 27, 4, 0, 0, 0, time.UTC)
	exp := at.Add(time.Hour)
	row := func(token, raw string) readmodel.ListingRow {
		return readmodel.ListingRow{Chain: readmodel.Ethereum, ContractAddress: "0xab", TokenID: token, CollectionID: "ethereum_0xab",
			PriceRaw: raw, Seller: "0xs", Marketplace: "NATIVE", Status: readmodel.StatusActive, Timestamp: at, OrderID: "o" + token}
	}
	royalty := int64(500)
	first, bad, last := row("1", "1000000000000000000"), row("2", "not a number"), row("3", "3000000000000000000")
	last.ExpiresAt = &exp
	rec := ListingsRecord{Version: 9, Rows: []readmodel.ListingRow{first, bad, last}, RoyaltyBps: &royalty,
		StaleSources: []readmodel.Source{readmodel.SourceIndexerMirror}, Listed: 5, BeyondExpires: []int64{1, 2}}

	tests := []struct {
		name string
		q    *USDQuote
	}{
		{"no quote", nil},
		{"a rate", NewUSDQuote(readmodel.USDRates{"ETH": 3000}, true)},
		{"feed down", NewUSDQuote(readmodel.USDRates{"ETH": 3000}, false)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := rec.View(tt.q)
			require.Len(t, v.Items, 2)
			for i, r := range []readmodel.ListingRow{first, last} {
				b, ok := ListingRowJSON(&r, &royalty, nil, time.Time{})
				require.True(t, ok)
				assert.Equal(t, string(AppendUSD(nil, TemplateUSD(b), tt.q)), string(v.Items[i]))
				assert.Equal(t, len(v.Items[i]), cap(v.Items[i]), "an item cannot be appended into its neighbour")
			}
			assert.Equal(t, []int64{0, exp.UnixMilli()}, v.ExpiresAt)
			assert.Equal(t, 4, v.Listed, "the row that does not render is not listed")
			assert.Equal(t, uint64(9), v.Version)
			if tt.q != nil {
				assert.Equal(t, tt.q.Version, v.USD)
			}
			assert.Equal(t, rec.StaleSources, v.StaleSources)
			assert.Equal(t, rec.BeyondExpires, v.BeyondExpires)
		})
	}
}

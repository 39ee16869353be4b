package render

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel"
)

// TestSweepTotals: exact sums of the rows' own figures, null where a fee
// is unknown, usd null where a part's is.
func TestSweepTotals(t *testing.T) {
	row := func(chain readmodel.Chain, native bool, raw string) readmodel.ListingRow {
		r := readmodel.ListingRow{Chain: chain, CollectionID: "c", PriceRaw: raw, Marketplace: "opensea",
			Status: readmodel.StatusActive, Timestamp: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), OrderID: "o" + raw}
		if chain == readmodel.Solana {
			r.Mint = "Mint" + raw
		} else {
			r.ContractAddress, r.TokenID = "0xab", raw
		}
		if native {
			r.Marketplace = readmodel.MarketplaceNative
		}
		return r
	}
	items := func(t *testing.T, royalty *int64, usd *float64, rows ...readmodel.ListingRow) [][]byte {
		var out [][]byte
		for i := range rows {
			b, ok := ListingRowJSON(&rows[i], royalty, usd, time.Time{})
			require.True(t, ok)
			out = append(out, b)
		}
		return out
	}
	bps := func(v int64) *int64 { return &v }
	rate := 100.0
	tests := []struct {
		name                                     string
		chain                                    readmodel.Chain
		royalty                                  *int64
		usd                                      *float64
		rows                                     []readmodel.ListingRow
		asks, platform, aggregator, royaltyTotal string // "" for null
		buyer                                    string
		usdOK                                    bool
	}{
		{name: "native and external on ethereum", chain: readmodel.Ethereum, royalty: bps(500), usd: &rate,
			rows: []readmodel.ListingRow{row(readmodel.Ethereum, true, "10000"), row(readmodel.Ethereum, false, "20001")},
			// platform ceil(10000*2%)=200; aggregator ceil(20001*2%)=401; royalty 500+1001
			asks: "30001", platform: "200", aggregator: "401", royaltyTotal: "1501", buyer: "32103", usdOK: true},
		{name: "solana platform fee is 3 %", chain: readmodel.Solana, royalty: bps(0), usd: &rate,
			rows: []readmodel.ListingRow{row(readmodel.Solana, true, "1000000000")},
			asks: "1000000000", platform: "30000000", aggregator: "0", royaltyTotal: "0", buyer: "1030000000", usdOK: true},
		{name: "unknown royalty: royalty and buyer totals null", chain: readmodel.Ethereum, usd: &rate,
			rows: []readmodel.ListingRow{row(readmodel.Ethereum, true, "10000")},
			asks: "10000", platform: "200", aggregator: "0", usdOK: true},
		{name: "no USD rate: usd null", chain: readmodel.Ethereum, royalty: bps(100),
			rows: []readmodel.ListingRow{row(readmodel.Ethereum, true, "10000")},
			asks: "10000", platform: "200", aggregator: "0", royaltyTotal: "100", buyer: "10300"},
		{name: "nothing listed: zeros", chain: readmodel.Ethereum, royalty: bps(100), usd: &rate,
			asks: "0", platform: "0", aggregator: "0", royaltyTotal: "0", buyer: "0"},
		{name: "past 64 bits", chain: readmodel.Ethereum, royalty: bps(0), usd: &rate,
			rows: []readmodel.ListingRow{row(readmodel.Ethereum, true, "18000000000000000000"), row(readmodel.Ethereum, true, "18000000000000000000")},
			asks: "36000000000000000000", platform: "720000000000000000", aggregator: "0", royaltyTotal: "0", buyer: "36720000000000000000", usdOK: true},
	}
	str := func(p *readmodel.Price) string {
		if p == nil {
			return ""
		}
		return p.Raw
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := SweepTotals(tc.chain, items(t, tc.royalty, tc.usd, tc.rows...))
			require.NoError(t, err)
			assert.Equal(t, tc.asks, got.Asks.Raw)
			assert.Equal(t, tc.chain.Currency(), got.Asks.Currency)
			assert.Equal(t, decimalOf(tc.asks, tc.chain.Decimals()), got.Asks.Decimal)
			assert.Equal(t, tc.platform, str(got.Fees.Platform))
			assert.Equal(t, tc.aggregator, str(got.Fees.Aggregator))
			assert.Equal(t, tc.royaltyTotal, str(got.Fees.Royalty))
			assert.Equal(t, tc.buyer, str(got.BuyerPrice))
			assert.Equal(t, tc.usdOK, got.Asks.USD != nil)
		})
	}
	t.Run("a row that is not a listing row fails", func(t *testing.T) {
		_, err := SweepTotals(readmodel.Ethereum, [][]byte{[]byte(`{"price":{"raw":"x"}}`)})
		assert.Equal(t, readmodel.Internal, readmodel.ErrorCode(err))
	})
}

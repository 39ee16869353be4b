package render

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel"
)

func TestFeesOf(t *testing.T) {
	i64 := func(v int64) *int64 { return &v }
	cases := []struct {
		name      string
		chain     readmodel.Chain
		market    string
		ask       string
		royalty   *int64
		wantKinds []string
		wantRaw   []string // amounts; "" for null
		wantBuyer string   // "" for null
	}{
		{"native solana: 3 % and royalty", readmodel.Solana, "NATIVE", "1000000000", i64(500), []string{"platform", "royalty"}, []string{"30000000", "50000000"}, "1080000000"},
		{"native EVM: 2 %", readmodel.Base, "NATIVE", "100", i64(0), []string{"platform", "royalty"}, []string{"2", "0"}, "102"},
		{"external: aggregator 2 %", readmodel.Ethereum, "blur", "100", i64(100), []string{"aggregator", "royalty"}, []string{"2", "1"}, "103"},
		{"each charge rounds up to a base unit", readmodel.Ethereum, "NATIVE", "101", i64(1), []string{"platform", "royalty"}, []string{"3", "1"}, "105"},
		{"unknown royalty: no total", readmodel.Solana, "tensor", "1000", nil, []string{"aggregator", "royalty"}, []string{"20", ""}, ""},
		{"a negative royalty charges nothing", readmodel.Ethereum, "NATIVE", "100", i64(-5), []string{"platform", "royalty"}, []string{"2", "0"}, "102"},
		{"an ask past 64 bits: exact big-integer arithmetic", readmodel.Ethereum, "NATIVE", "123456789012345678901234567", i64(333),
			[]string{"platform", "royalty"}, []string{"2469135780246913578024692", "4111111074111111107411112"}, "130037035866703703586670371"},
		{"an ask at the top of 64 bits: the sum overflows, big integers take over", readmodel.Ethereum, "NATIVE", "18446744073709551615", i64(0),
			[]string{"platform", "royalty"}, []string{"368934881474191033", "0"}, "18815678955183742648"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := &readmodel.ListingRow{Chain: tc.chain, PriceRaw: tc.ask, Marketplace: tc.market}
			f, ok := FeesOf(tc.chain, r, tc.royalty, nil)
			require.True(t, ok)
			var kinds, raws []string
			for _, fe := range f.List {
				kinds = append(kinds, fe.Kind)
				if !fe.Known {
					raws = append(raws, "")
				} else {
					raws = append(raws, fe.Amount.Raw)
				}
			}
			assert.Equal(t, tc.wantKinds, kinds)
			assert.Equal(t, tc.wantRaw, raws)
			if tc.wantBuyer == "" {
				assert.False(t, f.BuyerKnown)
			} else {
				require.True(t, f.BuyerKnown)
				assert.Equal(t, tc.wantBuyer, f.Buyer.Raw)
			}
		})
	}
	_, ok := FeesOf(readmodel.Ethereum, &readmodel.ListingRow{PriceRaw: "1e5"}, nil, nil)
	assert.False(t, ok, "an uninterpretable ask has no fees")
}

// TestListingRowJSON: the row is its MarketItem followed by fees and
// buyerPrice, valid JSON, prices templated like every other.
func TestListingRowJSON(t *testing.T) {
	bps := int64(250)
	r := &readmodel.ListingRow{Chain: readmodel.Ethereum, ContractAddress: "0xa", TokenID: "1", CollectionID: "c",
		PriceRaw: "1000000000000000000", Marketplace: "NATIVE", Status: readmodel.StatusActive, OrderID: "o"}
	b, ok := ListingRowJSON(r, &bps, nil, time.Unix(0, 0))
	require.True(t, ok)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m), "%s", b)
	item, _ := ListingItem(r, nil, time.Unix(0, 0))
	assert.Equal(t, string(MarshalItem(item)[:len(MarshalItem(item))-1]), string(b[:len(MarshalItem(item))-1]), "the MarketItem first, unchanged")
	assert.Equal(t, "1045000000000000000", m["buyerPrice"].(map[string]any)["raw"])
	assert.Equal(t, 4, countUSDSlots(TemplateUSD(b)), "price, two fees and buyerPrice get USD slots")
}

func countUSDSlots(b []byte) int {
	n := 0
	for {
		i := NextUSDSlot(b)
		if i < 0 {
			return n
		}
		n++
		b = b[i+usdSlotLen:]
	}
}

// BenchmarkListingRow: a listing row as the projector renders it, with
// and without its fees (what marketd adds to every row of a listings render).
func BenchmarkListingRow(b *testing.B) {
	bps := int64(500)
	r := &readmodel.ListingRow{Chain: readmodel.Ethereum, ContractAddress: "0x1111111111111111111111111111111111111111", TokenID: "1234",
		CollectionID: "ethereum_0x1111111111111111111111111111111111111111", PriceRaw: "16614000000730570453", Seller: "0x8e8f0500b74c8f81342a3503e51a926983ffaa7d",
		Marketplace: "NATIVE", Status: readmodel.StatusActive, Timestamp: time.Unix(1700000000, 0), OrderID: "ethereum_0x1111111111111111111111111111111111111111_1234_1700000000000"}
	b.Run("item", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			it, _ := ListingItem(r, nil, time.Time{})
			_ = TemplateUSD(MarshalItem(it))
		}
	})
	b.Run("item+fees", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			row, _ := ListingRowJSON(r, &bps, nil, time.Time{})
			_ = TemplateUSD(row)
		}
	})
}

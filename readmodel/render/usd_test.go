package render

import (
	"encoding/json"
	"math/big"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/marketd/marketd/readmodel"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A templated body filled with a quote must read exactly like the body
// rendered with that rate baked in: the same bytes encoding/json writes.
func TestTemplateUSDMatchesBakedRate(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	chains := []readmodel.Chain{readmodel.Solana, readmodel.Ethereum, readmodel.Polygon, readmodel.Base, readmodel.Ink, readmodel.ApeChain, readmodel.Abstract, readmodel.Robinhood}
	rates := []float64{1, 0.5, 3123.456789, 187.21, 1e-9, 123456789.123, 2.5e21}
	for n := 0; n < 5000; n++ {
		c := chains[rng.IntN(len(chains))]
		raw := new(big.Int).SetUint64(rng.Uint64() >> rng.IntN(64))
		raw.Mul(raw, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(rng.IntN(20))), nil))
		rate := rates[rng.IntN(len(rates))] * (1 + rng.Float64())
		item := struct {
			Name  string           `json:"name"`
			Price readmodel.Price  `json:"price"`
			Floor *readmodel.Price `json:"floor"`
		}{Name: `x,"usd":null`, Price: NewPrice(c, raw, nil)}
		baked := item
		baked.Price = NewPrice(c, raw, &rate)
		if n%3 == 0 {
			fp := NewPrice(c, new(big.Int).Add(raw, big.NewInt(1)), nil)
			item.Floor = &fp
			bp := NewPrice(c, new(big.Int).Add(raw, big.NewInt(1)), &rate)
			baked.Floor = &bp
		}
		tmpl := TemplateUSD(MarshalItem(item))
		want := MarshalItem(baked)
		q := NewUSDQuote(readmodel.USDRates{c.Currency(): rate}, true)
		require.Equal(t, string(want), string(AppendUSD(nil, tmpl, q)), "chain %s raw %s rate %v", c, raw, rate)
		// Feed down: every usd is null again.
		assert.Equal(t, string(MarshalItem(item)), string(AppendUSD(nil, tmpl, NewUSDQuote(readmodel.USDRates{c.Currency(): rate}, false))))
		assert.Equal(t, string(MarshalItem(item)), string(AppendUSD(nil, tmpl, nil)))
	}
}

func TestTemplateUSD(t *testing.T) {
	eth := NewPrice(readmodel.Ethereum, big.NewInt(1_500_000_000_000_000_000), nil)
	pol := NewPrice(readmodel.Polygon, big.NewInt(2_000_000_000_000_000_000), nil)
	q := NewUSDQuote(readmodel.USDRates{"ETH": 2000, "SOL": 150, "MATIC": 0.5}, true)
	tests := []struct {
		name  string
		body  any
		slots int
		want  string
	}{
		{"feed currency gets a slot", map[string]any{"p": eth}, 1,
			`{"p":{"raw":"1500000000000000000","decimal":1.5,"currency":"ETH","usd":3000}}`},
		{"no-feed currency stays null", map[string]any{"p": pol}, 0,
			`{"p":{"raw":"2000000000000000000","decimal":2,"currency":"MATIC","usd":null}}`},
		{"a string that looks like a price is left alone", map[string]any{"s": `"decimal":1,"currency":"ETH","usd":null`}, 0,
			`{"s":"\"decimal\":1,\"currency\":\"ETH\",\"usd\":null"}`},
		{"a NUL in upstream text is escaped, never a slot", map[string]any{"s": "a\x00b", "p": eth}, 1,
			`{"p":{"raw":"1500000000000000000","decimal":1.5,"currency":"ETH","usd":3000},"s":"a\u0000b"}`},
		{"a map cannot forge the field order", map[string]any{"usd": nil, "currency": "ETH", "decimal": 1}, 0,
			`{"currency":"ETH","decimal":1,"usd":null}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.body)
			require.NoError(t, err)
			tmpl := TemplateUSD(b)
			assert.Equal(t, tt.slots, countSlots(tmpl))
			assert.Equal(t, tt.want, string(AppendUSD(nil, tmpl, q)))
			assert.Equal(t, string(tmpl), string(TemplateUSD(tmpl)), "templating twice changes nothing")
		})
	}
}

func countSlots(b []byte) int {
	n := 0
	for i := NextUSDSlot(b); i >= 0; i = NextUSDSlot(b) {
		n++
		b = b[i+usdSlotLen:]
	}
	return n
}

func TestUSDQuoteVersion(t *testing.T) {
	a := NewUSDQuote(readmodel.USDRates{"ETH": 2000, "SOL": 150}, true)
	assert.Equal(t, a.Version, NewUSDQuote(readmodel.USDRates{"SOL": 150, "ETH": 2000, "APE": 1}, true).Version, "only feed currencies count")
	assert.NotEqual(t, a.Version, NewUSDQuote(readmodel.USDRates{"ETH": 2000.01, "SOL": 150}, true).Version)
	assert.NotEqual(t, a.Version, NewUSDQuote(readmodel.USDRates{"ETH": 2000, "SOL": 150}, false).Version)
	r, ok := a.Rate("SOL")
	assert.True(t, ok)
	assert.Equal(t, 150.0, r)
	_, ok = NewUSDQuote(readmodel.USDRates{"ETH": 2000}, true).Rate("SOL")
	assert.False(t, ok)
}

// TestAppendSaleItemMatchesTemplateAndFill: a sale item rendered with its
// usd filled directly is the bytes of the projector's templated item
// filled by AppendUSD, for random prices on every chain and quotes with
// and without rates (the store serves sales pages with it).
func TestAppendSaleItemMatchesTemplateAndFill(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	rates := []float64{1, 0.5, 3123.456789, 187.21, 1e-9, 123456789.123, 2.5e21, 1e300}
	for n := 0; n < 5000; n++ {
		c := readmodel.Chains[rng.IntN(len(readmodel.Chains))]
		raw := new(big.Int).SetUint64(rng.Uint64() >> rng.IntN(64))
		raw.Mul(raw, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(rng.IntN(40))), nil))
		s := readmodel.SaleRow{Chain: c, CollectionID: "c", PriceRaw: raw.String(), Marketplace: "NATIVE", Seller: "0xab"}
		rate := rates[rng.IntN(len(rates))] * (1 + rng.Float64())
		it, ok := SaleItem(&s, nil)
		require.True(t, ok)
		tmpl := TemplateUSD(MarshalItem(it))
		for _, q := range []*USDQuote{
			nil,
			NewUSDQuote(readmodel.USDRates{c.Currency(): rate}, true),
			NewUSDQuote(readmodel.USDRates{c.Currency(): rate}, false),
			NewUSDQuote(readmodel.USDRates{"ETH": rate, "SOL": rate / 10}, true),
		} {
			got, ok := AppendSaleItem([]byte("prefix"), &s, q)
			require.True(t, ok)
			require.Equal(t, "prefix"+string(AppendUSD(nil, tmpl, q)), string(got), "chain %s raw %s rate %v", c, raw, rate)
		}
	}
	_, ok := AppendSaleItem(nil, &readmodel.SaleRow{Chain: readmodel.Base, PriceRaw: "x"}, nil)
	assert.False(t, ok, "a price that does not parse")
}

// AppendListingRow fills the usd values the way the slots of the
// projector's templated rendering are filled: listing snapshots rendered
// on read serve what was served when they were stored as JSON.
func TestAppendListingRowMatchesTemplateAndFill(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	rates := []float64{1, 0.5, 3123.456789, 187.21, 1e-9, 123456789.123, 2.5e21, 1e300}
	at := time.Date(2026, 11, 27, 4, 0, 0, 0, time.UTC)
	for n := 0; n < 5000; n++ {
		c := readmodel.Chains[rng.IntN(len(readmodel.Chains))]
		raw := new(big.Int).SetUint64(rng.Uint64() >> rng.IntN(64))
		raw.Mul(raw, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(rng.IntN(40))), nil))
		r := readmodel.ListingRow{Chain: c, CollectionID: "c", ContractAddress: "0xab", TokenID: "1", PriceRaw: raw.String(),
			Marketplace: "NATIVE", Seller: `0xab","usd":null`, Status: readmodel.StatusActive, Timestamp: at, OrderID: "o"}
		if n%2 == 0 {
			r.Marketplace = "OPENSEA"
		}
		var royalty *int64
		if n%3 != 0 {
			royalty = new(int64)
			*royalty = int64(rng.IntN(1000))
		}
		b, ok := ListingRowJSON(&r, royalty, nil, time.Time{})
		require.True(t, ok)
		rate := rates[rng.IntN(len(rates))] * (1 + rng.Float64())
		for _, q := range []*USDQuote{
			nil,
			NewUSDQuote(readmodel.USDRates{c.Currency(): rate}, true),
			NewUSDQuote(readmodel.USDRates{c.Currency(): rate}, false),
			NewUSDQuote(readmodel.USDRates{"ETH": rate, "SOL": rate / 10}, true),
		} {
			got, ok := AppendListingRow([]byte("prefix"), &r, royalty, q)
			require.True(t, ok)
			require.Equal(t, "prefix"+string(AppendUSD(nil, TemplateUSD(b), q)), string(got), "chain %s raw %s rate %v", c, raw, rate)
		}
	}
	got, ok := AppendListingRow([]byte("prefix"), &readmodel.ListingRow{Chain: readmodel.Base, PriceRaw: "x"}, nil, nil)
	assert.False(t, ok, "a price that does not parse")
	assert.Equal(t, "prefix", string(got))
}

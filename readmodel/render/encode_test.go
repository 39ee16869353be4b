package render

import (
	"encoding/json"
	"math/rand"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/internal/jsontest"
	"github.com/marketd/marketd/readmodel"
)

// stdOrNull is what MarshalItem promises: encoding/json's bytes, or null.
func stdOrNull(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return []byte("null")
	}
	return b
}

// TestAppendersMatchEncodingJSON holds MarshalItem's hand-written
// appenders to encoding/json, byte for byte, on random market items and
// token details.
func TestAppendersMatchEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewSource(20261123))
	for i := 0; i < 20000; i++ {
		var it readmodel.MarketItem
		jsontest.FillNonFinite(r, reflect.ValueOf(&it).Elem())
		require.Equal(t, string(stdOrNull(it)), string(MarshalItem(it)), "item %d: %#v", i, it)
		require.Equal(t, string(stdOrNull(&it)), string(MarshalItem(&it)), "item %d", i)
		var d tokenDetail
		jsontest.FillNonFinite(r, reflect.ValueOf(&d).Elem())
		require.Equal(t, string(stdOrNull(d)), string(MarshalItem(d)), "token %d: %#v", i, d)
	}
}

// FuzzAppendersMatchEncodingJSON: any string and number content is written
// as encoding/json writes it.
func FuzzAppendersMatchEncodingJSON(f *testing.F) {
	f.Add("0xAbC", "<script>&\u2028", 1.5, int64(3))
	f.Add("\xff\xfe\x00", "コ😀\\\"", 1e-7, int64(-1))
	f.Fuzz(func(t *testing.T, s1, s2 string, x float64, n int64) {
		it := readmodel.MarketItem{Chain: readmodel.Chain(s1), ContractAddress: &s2, CollectionID: s2, Marketplace: s1, Timestamp: s2,
			Price: readmodel.Price{Raw: s1, Decimal: x, Currency: s2, USD: &x}}
		require.Equal(t, string(stdOrNull(it)), string(MarshalItem(it)))
		d := tokenDetail{Chain: readmodel.Chain(s2), Name: &s1, Rarity: tokenRarity{Rank: &n}, Owner: tokenOwner{Label: &s1, Kind: OwnerKind(s2)}, Listing: &it,
			LastSale: &lastSale{Price: readmodel.Price{Raw: s2, Decimal: -x}}}
		require.Equal(t, string(stdOrNull(d)), string(MarshalItem(d)))
	})
}

// BenchmarkMarshalListingItem is one listing item rendered as the
// projector renders every row of a snapshot.
func BenchmarkMarshalListingItem(b *testing.B) {
	exp := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	r := readmodel.ListingRow{Chain: readmodel.Ethereum, ContractAddress: "0x8c995e126d179f00d3423c40045c2e2d614cd083",
		TokenID: "85", CollectionID: "ethereum_0x8c995e126d179f00d3423c40045c2e2d614cd083", PriceRaw: "1250000000000000000",
		Seller: "0x1111111111111111111111111111111111111111", Marketplace: readmodel.MarketplaceNative,
		Status: readmodel.StatusActive, ExpiresAt: &exp, Timestamp: exp.Add(-time.Hour), OrderID: "o-1"}
	it, ok := ListingItem(&r, nil, exp)
	if !ok {
		b.Fatal("price")
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = MarshalItem(it)
	}
}

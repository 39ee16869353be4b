package render

import (
	"bytes"
	"encoding/json"
	"math/rand"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/internal/jsontest"
	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/wire"
)

// stdOrNull is what MarshalItem promises: encoding/json's bytes, or null.
func stdOrNull(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return []byte("null")
	}
	return b
}

// decodedForm is b as encoding/json writes it back once decoded: invalid
// UTF-8, which b writes as the escape \ufffd, decodes to U+FFFD, which is
// written as itself.
func decodedForm(b []byte) string {
	return strings.ReplaceAll(string(b), `\ufffd`, "\ufffd")
}

// TestAppendersMatchEncodingJSON holds MarshalItem's hand-written
// appenders to encoding/json of the wire types they write (the types the
// Go client decodes), byte for byte, on random values: a field added to a
// wire type and not to its appender, or the other way round, fails here.
func TestAppendersMatchEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewSource(20261123))
	for i := 0; i < 20000; i++ {
		var it readmodel.MarketItem
		jsontest.FillNonFinite(r, reflect.ValueOf(&it).Elem())
		require.Equal(t, string(stdOrNull(it)), string(MarshalItem(it)), "item %d: %#v", i, it)
		require.Equal(t, string(stdOrNull(&it)), string(MarshalItem(&it)), "item %d", i)
		var li wire.ListingItem
		jsontest.FillNonFinite(r, reflect.ValueOf(&li).Elem())
		require.Equal(t, string(stdOrNull(li)), string(MarshalItem(li)), "listing item %d: %#v", i, li)
		var d wire.TokenDetail
		jsontest.FillNonFinite(r, reflect.ValueOf(&d).Elem())
		require.Equal(t, string(stdOrNull(d)), string(MarshalItem(d)), "token %d: %#v", i, d)
	}
}

// TestListingRowIsAWireListingItem: a row of the listings feed as the
// store renders it (AppendListingRow) is encoding/json of the
// wire.ListingItem it decodes into, so the fees the renderer writes are
// the wire type's.
func TestListingRowIsAWireListingItem(t *testing.T) {
	r := rand.New(rand.NewSource(20261124))
	q := NewUSDQuote(readmodel.USDRates{"ETH": 3001.5, "SOL": 151.25}, true)
	rendered := 0
	for i := 0; i < 5000; i++ {
		var row readmodel.ListingRow
		jsontest.Fill(r, reflect.ValueOf(&row).Elem())
		row.Chain = []readmodel.Chain{readmodel.Solana, readmodel.Ethereum, readmodel.Polygon}[r.Intn(3)]
		row.PriceRaw = strconv.FormatInt(r.Int63(), 10)
		if r.Intn(2) == 0 {
			row.Marketplace = readmodel.MarketplaceNative
		}
		var royalty *int64
		if r.Intn(3) > 0 {
			x := r.Int63n(2000)
			royalty = &x
		}
		b, ok := AppendListingRow(nil, &row, royalty, q)
		require.True(t, ok, "row %d", i)
		var li wire.ListingItem
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		require.NoError(t, dec.Decode(&li), "row %d: %s", i, b)
		require.Len(t, li.Fees, 2)
		require.Equal(t, decodedForm(b), string(stdOrNull(li)), "row %d", i)
		rendered++
	}
	require.Equal(t, 5000, rendered)
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
		li := wire.ListingItem{MarketItem: it, Fees: []wire.Fee{{Kind: s1, Bps: &n, Amount: &it.Price}, {Kind: s2}}, BuyerPrice: &it.Price}
		require.Equal(t, string(stdOrNull(li)), string(MarshalItem(li)))
		d := wire.TokenDetail{Chain: readmodel.Chain(s2), Name: &s1, Rarity: wire.Rarity{Rank: &n}, Owner: wire.Owner{Label: &s1, Kind: wire.OwnerKind(s2)}, Listing: &li,
			LastSale: &wire.LastSale{Price: readmodel.Price{Raw: s2, Decimal: -x}}, AsOf: &s2}
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

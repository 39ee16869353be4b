package readmodel

import (
	"encoding/json"
	"math"
	"math/rand"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
)

// randomize sets every field reachable from v to a random value that
// encoding/json could write differently: strings with escapes, HTML
// characters, control bytes, non-ASCII, U+2028 and invalid UTF-8; floats
// across the exponent range (NaN and infinities included); nil and non-nil
// pointers.
func randomize(r *rand.Rand, v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if r.Intn(3) == 0 {
			v.Set(reflect.Zero(v.Type()))
			return
		}
		v.Set(reflect.New(v.Type().Elem()))
		randomize(r, v.Elem())
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				randomize(r, v.Field(i))
			}
		}
	case reflect.String:
		pieces := []string{"", "a", "0xAbC", "Ξ", "<b>", "&amp;", `"`, `\`, "\b\f\n\r\t", "\x00\x01\x1f\x7f", "\u2028\u2029", "\xff", "\xe2\x80", "コ", "😀", "/", " "}
		s := ""
		for i := r.Intn(4); i >= 0; i-- {
			s += pieces[r.Intn(len(pieces))]
		}
		v.SetString(s)
	case reflect.Int64:
		v.SetInt(int64(r.Uint64()))
	case reflect.Float64:
		var f float64
		switch r.Intn(6) {
		case 0:
			f = []float64{0, math.Copysign(0, -1), 1e-6, 9.99999e-7, 1e21, 999999999999999999999, 5e-324, math.MaxFloat64, 1e-9, -1e-10}[r.Intn(10)]
		case 1:
			f = math.Float64frombits(r.Uint64()) // any bit pattern: NaN and infinities too
		default:
			f = math.Ldexp(r.Float64(), r.Intn(160)-80) * float64(1-2*r.Intn(2))
		}
		v.SetFloat(f)
	}
}

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
		var it MarketItem
		randomize(r, reflect.ValueOf(&it).Elem())
		require.Equal(t, string(stdOrNull(it)), string(MarshalItem(it)), "item %d: %#v", i, it)
		require.Equal(t, string(stdOrNull(&it)), string(MarshalItem(&it)), "item %d", i)
		var d tokenDetail
		randomize(r, reflect.ValueOf(&d).Elem())
		require.Equal(t, string(stdOrNull(d)), string(MarshalItem(d)), "token %d: %#v", i, d)
	}
}

// FuzzAppendersMatchEncodingJSON: any string and number content is written
// as encoding/json writes it.
func FuzzAppendersMatchEncodingJSON(f *testing.F) {
	f.Add("0xAbC", "<script>&\u2028", 1.5, int64(3))
	f.Add("\xff\xfe\x00", "コ😀\\\"", 1e-7, int64(-1))
	f.Fuzz(func(t *testing.T, s1, s2 string, x float64, n int64) {
		it := MarketItem{Chain: Chain(s1), ContractAddress: &s2, CollectionID: s2, Marketplace: s1, Timestamp: s2,
			Price: Price{Raw: s1, Decimal: x, Currency: s2, USD: &x}}
		require.Equal(t, string(stdOrNull(it)), string(MarshalItem(it)))
		d := tokenDetail{Chain: Chain(s2), Name: &s1, Rarity: tokenRarity{Rank: &n}, Owner: tokenOwner{Label: &s1, Kind: OwnerKind(s2)}, Listing: &it,
			LastSale: &lastSale{Price: Price{Raw: s2, Decimal: -x}}}
		require.Equal(t, string(stdOrNull(d)), string(MarshalItem(d)))
	})
}

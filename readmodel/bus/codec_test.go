package bus

import (
	"encoding/json"
	"math"
	"math/rand"
	"reflect"
	"testing"
	"time"

	gojson "github.com/goccy/go-json"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel"
)

// fill sets every field reachable from v (a pointer) to a random value:
// strings with escapes, HTML characters, non-ASCII and invalid UTF-8,
// floats across the exponent range, present and absent pointers and
// slices, times with nanoseconds.
func fill(r *rand.Rand, v reflect.Value, depth int) {
	switch v.Kind() {
	case reflect.Pointer:
		if depth > 4 || r.Intn(4) == 0 {
			return
		}
		v.Set(reflect.New(v.Type().Elem()))
		fill(r, v.Elem(), depth+1)
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			if r.Intn(5) > 0 {
				v.Set(reflect.ValueOf(time.Unix(r.Int63n(4e9), r.Int63n(1e9)).UTC()))
			}
			return
		}
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				fill(r, v.Field(i), depth+1)
			}
		}
	case reflect.Slice:
		if depth > 4 || r.Intn(3) == 0 {
			return
		}
		n := r.Intn(4)
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := 0; i < n; i++ {
			fill(r, s.Index(i), depth+1)
		}
		v.Set(s)
	case reflect.Map:
		if depth > 4 || r.Intn(3) == 0 {
			return
		}
		m := reflect.MakeMap(v.Type())
		for i := r.Intn(4); i > 0; i-- {
			k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			fill(r, k, depth+1)
			fill(r, e, depth+1)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.String:
		pieces := []string{"", "a", "Ξ", "0x7a", "<b>&amp;", `"q"`, `\`, "\n\t", "\x00\x1f", "\u2028", "\xff\xfe", "コ", "😀", " "}
		var s string
		for i := r.Intn(5); i > 0; i-- {
			s += pieces[r.Intn(len(pieces))]
		}
		v.SetString(s)
	case reflect.Bool:
		v.SetBool(r.Intn(2) == 0)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(r.Uint64()) >> (64 - uint(v.Type().Bits())))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		v.SetUint(r.Uint64() >> (64 - uint(v.Type().Bits())))
	case reflect.Float32, reflect.Float64:
		f := []float64{0, 1, -1, 1e-7, 1e21, 123456789.123, math.SmallestNonzeroFloat64, math.MaxFloat64}[r.Intn(8)]
		if r.Intn(2) == 0 {
			f = math.Ldexp(r.Float64(), r.Intn(200)-100)
		}
		v.SetFloat(f)
	}
}

// TestDecodeMatchesStd holds Decode's library to encoding/json: random
// messages with every field set or absent, as Encode writes them, decode
// to the value encoding/json reads.
func TestDecodeMatchesStd(t *testing.T) {
	r := rand.New(rand.NewSource(20261123))
	for i := 0; i < 3000; i++ {
		var m readmodel.Message
		fill(r, reflect.ValueOf(&m).Elem(), 0)
		b, err := json.Marshal(&m)
		require.NoError(t, err)
		var want, got readmodel.Message
		require.NoError(t, json.Unmarshal(b, &want))
		require.NoError(t, gojson.Unmarshal(b, &got), "message %d: %s", i, b)
		require.Equal(t, want, got, "message %d: %s", i, b)
	}
}

// FuzzDecode: Decode never panics, and accepts only what encoding/json
// accepts, as the same message.
func FuzzDecode(f *testing.F) {
	obs := time.Date(2026, 11, 23, 2, 0, 0, 0, time.UTC)
	for _, m := range []*readmodel.Message{
		{ID: "1", Kind: readmodel.KindListings, Source: readmodel.SourceOrderBook, CollectionID: "ethereum_0xabc", ObservedAt: obs,
			Listings: []readmodel.ListingRow{{OrderID: "o1", TokenID: "7", PriceRaw: "1000"}}},
		{ID: "2", Kind: readmodel.KindSales, CollectionID: "c", ObservedAt: obs, Sales: []readmodel.SaleRow{{OrderID: "0x1", PriceRaw: "5"}}},
		{ID: "3", Kind: readmodel.KindStatus, Source: readmodel.SourcePriceFeed, ObservedAt: obs, Status: &readmodel.PollStatus{OK: true}},
	} {
		b, err := Encode(m)
		require.NoError(f, err)
		f.Add(b)
	}
	f.Add([]byte(`{"kind":"listings","listings":[{"priceRaw":1e999}]}`))
	f.Add([]byte(`{"id":"x","kind":"tokens","tokens":[{"tokenId":"\ud800"}],}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Decode(b)
		if err != nil {
			return
		}
		var want readmodel.Message
		require.NoError(t, json.Unmarshal(b, &want), "Decode accepted what encoding/json rejects: %q", b)
		assert.Equal(t, &want, m)
	})
}

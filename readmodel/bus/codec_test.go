package bus

import (
	"encoding/json"
	"math/rand"
	"reflect"
	"testing"
	"time"

	gojson "github.com/goccy/go-json"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/internal/jsontest"
	"github.com/marketd/marketd/readmodel"
)

// TestDecodeMatchesStd holds Decode's library to encoding/json: random
// messages with every field set or absent, as Encode writes them, decode
// to the value encoding/json reads.
func TestDecodeMatchesStd(t *testing.T) {
	r := rand.New(rand.NewSource(20261123))
	for i := 0; i < 3000; i++ {
		var m readmodel.Message
		jsontest.Fill(r, reflect.ValueOf(&m).Elem())
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

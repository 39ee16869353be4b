package bus

import (
	"bytes"
	"encoding/json"
	"fmt"
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
	f.Add(wireEncoder().EncodeAll([]byte(`{"id":"z","kind":"rates","rates":{"eth":1}}`), nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Decode(b)
		if err != nil {
			return
		}
		j, err := wireJSON(b, nil) // b, or the JSON of its zstd frame
		require.NoError(t, err)
		var want readmodel.Message
		require.NoError(t, json.Unmarshal(j, &want), "Decode accepted what encoding/json rejects: %q", j)
		assert.Equal(t, &want, m)
	})
}

// TestEncodeMatchesStd holds Encode's library to encoding/json: random
// messages (every field set or absent, strings with escapes, HTML
// characters, invalid UTF-8 and U+2028, floats across the exponent range,
// NaN and infinities, maps, zero and nanosecond times) encode to exactly
// the bytes encoding/json writes, or fail where it fails.
func TestEncodeMatchesStd(t *testing.T) {
	r := rand.New(rand.NewSource(20261123))
	for i := 0; i < 20000; i++ {
		var m readmodel.Message
		if i%4 == 0 {
			jsontest.FillNonFinite(r, reflect.ValueOf(&m).Elem())
		} else {
			jsontest.Fill(r, reflect.ValueOf(&m).Elem())
		}
		want, werr := json.Marshal(&m)
		got, gerr := marshalled(&m)
		require.Equal(t, werr == nil, gerr == nil, "message %d: encoding/json error %v, goccy error %v", i, werr, gerr)
		require.True(t, bytes.Equal(want, got), "message %d:\nencoding/json %s\ngoccy         %s", i, want, got)
	}
}

// FuzzEncode: any message encoding/json reads back encodes to the bytes
// encoding/json writes.
func FuzzEncode(f *testing.F) {
	f.Add([]byte(`{"id":"1","kind":"rates","rates":{"SOL":146.79,"ETH":3066.82,"<x>":1e-7}}`))
	f.Add([]byte(`{"id":"2","kind":"tokens","collectionId":"c","tokens":[{"name":"\u2028\ud800a&b","rarityRank":-9007199254740993}]}`))
	f.Add([]byte(`{"id":"3","kind":"listings","observedAt":"2026-11-23T02:00:00.123456789+05:30","listings":[{"expiresAt":"0001-01-01T00:00:00Z"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var m readmodel.Message
		if json.Unmarshal(b, &m) != nil {
			return
		}
		want, werr := json.Marshal(&m)
		got, gerr := marshalled(&m)
		require.Equal(t, werr == nil, gerr == nil, "encoding/json error %v, goccy error %v", werr, gerr)
		require.True(t, bytes.Equal(want, got), "encoding/json %s\ngoccy         %s", want, got)
	})
}

// marshalled is what Encode writes for m, without its validation.
func marshalled(m *readmodel.Message) ([]byte, error) {
	var buf bytes.Buffer
	err := marshalInto(&buf, m)
	return buf.Bytes(), err
}

// TestDecodedMessagesOwnTheirBytes: a decoded message keeps nothing of
// the buffer its frame was decompressed into, which the next Decode
// reuses.
func TestDecodedMessagesOwnTheirBytes(t *testing.T) {
	frame := func(seller string) []byte {
		m := &readmodel.Message{ID: "m-" + seller, Kind: readmodel.KindListings, Source: readmodel.SourceOrderBook, CollectionID: "ethereum_0xabc",
			ObservedAt: time.Date(2026, 11, 24, 4, 0, 0, 0, time.UTC)}
		for i := 0; i < 50; i++ {
			m.Listings = append(m.Listings, readmodel.ListingRow{OrderID: fmt.Sprintf("order-%s-%d", seller, i), TokenID: fmt.Sprint(i), PriceRaw: "1000", Seller: seller})
		}
		b, err := Encode(m)
		require.NoError(t, err)
		require.True(t, bytes.HasPrefix(b, zstdMagic), "the test needs a compressed frame")
		return b
	}
	a, b := frame("0xaaaa"), frame("0xbbbb")
	want, err := Decode(a)
	require.NoError(t, err)
	got, err := Decode(a)
	require.NoError(t, err)
	for i := 0; i < 4; i++ {
		_, err := Decode(b)
		require.NoError(t, err)
	}
	assert.Equal(t, want, got)
}

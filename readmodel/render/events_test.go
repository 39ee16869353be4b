package render

import (
	"bytes"
	"encoding/json"
	"math/rand"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/internal/jsontest"
	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/wire"
)

func TestEventJSON(t *testing.T) {
	at := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	p := readmodel.Price{Raw: "5", Decimal: 5e-9, Currency: "SOL"}
	tests := []struct {
		name string
		ev   Event
		want string
	}{
		{"removed", Event{ID: "s1-0-x", Type: EventListingRemoved, CollectionID: `a"b`, ObservedAt: at, UpstreamAt: &at, Reason: ReasonExpired, Listing: []byte(`{"k":1}`)},
			`{"eventId":"s1-0-x","type":"listing_removed","collectionId":"a\"b","observedAt":"2026-11-01T12:00:00.000Z","upstreamAt":"2026-11-01T12:00:00.000Z","reason":"expired","listing":{"k":1},"previousPrice":null,"sale":null,"floor":null}`},
		{"floor", Event{ID: "s2-1-y", Type: EventFloorChanged, CollectionID: "c", ObservedAt: at, Floor: &p},
			`{"eventId":"s2-1-y","type":"floor_changed","collectionId":"c","observedAt":"2026-11-01T12:00:00.000Z","upstreamAt":null,"reason":null,"listing":null,"previousPrice":null,"sale":null,"floor":{"raw":"5","decimal":5e-9,"currency":"SOL","usd":null}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := EventJSON(&tc.ev)
			require.True(t, json.Valid(got), "%s", got)
			assert.JSONEq(t, tc.want, string(got))
		})
	}
	assert.Equal(t, uint8(1<<4), EventTypeBit(EventSale))
	assert.Zero(t, EventTypeBit("transfer"))
}

// TestEventJSONIsAWireEvent holds EventJSON to wire.Event, the type the
// Go client decodes events into: on random events, what EventJSON writes
// decodes into it with no field left over, and encoding/json writes the
// decoded value back byte for byte (same fields, order and number forms).
func TestEventJSONIsAWireEvent(t *testing.T) {
	r := rand.New(rand.NewSource(20261125))
	for i := 0; i < 5000; i++ {
		var e Event
		jsontest.FillNonFinite(r, reflect.ValueOf(&e).Elem())
		e.ObservedAt = time.Unix(r.Int63n(4e9), r.Int63n(1e9)).UTC()
		if r.Intn(2) == 0 {
			var it readmodel.MarketItem
			jsontest.Fill(r, reflect.ValueOf(&it).Elem())
			e.Listing = MarshalItem(it)
		} else {
			e.Listing = nil
		}
		if r.Intn(2) == 0 {
			var it readmodel.MarketItem
			jsontest.Fill(r, reflect.ValueOf(&it).Elem())
			e.Sale = MarshalItem(it)
		} else {
			e.Sale = nil
		}
		b := EventJSON(&e)
		var w wire.Event
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		require.NoError(t, dec.Decode(&w), "event %d: %s", i, b)
		require.Equal(t, decodedForm(b), string(stdOrNull(w)), "event %d", i)
	}
}

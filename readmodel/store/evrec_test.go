package store

import (
	"hash/fnv"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/render"
)

const sampleCID = "ink_0x00225e7b3f15f74306a0b3b4ef6352ab18ed39a8"

func ptime(t time.Time) *time.Time { return &t }

// sampleListing is a native order-book listing as the simulator makes
// them.
func sampleListing() *readmodel.ListingRow {
	return &readmodel.ListingRow{Chain: readmodel.Ink, ContractAddress: "0x00225e7b3f15f74306a0b3b4ef6352ab18ed39a8",
		TokenID: "720065984443128398297674054995370039180168182140779004769228702", CollectionID: sampleCID,
		PriceRaw: "1509102000790101446", Seller: "0x93066daaaef549e37277f48e18b57c0ffffaedcd", Marketplace: readmodel.MarketplaceNative,
		Status: readmodel.StatusActive, ExpiresAt: ptime(time.Date(2026, 11, 25, 9, 6, 31, 0, time.UTC)),
		Timestamp: time.Date(2026, 11, 25, 7, 24, 31, 0, time.UTC),
		OrderID:   sampleCID + "_720065984443128398297674054995370039180168182140779004769228702_1795591471000"}
}

// sampleEvent is a listing_added event of sampleListing.
func sampleEvent() NewEvent {
	l := sampleListing()
	return NewEvent{Type: render.EventListingAdded, Stream: 's', Seq: 85651, ObservedAt: time.Date(2026, 11, 25, 7, 45, 39, 656e6, time.UTC),
		UpstreamAt: &l.Timestamp, Listing: l}
}

// schema16JSON is e rendered as the projector rendered it before event
// records (schema 16), sale being the row of its sale part: its id and
// JSON.
func schema16JSON(cid string, e *NewEvent, sale *readmodel.SaleRow) (string, string) {
	ev := render.Event{Type: e.Type, CollectionID: cid, ObservedAt: e.ObservedAt, UpstreamAt: e.UpstreamAt, Reason: e.Reason}
	if e.Listing != nil {
		if it, ok := render.ListingItem(e.Listing, nil, e.ObservedAt); ok {
			ev.Listing = render.MarshalItem(it)
		}
	}
	if p, ok := render.PriceOf(e.Previous.Chain, e.Previous.Raw, nil); ok {
		ev.Previous = &p
	}
	if p, ok := render.PriceOf(e.Floor.Chain, e.Floor.Raw, nil); ok && e.Floor.Raw != "" {
		ev.Floor = &p
	}
	if sale != nil {
		if it, ok := render.SaleItem(sale, nil); ok {
			ev.Sale = render.MarshalItem(it)
		}
	}
	rest := render.AppendEventBody(nil, &ev)
	h := fnv.New32a()
	h.Write(rest)
	id := string(e.Stream) + strconv.FormatUint(e.Seq, 10) + "-" + strconv.Itoa(e.Index) + "-" + strconv.FormatUint(uint64(h.Sum32()), 36)
	return id, `{"eventId":"` + id + `"` + string(rest)
}

// TestEventRecordRendersTheJSON: an event stored as a record renders the
// id and JSON the projector rendered before records (schema 16) for every
// type and part, so eventIds did not change with the format (a sale's
// item from the sale record it names); the record is a fraction of the
// JSON; and every truncation of a record, or a sale record missing, is an
// error counted as damage, never a panic.
func TestEventRecordRendersTheJSON(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 7, 45, 39, 656e6, time.UTC)
	sol := &readmodel.ListingRow{Chain: readmodel.Solana, Mint: "9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin", CollectionID: "solana_Tiny", PriceRaw: "1500000000",
		Seller: "7YttLkHDoNj9wyDur5pM1ejNaAvT9X4eqaYcHQqtj2G5", Marketplace: "magiceden", Status: readmodel.StatusActive, Timestamp: t0.Add(-time.Hour)}
	unpriced := sampleListing()
	unpriced.PriceRaw = "12abc"
	sale := &readmodel.SaleRow{Chain: readmodel.Ink, ContractAddress: "0x00225e7b3f15f74306a0b3b4ef6352ab18ed39a8", TokenID: "7200", CollectionID: sampleCID,
		PriceRaw: "1200000000000000000", Seller: "0x93066daaaef549e37277f48e18b57c0ffffaedcd", Buyer: "0x0000000000000000000000000000000000000001",
		Marketplace: readmodel.MarketplaceNative, Status: readmodel.StatusSold, Timestamp: t0.Add(-time.Minute),
		OrderID: sampleCID + "_7200_1795591471000", Tx: "0x" + "ab12cd34ef56ab12cd34ef56ab12cd34ef56ab12cd34ef56ab12cd34ef56ab12"}
	cases := []struct {
		name string
		cid  string
		ev   NewEvent
		sale *readmodel.SaleRow // the sale ev names (set below)
	}{
		{name: "listing_added", cid: sampleCID, ev: sampleEvent()},
		{name: "listing_removed, expired", cid: sampleCID, ev: NewEvent{Type: render.EventListingRemoved, Stream: 's', Seq: 9, Index: 3, ObservedAt: t0,
			UpstreamAt: sampleListing().ExpiresAt, Reason: render.ReasonExpired, Listing: sampleListing()}},
		{name: "listing_removed, no upstream time", cid: sampleCID, ev: NewEvent{Type: render.EventListingRemoved, Stream: 's', Seq: 9, Index: 4, ObservedAt: t0,
			Reason: render.ReasonBeyondCeiling, Listing: sampleListing()}},
		{name: "a zero upstream time", cid: sampleCID, ev: NewEvent{Type: render.EventListingAdded, Stream: 's', Seq: 9, ObservedAt: t0,
			UpstreamAt: &time.Time{}, Listing: sampleListing()}},
		{name: "price_changed", cid: sampleCID, ev: NewEvent{Type: render.EventPriceChanged, Stream: 's', Seq: 1 << 40, Index: 300, ObservedAt: t0,
			UpstreamAt: &t0, Listing: sampleListing(), Previous: EventPrice{Chain: readmodel.Ink, Raw: "2000000000000000000"}}},
		{name: "floor_changed", cid: sampleCID, ev: NewEvent{Type: render.EventFloorChanged, Stream: 's', Seq: 12, ObservedAt: t0,
			Floor: EventPrice{Chain: readmodel.Ink, Raw: "1509102000790101446"}, Previous: EventPrice{Chain: readmodel.Ink, Raw: "1"}}},
		{name: "floor_changed to nothing listed", cid: sampleCID, ev: NewEvent{Type: render.EventFloorChanged, Stream: 's', Seq: 12, ObservedAt: t0,
			Previous: EventPrice{Chain: readmodel.Ink, Raw: "1509102000790101446"}}},
		{name: "floor_changed from nothing listed", cid: sampleCID, ev: NewEvent{Type: render.EventFloorChanged, Stream: 's', Seq: 12, ObservedAt: t0,
			Floor: EventPrice{Chain: readmodel.Ink, Raw: "15"}}},
		{name: "a price of another chain than the id's", cid: sampleCID, ev: NewEvent{Type: render.EventFloorChanged, Stream: 's', Seq: 12, ObservedAt: t0,
			Floor: EventPrice{Chain: readmodel.Base, Raw: "15"}}},
		{name: "sale", cid: sampleCID, ev: NewEvent{Type: render.EventSale, Stream: 'x', Seq: 77, Index: 2, ObservedAt: t0, UpstreamAt: &sale.Timestamp}, sale: sale},
		{name: "sale without a time", cid: sampleCID, ev: NewEvent{Type: render.EventSale, Stream: 'x', Seq: 77, ObservedAt: t0},
			sale: func() *readmodel.SaleRow { s := *sale; s.Timestamp = time.Time{}; return &s }()},
		{name: "solana listing", cid: "solana_Tiny", ev: NewEvent{Type: render.EventListingAdded, Stream: 's', Seq: 5, ObservedAt: t0, UpstreamAt: &sol.Timestamp, Listing: sol}},
		{name: "a listing whose price does not render", cid: sampleCID, ev: NewEvent{Type: render.EventListingRemoved, Stream: 's', Seq: 5, ObservedAt: t0,
			Reason: render.ReasonCancelled, Listing: unpriced}},
	}
	// The sale records the transaction that appends a sale event adds.
	sales := map[string][]byte{}
	for i, tc := range cases {
		if tc.sale != nil {
			suf := saleSuffix(tc.sale)
			sales[string(suf)] = encodeSale(tc.cid, suf, tc.sale)
			cases[i].ev.Sale = &SaleRef{suf: [saleSuffixLen]byte(suf)}
		}
	}
	get := func(suf []byte) ([]byte, bool, error) {
		v, ok := sales[string(suf)]
		return v, ok, nil
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := encodeEvent(nil, tc.cid, &tc.ev)
			id, got, err := renderEvent(tc.cid, rec, get)
			require.NoError(t, err)
			wantID, want := schema16JSON(tc.cid, &tc.ev, tc.sale)
			assert.Equal(t, wantID, id)
			assert.Equal(t, want, string(got))
			if !strings.Contains(string(got), `"listing":null`) || tc.ev.Listing == nil {
				assert.Less(t, len(rec), len(got)/2, "the record is a fraction of the JSON")
			}
			assert.Equal(t, render.EventTypeBit(tc.ev.Type), rec[0], "a types filter reads the first byte")
			for n := 0; n < len(rec); n++ {
				require.NotPanics(t, func() { _, _, err = renderEvent(tc.cid, rec[:n], get) })
				require.Error(t, err, "cut at %d of %d", n, len(rec))
				_, damaged := Damaged(err)
				assert.True(t, damaged, "cut at %d: counted as damage", n)
			}
			if tc.ev.Sale != nil {
				_, _, err := renderEvent(tc.cid, rec, func([]byte) ([]byte, bool, error) { return nil, false, nil })
				_, damaged := Damaged(err)
				assert.True(t, damaged, "a sale event whose sale is missing is damage: %v", err)
				require.NotPanics(t, func() { _, _, err = renderEvent(tc.cid, rec, nil) })
				assert.Error(t, err, "no sale reader")
			}
		})
	}
}

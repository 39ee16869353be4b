package render

import (
	"time"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/wire"
)

// Change-feed event types (GET /v1/collections/{id}/events, beyond SPEC).
const (
	EventListingAdded   = wire.EventListingAdded
	EventListingRemoved = wire.EventListingRemoved
	EventPriceChanged   = wire.EventPriceChanged
	EventFloorChanged   = wire.EventFloorChanged
	EventSale           = wire.EventSale
)

// EventTypes lists the event types in their bit order (EventTypeBit).
var EventTypes = [...]string{EventListingAdded, EventListingRemoved, EventPriceChanged, EventFloorChanged, EventSale}

// EventTypeBit is type t's bit in a types filter; 0 for an unknown type.
func EventTypeBit(t string) uint8 {
	for i, n := range EventTypes {
		if n == t {
			return 1 << i
		}
	}
	return 0
}

// Why a listing left the feed's listing set (listing_removed's reason).
const (
	ReasonSold          = wire.ReasonSold
	ReasonCancelled     = wire.ReasonCancelled
	ReasonExpired       = wire.ReasonExpired
	ReasonRepriced      = wire.ReasonRepriced
	ReasonSourceDropped = wire.ReasonSourceDropped
	ReasonBeyondCeiling = wire.ReasonBeyondCeiling
)

// Event is one change-feed event as the store keeps it; EventJSON writes
// it as a wire.Event. Every field is rendered; those that do not apply to
// the type are null.
type Event struct {
	ID           string     // stable, opaque: derived from the stream message it came from
	Type         string     // one of EventTypes
	CollectionID string     // canonical collection id
	ObservedAt   time.Time  // when the projector saw it: the message's observation time
	UpstreamAt   *time.Time // when upstream reported it (listing time, block time, expiry), nil when it did not
	Reason       string     // listing_removed only
	Listing      []byte     // MarketItem (added, removed: as last reported, price_changed: as now)
	Previous     *readmodel.Price
	Sale         []byte // MarketItem of the sale
	Floor        *readmodel.Price
}

// EventJSON renders e. Prices carry usd null: an event is immutable once
// written, so it carries no conversion that would change with the rates.
func EventJSON(e *Event) []byte {
	b := append(make([]byte, 0, 128+len(e.Listing)+len(e.Sale)), `{"eventId":`...)
	b = appendJSONString(b, e.ID)
	return AppendEventBody(b, e)
}

// AppendEventBody appends what follows the eventId in e's JSON (from
// `,"type"` to the closing brace): the projector hashes it into the id.
func AppendEventBody(b []byte, e *Event) []byte {
	b = append(b, `,"type":`...)
	b = appendJSONString(b, e.Type)
	b = append(b, `,"collectionId":`...)
	b = appendJSONString(b, e.CollectionID)
	b = append(b, `,"observedAt":`...)
	b = appendJSONString(b, readmodel.FormatTime(e.ObservedAt))
	b = append(b, `,"upstreamAt":`...)
	if e.UpstreamAt != nil && !e.UpstreamAt.IsZero() {
		b = appendJSONString(b, readmodel.FormatTime(*e.UpstreamAt))
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"reason":`...)
	if e.Reason != "" {
		b = appendJSONString(b, e.Reason)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"listing":`...)
	b = appendRawOrNull(b, e.Listing)
	b = append(b, `,"previousPrice":`...)
	b = appendPriceOrNull(b, e.Previous)
	b = append(b, `,"sale":`...)
	b = appendRawOrNull(b, e.Sale)
	b = append(b, `,"floor":`...)
	b = appendPriceOrNull(b, e.Floor)
	return append(b, '}')
}

func appendRawOrNull(b, raw []byte) []byte {
	if len(raw) == 0 {
		return append(b, "null"...)
	}
	return append(b, raw...)
}

// appendPriceOrNull appends p, or null when p is nil or not finite.
func appendPriceOrNull(b []byte, p *readmodel.Price) []byte {
	if p == nil {
		return append(b, "null"...)
	}
	n := len(b)
	b, ok := appendPrice(b, p)
	if !ok {
		return append(b[:n], "null"...)
	}
	return b
}

// EventPage is one page of a change feed (a collection's or the
// market's), oldest first.
type EventPage struct {
	Items [][]byte // event bodies
	// Last and LastID are the position a walk resumes after: the last
	// event returned on a full page, else the feed's newest event (events
	// filtered out need not be read again); 0 and "" for an empty feed
	// read from its start.
	Last   uint64
	LastID string
	// Full is true when the page holds limit events, or (the market's
	// feed) ends where a read stops scanning: it never changes.
	Full bool
}

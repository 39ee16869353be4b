// Package wire declares the public API's response bodies as Go types: the
// one set both sides use. readmodel/render renders the bodies it prepares
// through them (its hand-written encoders are held to encoding/json of
// these types, byte for byte, by its tests), and the Go client (package
// client) decodes into them, so a field the server writes cannot be
// missing from, or typed differently in, what a client reads. The OpenAPI
// document (httpapi/openapi.json) describes the same shapes; the client's
// tests walk its schemas against these types.
//
// Field order is the wire order. Nullable fields are pointers (or slices)
// and are always present on the wire, null when nil, except where a field
// says otherwise. Times are strings as the server writes them
// (readmodel.FormatTime: RFC 3339, UTC, milliseconds). Prices and market
// items are readmodel's Price and MarketItem.
//
// It imports the standard library and readmodel only.
package wire

import "github.com/marketd/marketd/readmodel"

// Pagination is SPEC's pagination object. HasMore is the only termination
// signal; NextCursor is passed back verbatim.
type Pagination struct {
	NextCursor *string `json:"nextCursor"`
	HasMore    bool    `json:"hasMore"`
}

// Page is one page of a list endpoint: GET /v1/collections
// (CollectionSummary), .../sales (MarketItem) and .../events (Event).
type Page[T any] struct {
	Data       []T        `json:"data"`
	Pagination Pagination `json:"pagination"`
}

// Envelope is a single-object answer: {"data": ...}.
type Envelope[T any] struct {
	Data T `json:"data"`
}

// Meta is the listings page's degradation flag; absent on a healthy page.
type Meta struct {
	Stale        bool               `json:"stale"`
	StaleSources []readmodel.Source `json:"staleSources"` // order-book, indexer-mirror
}

// Snapshot describes the listings snapshot a page was cut from.
type Snapshot struct {
	AsOf        *string `json:"asOf"`        // when the sources behind it last succeeded
	ListedCount int64   `json:"listedCount"` // live listings known, beyond the snapshot's ceiling too
	Truncated   bool    `json:"truncated"`   // the ceiling cut some: a walk cannot reach every listing
}

// ListingsPage is GET /v1/collections/{id}/listings.
type ListingsPage struct {
	Data       []ListingItem `json:"data"`
	Pagination Pagination    `json:"pagination"`
	Snapshot   Snapshot      `json:"snapshot"`
	Meta       *Meta         `json:"meta,omitempty"`
}

// CollectionIdentity is what a collection's summary and detail share: its
// identity and presentation fields (SPEC §2).
type CollectionIdentity struct {
	ID              string           `json:"id"`
	Chain           *readmodel.Chain `json:"chain"` // null when missing or unrecognised
	ContractAddress *string          `json:"contractAddress"`
	Name            string           `json:"name"`
	Slug            *string          `json:"slug"`
	Image           *string          `json:"image"`
	Banner          *string          `json:"banner"`
	Description     *string          `json:"description"`
	TokenStandard   *string          `json:"tokenStandard"`
	RoyaltyBps      *int64           `json:"royaltyBps"`
}

// SummaryStats are a CollectionSummary's stats.
type SummaryStats struct {
	Floor         *readmodel.Price `json:"floor"`
	VolumeAllTime *float64         `json:"volumeAllTime"`
	Supply        *int64           `json:"supply"`
	Owners        *int64           `json:"owners"`
}

// CollectionSummary is an item of GET /v1/collections.
type CollectionSummary struct {
	CollectionIdentity
	Stats SummaryStats `json:"stats"`
}

// Windows are all-time, seven-day and 24-hour figures: volumes (float64)
// or sale counts (int64); nil is unknown.
type Windows[N int64 | float64] struct {
	AllTime        *N `json:"allTime"`
	SevenDay       *N `json:"sevenDay"`
	TwentyFourHour *N `json:"twentyFourHour"`
}

// ChangeWindows are ratios of change over 24 hours and seven days,
// (now / then) - 1 (0.25 is a quarter up); nil when either side is unknown
// or the earlier figure is zero.
type ChangeWindows struct {
	TwentyFourHour *float64 `json:"twentyFourHour"`
	SevenDay       *float64 `json:"sevenDay"`
}

// Change is a CollectionDetail's change ratios.
type Change struct {
	Volume ChangeWindows `json:"volume"`
	Floor  ChangeWindows `json:"floor"`
}

// DetailStats are a CollectionDetail's stats.
type DetailStats struct {
	Floor       *readmodel.Price `json:"floor"`
	Volume      Windows[float64] `json:"volume"`
	Sales       Windows[int64]   `json:"sales"`
	Supply      *int64           `json:"supply"`
	Owners      *int64           `json:"owners"`
	ListedCount *int64           `json:"listedCount"`
	Change      Change           `json:"change"`
	// AsOf is when the sources behind the stats last succeeded. A prepared
	// body holds null; the API writes the value when it answers.
	AsOf *string `json:"asOf"`
}

// CollectionDetail is GET /v1/collections/{id}.
type CollectionDetail struct {
	CollectionIdentity
	Stats DetailStats `json:"stats"`
	Stale bool        `json:"stale"`
}

// Fee kinds.
const (
	FeePlatform   = "platform"
	FeeRoyalty    = "royalty"
	FeeAggregator = "aggregator"
)

// Fee is one charge a buyer pays on top of an ask. Bps and Amount are nil
// when its rate is unknown (a royalty of a collection with no royaltyBps).
type Fee struct {
	Kind   string           `json:"kind"` // FeePlatform, FeeRoyalty or FeeAggregator
	Bps    *int64           `json:"bps"`
	Amount *readmodel.Price `json:"amount"`
}

// ListingItem is a row of the listings feed, and a token's listing: the
// MarketItem followed by its fees and what a buyer pays in all (nil when
// a fee is unknown).
type ListingItem struct {
	readmodel.MarketItem
	Fees       []Fee            `json:"fees"`
	BuyerPrice *readmodel.Price `json:"buyerPrice"`
}

// FloorHistoryResponse is GET /v1/collections/{id}/floor/history: the
// seller-ask floor as the node observed it, one point per interval from
// From to To (both interval starts, RFC 3339 UTC).
type FloorHistoryResponse struct {
	CollectionID string       `json:"collectionId"`
	Interval     string       `json:"interval"`
	From         string       `json:"from"`
	To           string       `json:"to"`
	Points       []FloorPoint `json:"points"`
}

// FloorPoint is one interval of a floor history: the open, high, low and
// close of askFloor within it (their usd null), all null when the floor
// was not observed with a price in it.
type FloorPoint struct {
	Start string           `json:"start"`
	Open  *readmodel.Price `json:"open"`
	High  *readmodel.Price `json:"high"`
	Low   *readmodel.Price `json:"low"`
	Close *readmodel.Price `json:"close"`
}

// SweepFees are a sweep quote's fees added up by kind; a total is nil
// (null) when a fee of its kind is unknown (a royalty of a collection
// whose royaltyBps is null), never a guess. A kind no item carries totals
// zero.
type SweepFees struct {
	Platform   *readmodel.Price `json:"platform"`
	Royalty    *readmodel.Price `json:"royalty"`
	Aggregator *readmodel.Price `json:"aggregator"`
}

// SweepTotals are what buying every item of a sweep quote costs: the asks,
// the fees by kind and what the buyer pays (nil when a fee is unknown).
// Raw amounts are exact sums of the items'; a usd is the sum of the
// items' usd values, null when any of them is (or there are none).
type SweepTotals struct {
	Asks       readmodel.Price  `json:"asks"`
	Fees       SweepFees        `json:"fees"`
	BuyerPrice *readmodel.Price `json:"buyerPrice"`
}

// SweepQuote is GET /v1/collections/{id}/sweep's data: the count cheapest
// listings of the current snapshot (fewer when fewer are live), each a
// row of the listings feed, and their totals.
type SweepQuote struct {
	CollectionID string        `json:"collectionId"`
	Count        int           `json:"count"` // as asked
	Items        []ListingItem `json:"items"`
	Totals       SweepTotals   `json:"totals"`
}

// SweepResponse is GET /v1/collections/{id}/sweep: the quote, the snapshot
// it was cut from and, as on the listings page, meta only when a listing
// source is stale.
type SweepResponse struct {
	Data     SweepQuote `json:"data"`
	Snapshot Snapshot   `json:"snapshot"`
	Meta     *Meta      `json:"meta,omitempty"`
}

// FloorResponse is GET /v1/collections/{id}/floor. Fees and BuyerPrice are
// those of the floor's listing (nil when there is none).
type FloorResponse struct {
	CollectionID string           `json:"collectionId"`
	AskFloor     *readmodel.Price `json:"askFloor"`
	BuyerFloor   *readmodel.Price `json:"buyerFloor"`
	Aggregated   bool             `json:"aggregated"`
	UpdatedAt    string           `json:"updatedAt"`
	Stale        bool             `json:"stale"`
	Fees         []Fee            `json:"fees"`
	BuyerPrice   *readmodel.Price `json:"buyerPrice"`
	// AsOf: as DetailStats.AsOf.
	AsOf *string `json:"asOf"`
}

// OwnerKind is TokenDetail.owner.kind.
type OwnerKind string

const (
	OwnerWallet  OwnerKind = "wallet"
	OwnerCustody OwnerKind = "custody"
	OwnerUnknown OwnerKind = "unknown"
)

// Rarity is a token's rarity.
type Rarity struct {
	Rank *int64 `json:"rank"`
}

// Owner is a token's owner classification.
type Owner struct {
	Address *string   `json:"address"`
	Kind    OwnerKind `json:"kind"`
	Label   *string   `json:"label"`
}

// LastSale is a token's last recorded sale: its price only.
type LastSale struct {
	Price readmodel.Price `json:"price"`
}

// TokenDetail is GET /v1/tokens/{chain}/{address}/{tokenId}.
type TokenDetail struct {
	Chain           readmodel.Chain `json:"chain"`
	ContractAddress *string         `json:"contractAddress"` // EVM
	TokenID         *string         `json:"tokenId"`         // EVM
	Mint            *string         `json:"mint"`            // Solana: the asset mint
	CollectionID    string          `json:"collectionId"`
	Name            *string         `json:"name"`
	Image           *string         `json:"image"`
	Rarity          Rarity          `json:"rarity"`
	Owner           Owner           `json:"owner"`
	Listing         *ListingItem    `json:"listing"`
	LastSale        *LastSale       `json:"lastSale"`
	// AsOf is when the sources behind the token last succeeded. Every
	// response carries it (null or a time); a prepared body leaves it
	// out and the API appends it, hence omitempty.
	AsOf *string `json:"asOf,omitempty"`
}

// ErrorObject is an error answer's content (SPEC §7).
type ErrorObject struct {
	Code    readmodel.Code `json:"code"` // bad_request, not_found, rate_limited, upstream_error
	Message string         `json:"message"`
}

// ErrorBody is an error answer: {"error": {"code", "message"}}.
type ErrorBody struct {
	Error ErrorObject `json:"error"`
}

// TokenResult is one item of GET /v1/tokens: the token, or the error the
// single-token endpoint answers for that id. Exactly one of TokenDetail
// and Error is non-nil.
type TokenResult struct {
	*TokenDetail
	Error *ErrorObject `json:"error,omitempty"`
}

// Change-feed event types (GET /v1/collections/{id}/events).
const (
	EventListingAdded   = "listing_added"
	EventListingRemoved = "listing_removed"
	EventPriceChanged   = "price_changed"
	EventFloorChanged   = "floor_changed"
	EventSale           = "sale"
)

// Why a listing left the feed's listing set (listing_removed's reason).
const (
	ReasonSold          = "sold"           // a sale of its orderId was applied before it left
	ReasonCancelled     = "cancelled"      // its source stopped reporting it, unexpired and unsold
	ReasonExpired       = "expired"        // its expiresAt passed
	ReasonRepriced      = "repriced"       // the asset is listed again under another orderId (a listing_added follows)
	ReasonSourceDropped = "source_dropped" // its source is failing and its last good rows aged out
	ReasonBeyondCeiling = "beyond_ceiling" // still listed, but no longer among the ~250 cheapest of the snapshot
)

// Event is one change-feed event. Every field is present; those that do
// not apply to its type are null. Its prices carry usd null.
type Event struct {
	EventID       string                `json:"eventId"` // stable, opaque
	Type          string                `json:"type"`    // one of the Event* constants
	CollectionID  string                `json:"collectionId"`
	ObservedAt    string                `json:"observedAt"` // when the projector saw it
	UpstreamAt    *string               `json:"upstreamAt"` // when upstream reported it
	Reason        *string               `json:"reason"`     // listing_removed only: one of the Reason* constants
	Listing       *readmodel.MarketItem `json:"listing"`    // added, removed (as last reported), price_changed (as now)
	PreviousPrice *readmodel.Price      `json:"previousPrice"`
	Sale          *readmodel.MarketItem `json:"sale"`
	Floor         *readmodel.Price      `json:"floor"`
}

// Endpoint is one entry of the API index.
type Endpoint struct {
	Method      string `json:"method"`
	Path        string `json:"path"`
	Description string `json:"description"`
}

// Index is GET /v1's data.
type Index struct {
	Name          string     `json:"name"`
	Version       string     `json:"version"`
	Documentation string     `json:"documentation"`
	Endpoints     []Endpoint `json:"endpoints"`
}

// SourceStatus is one upstream source in GET /v1/status, as the node's
// views hold its polls.
type SourceStatus struct {
	Source  readmodel.Source `json:"source"`
	Healthy bool             `json:"healthy"` // no poll of it is failing
	// LastSuccess is when a poll of it last succeeded (nil: none known).
	LastSuccess *string `json:"lastSuccess"`
	// FailingCollections counts the collections its per-collection poll
	// currently fails for; 0 for a source polled once for every
	// collection (then Healthy alone says it fails).
	FailingCollections int `json:"failingCollections"`
}

// NodeStatus is the answering node's own state in GET /v1/status.
type NodeStatus struct {
	Ready bool `json:"ready"` // what /readyz says, without its reason
	// Applied is the last stream sequence its views applied, per stream.
	Applied readmodel.Position `json:"applied"`
	// Behind is how many messages the streams held beyond Applied when
	// their heads were last read; nil when they could not be read.
	Behind *readmodel.Position `json:"behind"`
}

// Status is GET /v1/status's data: every source's health and the node's.
type Status struct {
	Sources []SourceStatus `json:"sources"`
	Node    NodeStatus     `json:"node"`
}

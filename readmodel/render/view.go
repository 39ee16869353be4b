package render

import (
	"time"

	"github.com/marketd/marketd/readmodel"
)

// The types in this file are prepared views: what the projector computes
// ahead of time and the public API serves. As stored, bodies carry USD
// slots where a Price's usd goes (usd.go); the store fills them from its
// current USDQuote when it loads a view into its cache, and each view's USD
// field names that quote's version (part of the ETag). What a reader gets
// is valid JSON (or a documented fragment of it) to write as is; it is
// never modified after it is handed out.

// LastGoodBuyerFloorAge is how long a persisted last-good buyerFloor may be
// served with stale: true (SPEC §2 FloorResponse).
const LastGoodBuyerFloorAge = 30 * time.Minute

// CollectionView is a resolved collection's prepared detail.
type CollectionView struct {
	ID          string
	Chain       readmodel.Chain // "" when missing or unrecognised (listings and floor answer 404)
	HasContract bool            // false: sales answer 404, listings report order-book stale
	Version     uint64
	USD         uint64 // version of the USD quote the bodies were filled with
	Detail      []byte // the CollectionDetail object (without the data wrapper); stats.asOf is null (SpliceAsOf)
	// AsOf is what stats.asOf is resolved from.
	AsOf Freshness
}

// ListingsView is a collection's listing snapshot.
type ListingsView struct {
	Version uint64
	USD     uint64 // version of the USD quote the items were filled with
	// Items are pre-encoded MarketItems: merged, deduplicated per asset
	// (native wins), active and unexpired as of projection, sorted by
	// price.decimal then orderId, at most ListingsCeiling.
	Items [][]byte
	// ExpiresAt holds, for each item, its expiry in unix milliseconds (0 for
	// none), so the API can drop rows that expired after projection.
	ExpiresAt []int64
	// StaleSources lists the failing listing sources in the order
	// order-book, indexer-mirror; nil when healthy.
	StaleSources []readmodel.Source
	// AllFailed is true when every listing source failed; with no Items the
	// API answers 502 upstream_error.
	AllFailed bool
	// Listed is how many live listings were known at projection, Items
	// and those beyond the ceiling; BeyondExpires the expiries (unix ms,
	// ascending) of the ones beyond it that expire (Snapshot).
	Listed        int
	BeyondExpires []int64
	// AsOf is what the snapshot's asOf is resolved from.
	AsOf Freshness
}

// TimedBody is a prepared JSON body with at most one slot where the API
// writes the current time (FormatTime) when it builds the response: Head,
// the time, Tail. Timed is false when the body has no slot (then Tail is
// empty and Head is the whole body).
type TimedBody struct {
	Head  []byte
	Tail  []byte
	Timed bool
}

// FloorView is a collection's prepared FloorResponse (the data object).
// Serve Body; but when FallbackAfter is set and now is not before it, serve
// Fallback instead (the last-good buyerFloor has aged out).
type FloorView struct {
	Version       uint64
	USD           uint64    // version of the USD quote the bodies were filled with
	Body          TimedBody // updatedAt is the slot
	FallbackAfter time.Time
	Fallback      TimedBody
	// AsOf is what asOf (the body's last field, null as prepared) is
	// resolved from.
	AsOf Freshness
}

// TokenView is a token's prepared TokenDetail object. The slot, when timed,
// is listing.timestamp of an overlay-sourced listing.
type TokenView struct {
	Version uint64
	USD     uint64 // version of the USD quote the body was filled with
	Body    TimedBody
	// Until is when the body next changes by the clock alone (unix
	// nanoseconds: a listing it shows or could show expires); 0: only
	// when the token's record changes.
	Until int64
}

// Page is one page of an ordered list: pre-encoded items and the opaque
// store position after the last one. HasMore is false on the last page
// (then Next is "").
type Page struct {
	Version uint64
	USD     uint64 // version of the USD quote the items were filled with
	Items   [][]byte
	Next    string
	HasMore bool
}

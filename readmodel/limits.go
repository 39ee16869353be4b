package readmodel

// The limits of the service: field bounds of normalized rows and the
// sizes of the listing windows. Every package that checks a bound uses
// these.

// Field bounds. Anything longer is upstream garbage (RejectOversized).
const (
	MaxIDLen          = 200  // ids, order ids, slugs, names, tx hashes
	MaxTokenIDLen     = 100  // EVM token id digits (SPEC §8)
	MaxURLLen         = 2048 // image and banner URLs
	MaxDescriptionLen = 8192 // free text
)

// ListingsCeiling is the size of the listings snapshot window (SPEC §4
// listings rule 4).
const ListingsCeiling = 250

// OrderBookMax is how many eligible native rows the order book contributes
// per collection (SPEC §8).
const OrderBookMax = 200

package readmodel

// The limits of the service, defined here once: ingest rejects upstream
// rows over them, the store refuses to resolve ids over them, and the API
// answers 400 or 404 for parameters over them.

// Field bounds (SPEC §8). Anything longer is upstream garbage
// (normalize.RejectOversized) and, in a request path, not found.
const (
	MaxIDLen          = 200  // collection ids, order ids, slugs, names, tx hashes
	MaxTokenIDLen     = 100  // EVM token id digits
	MaxURLLen         = 2048 // image and banner URLs
	MaxDescriptionLen = 8192 // free text
)

// MaxRawDigits bounds the length of a raw price string. A longer value is
// upstream garbage, not a price (1e80 wei is far beyond any real supply).
const MaxRawDigits = 80

// Page sizes of the paged endpoints (SPEC §4): the limit parameter
// defaults to DefaultPageLimit and must be from 1 to MaxPageLimit.
const (
	DefaultPageLimit = 25
	MaxPageLimit     = 100
)

// ListingsCeiling is the size of the listings snapshot window (SPEC §4
// listings rule 4).
const ListingsCeiling = 250

// OrderBookMax is how many eligible native rows the order book contributes
// per collection (SPEC §8).
const OrderBookMax = 200

// Sweep quote sizes (GET /v1/collections/{id}/sweep, beyond SPEC): the
// count parameter defaults to DefaultSweepCount and must be from 1 to
// MaxSweepCount.
const (
	DefaultSweepCount = 10
	MaxSweepCount     = 50
)

package readmodel

import "time"

// Kind names the kind of a bus message.
type Kind string

const (
	// State stream kinds: compacted, the last message per subject is the
	// current state.
	KindCollection Kind = "collection" // Collection, per collection
	KindStats      Kind = "stats"      // Stats, per collection
	KindAnalytics  Kind = "analytics"  // Analytics, per collection
	KindListings   Kind = "listings"   // Listings, per (source, collection); replaces the set wholesale
	KindTokens     Kind = "tokens"     // Tokens, per (collection, bucket); replaces the bucket wholesale
	KindRates      Kind = "rates"      // Rates, one subject
	KindStatus     Kind = "status"     // Status, per (source, collection); CollectionID "" for source-wide polls
	KindPolled     Kind = "polled"     // Polled, per poll: the poll succeeded (every cycle, changed or not)
	// Sales stream kind: append-only.
	KindSales Kind = "sales" // Sales, per collection; a batch of new sales
)

// Message is one normalized fact published by ingest and applied by the
// projector. Exactly the payload field named by Kind is set. A message
// replaces the state of its subject wholesale (state kinds) or adds to it
// (sales), so applying the same message twice is the same as once.
type Message struct {
	// ID is unique per publish intent and becomes the Nats-Msg-Id: a retry
	// of the same publish carries the same ID (and is dropped by JetStream's
	// dedupe window), while a later publish of equal content carries a new
	// one, so a state that goes A → B → A is never deduplicated into B.
	// Ingest sets it to "<cycle start, unix ns>/<kind>/<source>/<collection>/<bucket>".
	ID           string `json:"id"`
	Kind         Kind   `json:"kind"`
	Source       Source `json:"source,omitempty"`
	CollectionID string `json:"collectionId,omitempty"`
	Bucket       uint32 `json:"bucket,omitempty"` // KindTokens only
	// Buckets is how many buckets the collection's tokens were split into
	// when Bucket was published (KindTokens only; 0 from publishers that
	// predate it). While it stays the same a token stays in its bucket.
	Buckets    uint32    `json:"buckets,omitempty"`
	ObservedAt time.Time `json:"observedAt"`

	Collection *CollectionDoc   `json:"collection,omitempty"`
	Stats      *CollectionStats `json:"stats,omitempty"`
	Analytics  *Analytics       `json:"analytics,omitempty"`
	Listings   []ListingRow     `json:"listings,omitempty"`
	Tokens     []TokenDoc       `json:"tokens,omitempty"`
	Rates      USDRates         `json:"rates,omitempty"`
	Status     *PollStatus      `json:"status,omitempty"`
	Sales      []SaleRow        `json:"sales,omitempty"`
	Polled     *Polled          `json:"polled,omitempty"`
}

// Polled says that one poll of an upstream succeeded: published after the
// poll's statuses every cycle it succeeds, whether or not anything
// changed, so a node knows how recent each value is (asOf) while nothing
// else is published. Statuses are published only when they change.
type Polled struct {
	// Poll is the poll's name: a source, or "<source>/<what>" for a second
	// poll of the same upstream (PollMirrorTokens).
	Poll string `json:"poll"`
	// At is the start of the cycle the poll ran in: the same clock as
	// PollStatus.LastGoodAt.
	At time.Time `json:"at"`
}

// PollMirrorTokens is the name of the indexer mirror's token poll.
const PollMirrorTokens = "indexer-mirror/tokens"

// Polls lists every poll name: one per source, plus the mirror's token
// poll. A value's freshness names the polls behind it by index here.
var Polls = []string{
	string(SourceOrderBook), string(SourceIndexerMirror), PollMirrorTokens, string(SourceIndexerStats),
	string(SourceAnalytics), string(SourceCollectionIndex), string(SourcePriceFeed), string(SourceSales),
}

// PollIndex returns the index of poll in Polls, or -1.
func PollIndex(poll string) int {
	for i, p := range Polls {
		if p == poll {
			return i
		}
	}
	return -1
}

// PollStatus is the outcome of the latest poll of one (source, collection).
// Staleness in every view is computed from it.
type PollStatus struct {
	OK bool `json:"ok"`
	// ErrorClass says why the poll failed: "timeout", "http_5xx",
	// "bad_payload", "transport". Empty when OK.
	ErrorClass string `json:"errorClass,omitempty"`
	// LastGoodAt is when the source last answered well for this subject
	// (zero if never); a failing source's last good rows are kept until
	// LastGoodAt plus the configured retention.
	LastGoodAt   time.Time `json:"lastGoodAt"`
	FailingSince time.Time `json:"failingSince"` // zero when OK
}

// Position is a point in the two streams: the highest stream sequence of
// the state stream and of the sales stream. A projector that has applied a
// Position has applied every message at or below it.
type Position struct {
	State uint64 `json:"state"`
	Sales uint64 `json:"sales"`
}

// Covers reports whether p is at or past q on both streams.
func (p Position) Covers(q Position) bool { return p.State >= q.State && p.Sales >= q.Sales }

package source

import (
	"context"
	"time"

	"github.com/marketd/marketd/readmodel"
)

// This file is the seam between an upstream's poller (one file per
// upstream in this package) and the ingest cycle (package ingest, which
// declares the Poller interface over these types). A poller fetches,
// decodes and normalizes its upstream's rows, counts the rows it rejects
// and yields the rest as Units; the cycle validates each unit's
// collection against the cycle's collection list, detects changes,
// publishes, and records poll statuses and everything it remembers
// between cycles. A poller keeps no state from one poll to the next: what
// it must resume from (a watermark, a cursor) it returns as its mark, and
// the cycle hands it back once the poll's messages are durable.

// Spec says how the cycle treats one poller's units.
type Spec struct {
	// Name keys the poll in the cycle Summary and Stats: the source name,
	// or "<source>/<what>" for a second poll of the same upstream.
	Name string
	// Source is the upstream: its configuration (base URL, interval,
	// timeout) and the Source of every message the poll yields.
	Source readmodel.Source
	// First polls run, and end, before the others start: the collection
	// list drives the per-collection polls, and the rates go out first.
	First bool
	// Collections is how the poll's units relate to the collection list.
	Collections Collections
	// Status is which poll statuses the cycle publishes for the poll.
	Status Scope
	// Append: the poll's messages add to what was published (sales);
	// they are published as they come, without change detection.
	// Otherwise each message replaces its subject's last one and is
	// published only when its content changed.
	Append bool
	// Empty, when set, is the kind of the message a complete poll stands
	// for a listed collection it did not deliver: that kind's message with
	// no rows (the collection has none now).
	Empty readmodel.Kind
}

// Collections is how a poll's units relate to the collection list.
type Collections uint8

const (
	// Checked: each unit's collection is normalized and must be in the
	// cycle's collection list (when one is known); a unit that fails is
	// rejected whole, its Size rows counted under the reason.
	Checked Collections = iota
	// Lists: the poll's units are the collection list (collection-index);
	// a successful poll's unit collections become the next list.
	Lists
	// Global: the poll's units belong to no collection (price-feed).
	Global
)

// Scope is which poll statuses the cycle publishes for a poll.
type Scope uint8

const (
	// NoStatus: none (the token poll: its endpoint has no staleness signal).
	NoStatus Scope = iota
	// SourceWide: one status for the whole poll, collection "".
	SourceWide
	// PerCollection: one per listed collection. A collection is delivered
	// once per poll (later units of it are ignored); one the poll did not
	// deliver takes the poll's outcome (see Spec.Empty).
	PerCollection
)

// Request is what the cycle hands one poll.
type Request struct {
	Limit int       // rows asked per page
	Mark  string    // the mark the last recorded poll returned; "" at first
	Now   time.Time // the time (UTC) rows are normalized as of: the cycle's start
}

// Sink receives a poll's output. Its methods are called from the poll's
// goroutine only.
type Sink interface {
	// Reject counts n rows rejected for err's reason
	// (normalize.ReasonOf).
	Reject(err error, n int)
	// Emit hands the cycle one unit. A non-nil error (publishing failed,
	// or the cycle was cancelled) must end the poll with that error.
	Emit(u Unit) error
}

// A Unit is one collection's rows from one poll (or the poll's rows, for a
// Global poll), normalized lazily: the cycle calls Build only for a unit
// it accepts.
type Unit struct {
	// Kind is the kind of the unit's messages.
	Kind readmodel.Kind
	// Collection is the collection id as the upstream sent it (see
	// Collections); "" for a Global poll.
	Collection string
	// Size is how many rows the unit holds, counted as rejected when its
	// collection fails the check; nil means 1. It may decode.
	Size func() int
	// At is the poll time the unit's rows are normalized at (expiry,
	// defaulted timestamps); change detection leaves out a timestamp that
	// defaulted to it.
	At time.Time
	// Lazy says Raw holds the unit's rows as the upstream sent them: when
	// they are the bytes of the unit's subject's last clean build and no
	// row of it has expired since, the cycle counts that build's rows as
	// accepted and the subject as unchanged without calling Build. Raw may
	// point into the upstream's answer, so Raw, Size and Build are valid
	// only during Emit.
	Lazy bool
	Raw  []byte
	// Build normalizes the unit for its checked collection id, counting
	// rejected rows through the Sink, and returns its messages. The cycle
	// sets each message's Kind, Source and CollectionID.
	Build func(id string) Built
}

// Built is a unit's normalized output.
type Built struct {
	// Msgs are the unit's messages in publishing order. A replacing unit
	// has one message, or (Buckets > 0) one per bucket 0..Buckets-1: the
	// cycle then publishes an empty message for each bucket the
	// collection had before and has no more.
	Msgs []*readmodel.Message
	// Rows is how many rows the unit's messages hold (accepted rows).
	Rows int
	// Clean says no row of the unit was rejected, so a Lazy unit's build
	// may stand for the same bytes next time.
	Clean bool
	// Expires is the earliest expiry among the rows (unix nanoseconds;
	// 0 = none expires): a Lazy unit's build stands until then.
	Expires int64
}

// one is a Built of a single message.
func one(m *readmodel.Message, rows int) Built {
	return Built{Msgs: []*readmodel.Message{m}, Rows: rows, Clean: true}
}

// rejectAll counts each of errs as one rejected row.
func rejectAll(sink Sink, errs []error) {
	for _, err := range errs {
		sink.Reject(err, 1)
	}
}

// flatPoll walks a flat per-collection endpoint (indexer-stats,
// analytics): build normalizes one row into its collection id (as sent)
// and its one message; each row is a unit.
func flatPoll[R any](ctx context.Context, req Request, sink Sink, kind readmodel.Kind,
	walk func(context.Context, int, func(Rows[R]) error) error,
	build func(r *R) (string, *readmodel.Message, error)) error {
	return walk(ctx, req.Limit, func(page Rows[R]) error {
		rejectAll(sink, page.Rejects)
		for i := range page.Rows {
			rawID, msg, err := build(&page.Rows[i])
			if err != nil {
				sink.Reject(err, 1)
				continue
			}
			if err := sink.Emit(Unit{Kind: kind, Collection: rawID, Build: func(string) Built { return one(msg, 1) }}); err != nil {
				return err
			}
		}
		return nil
	})
}

package httpapi

import (
	"context"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/render"
)

// Reader is every read the public API makes: New requires one, and a
// node whose reader lacks a method fails to compile (node.Views is pinned
// to it) instead of serving empty answers. A new endpoint adds its read
// here.
//
// Every method is safe for concurrent use; returned views and their byte
// slices are never modified afterwards. Errors are *readmodel.Error:
// NotFound when the subject does not exist, BadRequest for an
// unresolvable position, anything else is a failure of the node
// (answered per SPEC §7's table).
type Reader interface {
	// ResolveCollection maps any {id} form (slug, address, document id) to
	// the canonical document id; NotFound if none.
	ResolveCollection(ctx context.Context, id string) (string, error)
	// Collection returns the prepared detail of a canonical id.
	Collection(ctx context.Context, id string) (render.CollectionView, error)
	// Floor returns the prepared floor response of a canonical id.
	Floor(ctx context.Context, id string) (render.FloorView, error)
	// View returns the record of the view module named name
	// (render.RegisterView) for a canonical id: Version 0 and a nil
	// Record when none is stored yet. Every module is read through it,
	// so a new one adds no method here.
	View(ctx context.Context, name, id string) (render.ViewValue, error)
	// Listings returns the listing snapshot of version (0 = current); when
	// that version is no longer held it returns the current one (compare
	// view.Version).
	Listings(ctx context.Context, id string, version uint64) (render.ListingsView, error)
	// Sales returns up to limit sales, newest first, after the position
	// after ("" = newest; else a Page.Next). BadRequest if after is
	// unresolvable.
	Sales(ctx context.Context, id string, after string, limit int) (render.Page, error)
	// Browse returns up to limit collection summaries in sort order
	// (native-launched first), restricted to chain unless chain is "".
	Browse(ctx context.Context, sort readmodel.Sort, chain readmodel.Chain, after string, limit int) (render.Page, error)
	// Token returns a token's prepared detail. address is EVM lowercase or
	// the Solana collection mint as given. address and tokenID may be
	// views of the request, valid only during the call: an implementation
	// copies what it keeps.
	Token(ctx context.Context, chain readmodel.Chain, address, tokenID string) (render.TokenView, error)
	// Events returns up to limit events of canonical collection id's
	// change feed (GET /v1/collections/{id}/events), oldest first, after
	// the event at seq after whose id is afterID (after 0: from the oldest
	// kept), of the types whose render.EventTypeBit is set in types (0:
	// all). A position older than the retention, or not the event it
	// names, is BadRequest.
	Events(ctx context.Context, id string, after uint64, afterID string, limit int, types uint8) (render.EventPage, error)
	// MarketEvents returns up to limit events of the market's change feed
	// (GET /v1/events), every collection's events in the order this node
	// applied them, oldest first, after the event at seq after whose id
	// is afterID (after 0: from the oldest kept), keeping those of the
	// types set in types (0: all), of chain ("": every chain) and of the
	// canonical ids collections (none: every collection). A read goes
	// through a bounded number of events (the page is then Full). A
	// position older than the retention, or not the event it names, is
	// BadRequest.
	MarketEvents(ctx context.Context, after uint64, afterID string, limit int, types uint8, chain readmodel.Chain, collections []string) (render.EventPage, error)

	// CollectionIndexStatus is the last applied poll status of the
	// collection index; ok is false when none has been applied yet (the
	// index is then never judged stale). GET /v1/collections follows the
	// listings rule with it (SPEC §4, §7): while the index fails, its last
	// good summaries are served for Config.RowRetention after its last
	// success, then 502 upstream_error.
	CollectionIndexStatus(ctx context.Context) (status readmodel.PollStatus, ok bool, err error)
	// PollTimes returns when each poll (by index into readmodel.Polls)
	// last succeeded, as applied to the views: every asOf is resolved
	// against it per request (asof.go). Never nil, never modified after
	// it is returned; a poll with no success known is 0 (the asOf then
	// resolves from what its view recorded alone).
	PollTimes(ctx context.Context) *render.PollTimes
	// TokensVersion returns a number that changes whenever any token's
	// view changes other than by the clock (TokenView.Until); ok is false
	// when it cannot say (the views are being rebuilt). GET /v1/tokens
	// answers a repeated batch from its remembered body while it holds.
	TokensVersion() (v uint64, ok bool)
	// ViewsVersion returns a number that changes whenever any read may
	// answer differently other than by the clock; ok is false when it
	// cannot say (the views are being rebuilt). The routes marked
	// prepared answer a repeated request target from the response memo
	// while it holds, without resolving an id, verifying a cursor or
	// reading a view. The clock's part is the handlers' to bound (keep's
	// until).
	ViewsVersion() (v uint64, ok bool)
}

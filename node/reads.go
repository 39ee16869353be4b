package node

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/marketd/marketd/httpapi"
	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/projector"
	"github.com/marketd/marketd/readmodel/render"
	"github.com/marketd/marketd/readmodel/store"
)

// eachPollStatus is projector.EachPollStatus of the views served.
func (vs *Views) eachPollStatus(ctx context.Context, fn func(src readmodel.Source, cid string, st readmodel.PollStatus) error) error {
	_, err := read(vs, "poll statuses", func(v *storeReads) (struct{}, error) {
		return struct{}{}, v.proj.EachPollStatus(ctx, fn)
	})
	return err
}

// read runs fn on the views served: a panic inside it is recovered as
// damage, and damage it reports starts a rebuild.
func read[T any](vs *Views, what string, fn func(v *storeReads) (T, error)) (out T, err error) {
	set := vs.cur.Load()
	if set == nil {
		return out, errRebuilding
	}
	defer func() {
		if r := recover(); r != nil {
			err = store.Recovered(r, what)
		}
		if err == nil || vs.cur.Load() != set {
			return // a store closed under the read by a rebuild is not news
		}
		if reason, ok := store.Damaged(err); ok {
			vs.report(reason, err)
		}
	}()
	return fn(set.rd)
}

// The reads of the public API (httpapi.Reader), on the views served. A
// read while the views are rebuilt answers errRebuilding.

// Views is what the public API reads: forgetting one of its reads fails
// to compile here, not at a request.
var _ httpapi.Reader = (*Views)(nil)

// ResolveCollection is httpapi.Reader's: the canonical id of any {id} form, from the views served.
func (vs *Views) ResolveCollection(ctx context.Context, id string) (string, error) {
	return read(vs, "resolve", func(v *storeReads) (string, error) { return v.ResolveCollection(ctx, id) })
}

// Collection is httpapi.Reader's: a collection's prepared detail, from the views served.
func (vs *Views) Collection(ctx context.Context, id string) (render.CollectionView, error) {
	return read(vs, "collection", func(v *storeReads) (render.CollectionView, error) { return v.Collection(ctx, id) })
}

// Floor is httpapi.Reader's: a collection's prepared floor, from the views served.
func (vs *Views) Floor(ctx context.Context, id string) (render.FloorView, error) {
	return read(vs, "floor", func(v *storeReads) (render.FloorView, error) { return v.Floor(ctx, id) })
}

// View is httpapi.Reader's: a view module's record of a collection, from the views served.
func (vs *Views) View(ctx context.Context, name, id string) (render.ViewValue, error) {
	return read(vs, name, func(v *storeReads) (render.ViewValue, error) { return v.ReadView(ctx, name, id) })
}

// Listings is httpapi.Reader's: a listing snapshot, from the views served.
func (vs *Views) Listings(ctx context.Context, id string, version uint64) (render.ListingsView, error) {
	return read(vs, "listings", func(v *storeReads) (render.ListingsView, error) { return v.Listings(ctx, id, version) })
}

// Sales is httpapi.Reader's: a page of a collection's sales, from the views served.
func (vs *Views) Sales(ctx context.Context, id string, after string, limit int) (render.Page, error) {
	return read(vs, "sales", func(v *storeReads) (render.Page, error) { return v.Sales(ctx, id, after, limit) })
}

// Browse is httpapi.Reader's: a page of the collection index, from the views served.
func (vs *Views) Browse(ctx context.Context, sort readmodel.Sort, chain readmodel.Chain, after string, limit int) (render.Page, error) {
	return read(vs, "browse", func(v *storeReads) (render.Page, error) { return v.Browse(ctx, sort, chain, after, limit) })
}

// Token is httpapi.Reader's: a token's prepared detail, from the views served.
func (vs *Views) Token(ctx context.Context, chain readmodel.Chain, address, tokenID string) (render.TokenView, error) {
	return read(vs, "token", func(v *storeReads) (render.TokenView, error) { return v.Token(ctx, chain, address, tokenID) })
}

// Events is the change feed (GET /v1/collections/{id}/events) of the
// views served.
func (vs *Views) Events(ctx context.Context, id string, after uint64, afterID string, limit int, types uint8) (render.EventPage, error) {
	return read(vs, "events", func(v *storeReads) (render.EventPage, error) {
		return v.Events(ctx, id, after, afterID, limit, types)
	})
}

// MarketEvents is the market's change feed (GET /v1/events) of the views
// served.
func (vs *Views) MarketEvents(ctx context.Context, after uint64, afterID string, limit int, types uint8, chain readmodel.Chain, collections []string) (render.EventPage, error) {
	return read(vs, "market events", func(v *storeReads) (render.EventPage, error) {
		return v.Store.MarketEvents(ctx, after, afterID, limit, store.MarketFilter{Types: types, Chain: chain, Collections: collections})
	})
}

// TokensVersion is httpapi.Reader's: the served store's
// TokensVersion, made unlike any other set's by the swap that made it
// current; not ok while the views are rebuilt.
func (vs *Views) TokensVersion() (uint64, bool) {
	set := vs.cur.Load()
	if set == nil {
		return 0, false
	}
	return set.epoch<<48 ^ set.st.TokensVersion(), true
}

// ViewsVersion is httpapi.Reader's: a number that changes with
// every commit to the served store (store.ViewsVersion), with every
// position the projector records as applied (poll times are read per
// applied position, see views.pollTimes) and with the swap that made the
// store current; not ok while the views are rebuilt. The parts are mixed,
// not added, so that no two states share a number by arithmetic.
func (vs *Views) ViewsVersion() (uint64, bool) {
	set := vs.cur.Load()
	if set == nil {
		return 0, false
	}
	v := mix64(set.epoch)
	v = mix64(v ^ set.st.ViewsVersion())
	return mix64(v ^ set.proj.Applied().State), true
}

// mix64 is splitmix64's finalizer: a bijection of uint64 that spreads
// every input bit over the output.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// PollTimes is httpapi.Reader's: when each poll last succeeded, as the
// views served applied it (none while they are rebuilt).
func (vs *Views) PollTimes(ctx context.Context) *render.PollTimes {
	pt, _ := read(vs, "poll times", func(v *storeReads) (*render.PollTimes, error) { return v.pollTimes(ctx) })
	if pt == nil {
		return &noPollTimes
	}
	return pt
}

// CollectionIndexStatus is httpapi.Reader's: the collection index's
// poll status as the views served applied it.
func (vs *Views) CollectionIndexStatus(ctx context.Context) (readmodel.PollStatus, bool, error) {
	type st struct {
		s  readmodel.PollStatus
		ok bool
	}
	r, err := read(vs, "index status", func(v *storeReads) (st, error) {
		s, ok, err := v.CollectionIndexStatus(ctx)
		return st{s, ok}, err
	})
	return r.s, r.ok, err
}

// storeReads is what the reads of one view set go to: its store, plus
// the two reads that are cached per applied state position (the
// collection index's poll status and the polls' last successes).
type storeReads struct {
	*store.Store
	proj *projector.Projector

	mu     sync.Mutex
	at     uint64 // state position the cached status was read at
	read   bool
	status readmodel.PollStatus
	ok     bool

	polled atomic.Pointer[polledAt] // poll successes, per applied state position
}

// CollectionIndexStatus reads the status once per applied state position:
// GET /v1/collections asks on every request, and it only changes when the
// projector applies something. (The position is read before the status, so
// a status cached under a position is never older than that position.)
func (v *storeReads) CollectionIndexStatus(ctx context.Context) (readmodel.PollStatus, bool, error) {
	at := v.proj.Applied().State
	v.mu.Lock()
	if v.read && v.at == at {
		st, ok := v.status, v.ok
		v.mu.Unlock()
		return st, ok, nil
	}
	v.mu.Unlock()
	st, ok, err := projector.SourceStatus(ctx, v.Store, readmodel.SourceCollectionIndex, "")
	if err != nil {
		return st, ok, err
	}
	v.mu.Lock()
	v.at, v.read, v.status, v.ok = at, true, st, ok
	v.mu.Unlock()
	return st, ok, nil
}

// polledAt is the poll successes read at one applied state position.
type polledAt struct {
	at    uint64
	times render.PollTimes
}

// pollTimes reads when each poll last succeeded once per applied state
// position (Views.PollTimes): asOf is resolved
// on every request, and the times only change when the projector applies
// something. On a read failure it answers what was read last (asOf then
// lags; it never guesses ahead) with the error.
func (v *storeReads) pollTimes(ctx context.Context) (*render.PollTimes, error) {
	at := v.proj.Applied().State
	cur := v.polled.Load()
	if cur != nil && cur.at == at {
		return &cur.times, nil
	}
	pt, err := projector.PollTimes(ctx, v.Store)
	if err != nil {
		if cur != nil {
			return &cur.times, err
		}
		return &noPollTimes, err
	}
	next := &polledAt{at: at, times: pt}
	v.polled.Store(next)
	return &next.times, nil
}

// noPollTimes knows no poll's success (every asOf of a healthy source is
// null); never modified.
var noPollTimes render.PollTimes

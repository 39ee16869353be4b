package projector

import (
	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/render"
	"github.com/marketd/marketd/readmodel/store"
)

// The change feed (GET /v1/collections/{id}/events) is produced here, one
// applied message at a time, never by a render: renders are batched, and
// batches differ between nodes, while what one message changes does not.
//
// A collection's feed state holds the listing set the feed last reported
// (the merged snapshot, as the listings endpoint serves it). After every
// message that can change the set (a listing source's rows or its
// per-collection status, the collection document), the set is merged again
// as of the message's time and diffed against the stored one: every
// difference becomes an event and the new set is stored with them, in the
// same transaction as the message. Nothing is lost between two messages:
// a listing that expired, or a failing source's rows that aged out, in
// between is reported at the next message. Applying a collection's events
// in order to the set at any earlier event yields the set after the last
// (TestFeedReplaysSnapshots).
//
// The market's feed (GET /v1/events) is every collection's events in one
// log, in the order their messages were applied: appendFeed queues each
// event for both, and saveStates appends them in the same transaction.
//
// Event ids are the stream position of the message ("s<seq>" on the state
// stream, "x<seq>" on the sales stream), the event's index among the
// message's events and a hash of its content: the same message applied to
// the same state gives the same ids on every node, live or replayed.

// feedState is the part of a collection's feed state a diff reads: the
// listing set last reported, in snapshot order, and the orderIds of the
// latest sales applied (oldest first, at most feedSoldKept), each as its
// store.OrderHash: a listing that leaves the set after its sale was
// applied is removed as sold.
type feedState struct {
	Rows []readmodel.ListingRow
	Sold []uint64
}

const feedSoldKept = 256

// feedWanted reports, before msg is applied, whether applying it can
// change collection's listing set (feed then diffs it after). A healthy
// status that follows a healthy one changes nothing (streams written
// before ingest left healthy collections without a status carry one per
// collection and source): it is skipped.
func (a *applier) feedWanted(msg *readmodel.Message) (bool, error) {
	if msg.CollectionID == "" {
		return false, nil // source-wide: each collection catches up at its next message
	}
	switch msg.Kind {
	case readmodel.KindListings, readmodel.KindCollection:
		return true, nil
	case readmodel.KindStatus:
		if msg.Source != readmodel.SourceOrderBook && msg.Source != readmodel.SourceIndexerMirror {
			return false, nil
		}
		if !msg.Status.OK {
			return true, nil
		}
		prev, err := a.status(msg.Source, msg.CollectionID)
		return failed(prev), err
	}
	return false, nil
}

// feed diffs msg's collection's listing set (see the top of this file).
func (a *applier) feed(msg *readmodel.Message) error {
	cid := msg.CollectionID
	doc, err := a.doc(cid)
	if err != nil {
		return err
	}
	snap, err := a.snapshot(cid, doc)
	if err != nil {
		return err
	}
	st, err := a.state(cid)
	if err != nil {
		return err
	}
	set, err := st.Set()
	if err != nil {
		return err
	}
	_, sold, err := st.Feed()
	if err != nil {
		return err
	}
	evs, err := a.diffListings(cid, &feedState{Rows: set, Sold: sold}, snap.Rows)
	if err != nil || len(evs) == 0 {
		return err
	}
	st.setSet(snap.Rows)
	a.appendFeed(st, 's', 0, evs)
	return nil
}

// feedSale appends a sale event for row, the i-th new sale of the message
// being applied, which the store added as ref, and remembers its orderId.
func (a *applier) feedSale(cid string, i int, row *readmodel.SaleRow, ref store.SaleRef) error {
	st, err := a.loaded(cid)
	if err != nil {
		return err
	}
	_, sold, err := st.Feed()
	if err != nil {
		return err
	}
	if row.OrderID != "" {
		sold = append(sold, store.OrderHash(row.OrderID))
		if n := len(sold) - feedSoldKept; n > 0 {
			sold = append(sold[:0], sold[n:]...)
		}
		st.setSold(sold)
	}
	at := row.Timestamp
	a.appendFeed(st, 'x', i, []store.NewEvent{{Type: render.EventSale, ObservedAt: a.now, UpstreamAt: &at, Sale: &ref}})
	return nil
}

// appendFeed queues evs, the events of the message being applied from
// its first-th on, for saveStates, placing each in the streams: for the
// collection's feed, and for the market's in the order they are applied.
func (a *applier) appendFeed(st *collState, stream byte, first int, evs []store.NewEvent) {
	for i := range evs {
		e := evs[i]
		e.Stream, e.Seq, e.Index = stream, a.seq, first+i
		st.pending = append(st.pending, e)
		a.market = append(a.market, store.MarketEvent{CollectionID: st.cid, Event: e})
	}
}

// diffListings returns the events that turn st.Rows into cur: removals
// in the old set's order, then additions and price changes in the new
// set's, then the floor.
func (a *applier) diffListings(cid string, st *feedState, cur []readmodel.ListingRow) ([]store.NewEvent, error) {
	old := make(map[string]*readmodel.ListingRow, len(st.Rows))
	for i := range st.Rows {
		old[st.Rows[i].AssetKey()] = &st.Rows[i]
	}
	now := make(map[string]*readmodel.ListingRow, len(cur))
	for i := range cur {
		now[cur[i].AssetKey()] = &cur[i]
	}
	var evs []store.NewEvent
	for i := range st.Rows {
		o := &st.Rows[i]
		n, still := now[o.AssetKey()]
		if still && n.OrderID == o.OrderID {
			continue
		}
		reason, err := a.removalReason(cid, st, o, still)
		if err != nil {
			return nil, err
		}
		e := store.NewEvent{Type: render.EventListingRemoved, ObservedAt: a.now, Reason: reason, Listing: rowCopy(o)}
		if reason == render.ReasonExpired {
			e.UpstreamAt = o.ExpiresAt
		}
		evs = append(evs, e)
	}
	for i := range cur {
		n := &cur[i]
		o, had := old[n.AssetKey()]
		at := n.Timestamp
		switch {
		case !had || o.OrderID != n.OrderID:
			evs = append(evs, store.NewEvent{Type: render.EventListingAdded, ObservedAt: a.now, UpstreamAt: &at, Listing: rowCopy(n)})
		case o.PriceRaw != n.PriceRaw:
			evs = append(evs, store.NewEvent{Type: render.EventPriceChanged, ObservedAt: a.now, UpstreamAt: &at, Listing: rowCopy(n),
				Previous: store.EventPrice{Chain: o.Chain, Raw: o.PriceRaw}})
		}
	}
	of, nf := floorOf(st.Rows), floorOf(cur)
	if of.PriceRaw != nf.PriceRaw || of.Chain != nf.Chain {
		evs = append(evs, store.NewEvent{Type: render.EventFloorChanged, ObservedAt: a.now,
			Floor: store.EventPrice{Chain: nf.Chain, Raw: nf.PriceRaw}, Previous: store.EventPrice{Chain: of.Chain, Raw: of.PriceRaw}})
	}
	return evs, nil
}

// rowCopy is a copy of r for an event: the sets it comes from are not
// the event's to keep.
func rowCopy(r *readmodel.ListingRow) *readmodel.ListingRow {
	c := *r
	return &c
}

// floorOf is the cheapest row of a snapshot-ordered set (zero when empty).
func floorOf(rows []readmodel.ListingRow) readmodel.ListingRow {
	if len(rows) == 0 {
		return readmodel.ListingRow{}
	}
	return rows[0]
}

// removalReason says why o left the set (still: its asset is listed
// again under another orderId). In order: a sale of its orderId was
// applied; it expired; its source is failing and still holds it (its
// last good rows aged out); the asset was listed again; its source still
// reports it live (it fell beyond the snapshot's ceiling); else cancelled.
func (a *applier) removalReason(cid string, st *feedState, o *readmodel.ListingRow, still bool) (string, error) {
	if o.OrderID != "" {
		h := store.OrderHash(o.OrderID)
		for _, s := range st.Sold {
			if s == h {
				return render.ReasonSold, nil
			}
		}
	}
	if o.ExpiresAt != nil && !o.ExpiresAt.After(a.now) {
		return render.ReasonExpired, nil
	}
	listedLive := false
	for _, src := range listingSourceList {
		rows, err := a.rows(src, cid)
		if err != nil {
			return "", err
		}
		if rows == nil || !holds(rows.Rows, o) {
			continue
		}
		stat, err := a.status(src, cid)
		if err != nil {
			return "", err
		}
		if failed(stat) {
			return render.ReasonSourceDropped, nil
		}
		listedLive = true
	}
	switch {
	case still:
		return render.ReasonRepriced, nil
	case listedLive:
		return render.ReasonBeyondCeiling, nil
	}
	return render.ReasonCancelled, nil
}

// holds reports whether rows hold o's listing live (same asset and
// orderId).
func holds(rows []readmodel.ListingRow, o *readmodel.ListingRow) bool {
	k := o.AssetKey()
	for i := range rows {
		r := &rows[i]
		if r.OrderID == o.OrderID && r.Status == readmodel.StatusActive && r.AssetKey() == k {
			return true
		}
	}
	return false
}

package projector

import (
	"slices"
	"time"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/render"
)

func (a *applier) source(src readmodel.Source, cid string) (render.ListingSource, error) {
	var ls render.ListingSource
	rows, err := a.rows(src, cid)
	if err != nil {
		return ls, err
	}
	if rows != nil {
		ls.Rows, ls.ObservedAt = rows.Rows, rows.ObservedAt
	}
	st, err := a.status(src, cid)
	if err != nil {
		return ls, err
	}
	if failed(st) {
		ls.Failed, ls.LastGoodAt = true, st.Status.LastGoodAt
	}
	return ls, nil
}

func (a *applier) snapshot(cid string, doc *readmodel.CollectionDoc) (render.Snapshot, error) {
	in := render.SnapshotInputs{
		HasContract: doc != nil && doc.ContractAddress != "",
		Now:         a.now,
		Retention:   a.retention,
	}
	var err error
	if in.OrderBook, err = a.source(readmodel.SourceOrderBook, cid); err != nil {
		return render.Snapshot{}, err
	}
	if in.Mirror, err = a.source(readmodel.SourceIndexerMirror, cid); err != nil {
		return render.Snapshot{}, err
	}
	return render.MergeListings(in), nil
}

func (a *applier) renderListings(cid string, doc *readmodel.CollectionDoc, parts int) error {
	snap, err := a.snapshot(cid, doc)
	if err != nil {
		return err
	}
	a.rendered.Listings = &snap
	var royalty *int64
	if doc != nil {
		royalty = doc.RoyaltyBps
	}
	if parts&partListings != 0 {
		v := render.ListingsRecord{
			Version:       a.ver(),
			Rows:          datedRows(snap.Rows, a.now),
			RoyaltyBps:    royalty,
			StaleSources:  snap.StaleSources,
			AllFailed:     snap.AllFailed,
			Listed:        snap.Listed,
			BeyondExpires: snap.BeyondExpires,
		}
		if v.AsOf, err = a.freshness(cid, listingSources(doc)...); err != nil {
			return err
		}
		a.tx.PutListings(cid, v)
		a.tx.SetDeadline(cid, snap.Deadline)
	}
	if parts&partFloor == 0 {
		return nil
	}
	return a.renderFloor(cid, doc, snap)
}

// datedRows returns rows with now as the timestamp of each row that has
// none (ListingRowJSON's observedAt), so that a stored listing snapshot
// renders alone: rows itself when every row has one, else a copy (rows
// may be the transaction's inputs).
func datedRows(rows []readmodel.ListingRow, now time.Time) []readmodel.ListingRow {
	for i := range rows {
		if !rows[i].Timestamp.IsZero() {
			continue
		}
		out := slices.Clone(rows)
		for j := i; j < len(out); j++ {
			if out[j].Timestamp.IsZero() {
				out[j].Timestamp = now
			}
		}
		return out
	}
	return rows
}

package projector

import (
	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/render"
	"github.com/marketd/marketd/readmodel/store"
)

// renderFloor renders collection cid's floor from the listing snapshot
// snap the listings were rendered from: the cheapest listing (its buyer
// total with SPEC's fees and the royalty), the analytics or snapshot ask,
// and the last good buyer floor when both listing sources failed. A
// collection without a valid chain has no floor (its view is deleted).
func (a *applier) renderFloor(cid string, doc *readmodel.CollectionDoc, snap render.Snapshot) error {
	if doc == nil || !doc.Chain.Valid() {
		a.tx.DeleteFloor(cid)
		return nil
	}
	fin := render.FloorInputs{
		CollectionID:     cid,
		Chain:            doc.Chain,
		SnapshotFloorRaw: doc.FloorRaw,
		Snapshot:         snap,
		RoyaltyBps:       doc.RoyaltyBps,
	}
	an, err := store.Get[readmodel.Analytics](a.tx, store.InAnalytics, cid)
	if err != nil {
		return err
	}
	as, err := a.status(readmodel.SourceAnalytics, cid)
	if err != nil {
		return err
	}
	if an != nil && !failed(as) {
		fin.AnalyticsFloorRaw = an.FloorRaw
	}
	lg, err := store.Get[lastGood](a.tx, store.InLastGood, cid)
	if err != nil {
		return err
	}
	if lg != nil {
		fin.LastGoodRaw, fin.LastGoodAt = lg.Raw, lg.At
	}
	res := render.FloorJSON(fin)
	if !snap.AllFailed && doc.Chain.KeepsLastGoodBuyerFloor() {
		if res.BuyerRaw != "" {
			a.tx.Put(store.InLastGood, lastGood{Raw: res.BuyerRaw, At: a.now}, cid)
		}
	}
	srcs := listingSources(doc)
	if res.AskFrom != "" && res.AskFrom != readmodel.SourceIndexerMirror {
		srcs = append(srcs, res.AskFrom)
	}
	asOf, err := a.freshness(cid, srcs...)
	if err != nil {
		return err
	}
	a.tx.PutFloor(cid, render.FloorView{
		Version:       a.ver(),
		Body:          tmplTimed(res.Body),
		FallbackAfter: res.FallbackAfter,
		Fallback:      tmplTimed(res.Fallback),
		AsOf:          asOf,
	})
	return nil
}

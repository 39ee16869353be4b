package projector

import (
	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/render"
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
	st, err := a.state(cid)
	if err != nil {
		return err
	}
	an, err := st.Analytics()
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
	lg, err := st.LastGood()
	if err != nil {
		return err
	}
	if lg != nil {
		fin.LastGoodRaw, fin.LastGoodAt = lg.Raw, lg.At
	}
	res := render.FloorJSON(fin)
	a.rendered.AskFloorRaw = res.AskRaw
	if !snap.AllFailed && doc.Chain.KeepsLastGoodBuyerFloor() {
		if res.BuyerRaw != "" {
			st.setLastGood(&lastGood{Raw: res.BuyerRaw, At: a.now})
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

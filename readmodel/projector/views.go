package projector

import "github.com/marketd/marketd/readmodel/render"

// deriveViews derives, after the render r of a collection, every
// registered view module (render.RegisterView) whose parts r rendered:
// each from its stored record, written at this transaction's version
// when it changed. The modules are read once per call: one registered
// meanwhile is derived from the next render on.
func (a *applier) deriveViews(r *render.Rendered) error {
	for _, m := range render.Views() {
		if m.Parts()&r.Parts == 0 {
			continue
		}
		rec, err := a.tx.ViewRecord(m, r.ID)
		if err != nil {
			return err
		}
		if next, changed := m.Derive(r, rec); changed {
			a.tx.PutViewRecord(m, r.ID, a.ver(), next)
		}
	}
	return nil
}

// moduleParts is the view module parts (render.Part) of a render's parts
// (the detail is not rendered without a document).
func moduleParts(parts int, hasDoc bool) render.Part {
	var p render.Part
	if hasDoc && parts&(partDetail|partBrowse) != 0 {
		p |= render.PartDetail
	}
	if parts&partListings != 0 {
		p |= render.PartListings
	}
	if parts&partFloor != 0 {
		p |= render.PartFloor
	}
	return p
}

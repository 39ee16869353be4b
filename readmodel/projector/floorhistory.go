package projector

import "github.com/marketd/marketd/readmodel/render"

// observeFloor records in collection cid's floor history (the floor
// history view, store/floorhistory.go) that its ask floor was raw when its
// floor was rendered, at a.now: the time the messages behind the render
// were observed, so a node that applies the same messages keeps the same
// history. A render with no ask floor observes nothing; one that changes
// no bucket writes nothing.
func (a *applier) observeFloor(cid, raw string) error {
	if raw == "" {
		return nil
	}
	h, err := a.tx.FloorHistory(cid)
	if err != nil {
		return err
	}
	if h == nil {
		h = &render.FloorHistory{}
	}
	if h.Observe(a.now, raw) {
		a.tx.PutFloorHistory(cid, a.ver(), h)
	}
	return nil
}

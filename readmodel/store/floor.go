package store

import (
	"context"
	"time"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/render"
)

// The floor view (GET /v1/collections/{id}/floor): one record per
// collection under v/f/<cid>, the prepared FloorResponse and the fallback
// that takes over when a last-good buyer floor ages out. The projector
// derives it (projector/floor.go); this file is its record, its write and
// its read.

func encodeFloor(v render.FloorView) []byte {
	e := newEnc(v.Version)
	e.timed(v.Body)
	var after int64
	if !v.FallbackAfter.IsZero() {
		after = v.FallbackAfter.UnixNano()
	}
	e.i(after)
	e.timed(v.Fallback)
	e.freshness(v.AsOf)
	return e.b
}

func decodeFloor(b []byte) (render.FloorView, bool) {
	d, ver := newDec(b)
	v := render.FloorView{Version: ver}
	v.Body = d.timed()
	if after := d.i(); after != 0 {
		v.FallbackAfter = time.Unix(0, after).UTC()
	}
	v.Fallback = d.timed()
	v.AsOf = d.freshness()
	return v, !d.bad
}

// PutFloor writes cid's floor view.
func (t *Tx) PutFloor(cid string, v render.FloorView) {
	t.viewIfChanged(key(pFloor, cid), encodeFloor(v), nil)
}

// DeleteFloor removes cid's floor view.
func (t *Tx) DeleteFloor(cid string) { t.delView(key(pFloor, cid)) }

// Floor returns the prepared floor view of canonical id; NotFound if
// absent.
func (s *Store) Floor(ctx context.Context, id string) (render.FloorView, error) {
	var kb [viewKeyBuf]byte
	kk := append(append(kb[:0], pFloor...), id...)
	c, gen, ok := s.cache.getBytes(kk)
	if ok {
		return c.(render.FloorView), nil
	}
	k := string(kk)
	b, ok, err := s.get([]byte(k)) // not kk: it would escape, and the buffer with it
	if err != nil {
		return render.FloorView{}, err
	}
	if !ok {
		return render.FloorView{}, notFound("floor")
	}
	v, ok := decodeFloor(b)
	if !ok {
		return render.FloorView{}, readmodel.Errorf(readmodel.Internal, "corrupt floor view")
	}
	q := s.USD()
	v.Body, v.Fallback, v.USD = filledTimed(v.Body, q), filledTimed(v.Fallback, q), q.Version
	s.cache.put(k, v, gen)
	return v, nil
}

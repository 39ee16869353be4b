package store

import (
	"context"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/render"
)

// The collection detail view (GET /v1/collections/{id}): one record per
// collection under v/c/<cid>, its prepared CollectionDetail with the chain
// and contract flags the other endpoints check. Derived by
// projector/collection.go.

func encodeCollection(v render.CollectionView) []byte {
	e := newEnc(v.Version)
	e.str(string(v.Chain))
	e.flag(v.HasContract)
	e.bytes(v.Detail)
	e.freshness(v.AsOf)
	return e.b
}

func decodeCollection(id string, b []byte) (render.CollectionView, bool) {
	d, ver := newDec(b)
	v := render.CollectionView{ID: id, Version: ver}
	v.Chain = readmodel.Chain(d.str())
	v.HasContract = d.flag()
	v.Detail = d.bytes()
	v.AsOf = d.freshness()
	return v, !d.bad
}

// PutCollection writes cid's collection view.
func (t *Tx) PutCollection(v render.CollectionView) {
	t.viewIfChanged(key(pCollection, v.ID), encodeCollection(v), nil)
}

// Collection returns the prepared detail of canonical id; NotFound if
// absent.
func (s *Store) Collection(ctx context.Context, id string) (render.CollectionView, error) {
	var kb [viewKeyBuf]byte
	kk := append(append(kb[:0], pCollection...), id...)
	c, gen, ok := s.cache.getBytes(kk)
	if ok {
		return c.(render.CollectionView), nil
	}
	k := string(kk)
	b, ok, err := s.get([]byte(k)) // not kk: it would escape, and the buffer with it
	if err != nil {
		return render.CollectionView{}, err
	}
	if !ok {
		return render.CollectionView{}, notFound("collection")
	}
	v, ok := decodeCollection(id, b)
	if !ok {
		return render.CollectionView{}, readmodel.Errorf(readmodel.Internal, "corrupt collection view")
	}
	q := s.USD()
	v.Detail, v.USD = filled(v.Detail, q), q.Version
	s.cache.put(k, v, gen)
	return v, nil
}

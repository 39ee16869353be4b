package store

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/render"
)

// The records of view modules (render.RegisterView): one per collection,
// under the module's family followed by the collection's canonical id,
// as the module's encoding after the 8-byte version of the transaction
// that wrote it. The store knows no module: it keeps the bytes, finds
// damage, and caches the decoded record for the API.

// moduleKey is module m's key of collection cid.
func moduleKey(m render.ViewModule, cid string) []byte {
	return append([]byte(m.Family()), cid...)
}

// decodeModule splits a module's stored value into its version and its
// decoded record; a cut or undecodable value is damage.
func decodeModule(m render.ViewModule, v []byte) (render.ViewValue, error) {
	if len(v) < 8 {
		return render.ViewValue{}, corruptRecord(m.Name())
	}
	rec, size, err := m.Decode(v[8:])
	if err != nil {
		return render.ViewValue{}, &DamageError{Reason: DamageDecode, Err: fmt.Errorf("store: corrupt %s: %w", m.Name(), err)}
	}
	return render.ViewValue{Version: binary.BigEndian.Uint64(v), Record: rec, Size: size}, nil
}

// ViewRecord returns module m's record of collection cid as this
// transaction sees it; nil when it has none. A damaged record is an
// error (DamageError).
func (t *Tx) ViewRecord(m render.ViewModule, cid string) (any, error) {
	raw, ok, err := t.getRaw(moduleKey(m, cid))
	if err != nil || !ok {
		return nil, err
	}
	v, err := decodeModule(m, raw)
	return v.Record, err
}

// PutViewRecord writes module m's record rec of collection cid at
// version.
func (t *Tx) PutViewRecord(m render.ViewModule, cid string, version uint64, rec any) {
	k := moduleKey(m, cid)
	body := m.Encode(rec)
	v := make([]byte, 8, 8+len(body))
	binary.BigEndian.PutUint64(v, version)
	t.set(k, append(v, body...))
	t.touched = append(t.touched, string(k))
}

// ReadView returns the record of the registered module named name for
// canonical collection id (Version 0 and a nil Record when none is
// stored), from the read cache when it holds it. Errors are Internal
// *readmodel.Error, wrapping a DamageError for a damaged record. Safe
// for concurrent use.
func (s *Store) ReadView(ctx context.Context, name, id string) (render.ViewValue, error) {
	m, ok := render.LookupView(name)
	if !ok {
		return render.ViewValue{}, readmodel.Errorf(readmodel.Internal, "no view module %q", name)
	}
	// A hit, as for the other views, allocates no key: the lookup reads
	// it from the stack.
	var kb [viewKeyBuf]byte
	kk := append(append(kb[:0], m.Family()...), id...)
	c, gen, ok := s.cache.getBytes(kk)
	if ok {
		return c.(render.ViewValue), nil
	}
	k := string(kk)
	b, ok, err := s.get([]byte(k)) // not kk: it would escape, and the buffer with it
	if err != nil || !ok {
		return render.ViewValue{}, err
	}
	v, err := decodeModule(m, b)
	if err != nil {
		return render.ViewValue{}, readmodel.Wrap(readmodel.Internal, err, "read "+name)
	}
	s.cache.put(k, v, gen)
	return v, nil
}

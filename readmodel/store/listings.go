package store

import (
	"context"
	"encoding/binary"
	"errors"
	"time"

	"github.com/klauspost/compress/s2"
	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/render"
)

// The listings snapshot view (GET /v1/collections/{id}/listings): the
// current snapshot under v/l/<cid>, and the ones it superseded that were
// served, kept for a while under o/l/ so a walk stays on its version
// (served.go). Derived by projector/listings.go.

// encodeListings encodes a listing snapshot (schema 21): the version, then
// one S2 block of the body:
//
//	flag     AllFailed
//	uvarint  the number of stale sources, then each as a string
//	flag     whether a royalty follows, then it (varint)
//	uvarint  Listed
//	uvarint  the number of BeyondExpires, then each (varint)
//	...      AsOf
//	...      the rows as a rows record (rowsrec.go, no observation time),
//	         to the end; nothing when there are none
//
// The rows' JSON is rendered on read (render.ListingsRecord.View). The
// same snapshot encodes to the same bytes, so a render that changes
// nothing leaves the stored view and its version alone (viewIfChanged).
func encodeListings(v render.ListingsRecord) []byte {
	// The body is built in, and compressed into, pooled buffers: only the
	// stored value is allocated.
	bufs := listingsBufs.Get().(*[2][]byte)
	defer listingsBufs.Put(bufs)
	e := &enc{b: bufs[0][:0]} // the body only: the version goes in front of its S2 block
	e.flag(v.AllFailed)
	e.u(uint64(len(v.StaleSources)))
	for _, s := range v.StaleSources {
		e.str(string(s))
	}
	e.flag(v.RoyaltyBps != nil)
	if v.RoyaltyBps != nil {
		e.i(*v.RoyaltyBps)
	}
	e.u(uint64(v.Listed))
	e.u(uint64(len(v.BeyondExpires)))
	for _, x := range v.BeyondExpires {
		e.i(x)
	}
	e.freshness(v.AsOf)
	if len(v.Rows) > 0 {
		e.b = appendRows(e.b, time.Time{}, v.Rows)
	}
	// The body after the version is one S2 block: rows repeat their
	// marketplace, currency and the like, and kept 0.62 of their bytes
	// as listing inputs (measured at 10,000 collections x 100 tokens).
	raw := e.b
	if n := s2.MaxEncodedLen(len(raw)); cap(bufs[1]) < n {
		bufs[1] = make([]byte, n)
	}
	block := s2.Encode(bufs[1][:cap(bufs[1])], raw)
	out := make([]byte, 8, 8+len(block))
	binary.BigEndian.PutUint64(out, v.Version)
	bufs[0] = e.b
	return append(out, block...)
}

// decodeListings decodes what encodeListings wrote; ok is false for a
// damaged value.
func decodeListings(b []byte) (render.ListingsRecord, bool) {
	if len(b) < 8 {
		return render.ListingsRecord{}, false
	}
	body, ok := decodeBounded(b[8:], maxListingsBody, s2.Decode)
	if !ok {
		return render.ListingsRecord{}, false
	}
	d := &dec{b: body}
	v := render.ListingsRecord{Version: binary.BigEndian.Uint64(b)}
	v.AllFailed = d.flag()
	ns := d.u()
	if ns > 8 {
		return v, false
	}
	for j := uint64(0); j < ns && !d.bad; j++ {
		v.StaleSources = append(v.StaleSources, readmodel.Source(d.str()))
	}
	if d.flag() {
		r := d.i()
		v.RoyaltyBps = &r
	}
	v.Listed = int(d.u())
	nb := d.u()
	if nb > uint64(len(d.b)) {
		return v, false
	}
	for j := uint64(0); j < nb && !d.bad; j++ {
		v.BeyondExpires = append(v.BeyondExpires, d.i())
	}
	v.AsOf = d.freshness()
	if d.bad {
		return v, false
	}
	if len(d.b) > 0 {
		at, rows, err := decodeRows(d.b)
		if err != nil || !at.IsZero() {
			return v, false
		}
		v.Rows = rows
	}
	return v, true
}

// PutListings writes cid's current listing snapshot and keeps the one it
// supersedes readable by version for Options.ListingsRetention, when the
// store served it (served.go): no cursor can name one it did not.
func (t *Tx) PutListings(cid string, v render.ListingsRecord) {
	k := key(pListings, cid)
	t.viewIfChanged(k, encodeListings(v), func(prev viewStamp, stored []byte) {
		if t.s.opts.NoSuperseded || !t.s.served.served(cid, prev.version) {
			return
		}
		if stored == nil { // known by its stamp: read it, before it is replaced
			var err error
			if stored, _, err = t.getRaw(k); err != nil {
				t.err = errors.Join(t.err, err)
				return
			}
		}
		if len(stored) < 8 {
			return
		}
		ok := key(pOldListings, cid, string(stored[:8]))
		t.setTTL(ok, stored, t.s.opts.ListingsRetention)
		t.touched = append(t.touched, string(ok))
	})
}

// Listings returns the listing snapshot of canonical id at version while
// the node still holds it (superseded snapshots it served are kept for
// Options.ListingsRetention), else the current one; version 0 means
// current. Callers compare the returned Version with what they asked for.
// A collection with no snapshot yet yields an empty current view (version
// 0), not an error.
func (s *Store) Listings(ctx context.Context, id string, version uint64) (render.ListingsView, error) {
	if version != 0 {
		ok := make([]byte, 8)
		binary.BigEndian.PutUint64(ok, version)
		k := string(key(pOldListings, id, string(ok)))
		c, gen, hit := s.cache.get(k)
		if hit {
			return s.servedView(id, c.(render.ListingsView)), nil
		}
		b, found, err := s.get([]byte(k))
		if err != nil {
			return render.ListingsView{}, err
		}
		if found {
			if rec, good := decodeListings(b); good {
				v := rec.View(s.USD())
				s.cache.put(k, v, gen)
				return s.servedView(id, v), nil
			}
		}
	}
	var kb [viewKeyBuf]byte
	kk := append(append(kb[:0], pListings...), id...)
	c, gen, ok := s.cache.getBytes(kk)
	if ok {
		return s.servedView(id, c.(render.ListingsView)), nil
	}
	k := string(kk)
	b, ok, err := s.get([]byte(k)) // not kk: it would escape, and the buffer with it
	if err != nil {
		return render.ListingsView{}, err
	}
	if !ok {
		return render.ListingsView{}, nil
	}
	rec, ok := decodeListings(b)
	if !ok {
		return render.ListingsView{}, readmodel.Errorf(readmodel.Internal, "corrupt listings view")
	}
	v := rec.View(s.USD())
	s.cache.put(k, v, gen)
	return s.servedView(id, v), nil
}

// servedView returns v, the listing snapshot of id, recording that it was
// served (served.go).
func (s *Store) servedView(id string, v render.ListingsView) render.ListingsView {
	if v.Version != 0 {
		s.served.mark(id, v.Version)
	}
	return v
}

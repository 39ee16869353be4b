package store

import (
	"encoding/binary"
	"sync"

	"github.com/cespare/xxhash/v2"
)

// View stamps: what the projector needs to know of a stored collection,
// floor or listings view before it writes a new one, without reading it.
//
// A render writes a view only when its content changed (PutCollection,
// PutFloor, PutListings), and PutListings needs the version it supersedes.
// Both used to come from reading the stored view, a value-log read with
// its checksum: at 10,000 collections x 100 tokens a step cycle's 6,924
// messages read 9,370 such views, a third of its 30,226 value reads. At
// 100,000 collections, inside the 3 GiB group, a step of 72,000 messages
// took 292 CPU-s with stamps against 321 without, 214 s against 235 to
// apply (docs/performance-log.md, 2026-11-27 13:08).
//
// A stamp is a view's version and a hash of the rest of its bytes, kept in
// memory for the views the store has committed or read since it opened. A
// view with no stamp (neither written nor read since Open, or beyond the
// bound) is read as before, and stamped.
//
// Stamps are held by the 64-bit hash of the view's key, and compare the
// rest by its 64-bit hash: two views whose keys, or whose contents, share
// a hash would keep the older view, odds of about 2^-64 per pair.
type viewStamp struct {
	version uint64
	sum     uint64
}

// maxViewStamps bounds the stamps a store keeps: about 40 MB of map at
// most, three views each of 333,000 collections. Past it, new views are
// not stamped (they are read, as before).
const maxViewStamps = 1 << 20

// viewStamps holds the stamps of committed views, by the hash of their
// key. Its methods are safe for concurrent use.
type viewStamps struct {
	mu sync.Mutex
	m  map[uint64]viewStamp
}

// get returns the stamp of the committed view whose key hashes to h.
func (s *viewStamps) get(h uint64) (viewStamp, bool) {
	s.mu.Lock()
	st, ok := s.m[h]
	s.mu.Unlock()
	return st, ok
}

// put records the stamp of a committed view read whole (viewStamp).
func (s *viewStamps) put(h uint64, st viewStamp) {
	s.mu.Lock()
	s.setLocked(h, st)
	s.mu.Unlock()
}

// commit records what a committed transaction wrote: a stamp for each
// view written, none for each deleted (ok false).
func (s *viewStamps) commit(pending map[uint64]pendingStamp) {
	if len(pending) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for h, p := range pending {
		if p.ok {
			s.setLocked(h, p.stamp)
		} else {
			delete(s.m, h)
		}
	}
}

// setLocked stamps the view whose key hashes to h, unless it has no stamp
// and the store holds maxViewStamps already. s.mu is held.
func (s *viewStamps) setLocked(h uint64, st viewStamp) {
	if s.m == nil {
		s.m = map[uint64]viewStamp{}
	}
	if _, had := s.m[h]; had || len(s.m) < maxViewStamps {
		s.m[h] = st
	}
}

// reset forgets every stamp (Reset dropped the views).
func (s *viewStamps) reset() {
	s.mu.Lock()
	s.m = nil
	s.mu.Unlock()
}

// pendingStamp is a view as a transaction left it: ok false when deleted.
type pendingStamp struct {
	stamp viewStamp
	ok    bool
}

// stampOf is v's stamp: its version (the first 8 bytes) and the hash of
// the rest.
func stampOf(v []byte) viewStamp {
	if len(v) < 8 {
		return viewStamp{sum: xxhash.Sum64(v)}
	}
	return viewStamp{version: binary.BigEndian.Uint64(v), sum: xxhash.Sum64(v[8:])}
}

// viewStamp returns the stamp of the view under k, whose hash is h, as
// this transaction sees it: its own write first, then the store's stamps,
// then the stored view itself (stored is then its bytes, else nil). ok is
// false when there is no view under k.
func (t *Tx) viewStamp(h uint64, k []byte) (st viewStamp, stored []byte, ok bool, err error) {
	if p, seen := t.stamps[h]; seen {
		return p.stamp, nil, p.ok, nil
	}
	if st, ok := t.s.stamps.get(h); ok {
		return st, nil, true, nil
	}
	// Not written by this transaction (t.stamps), so what it reads is
	// what was committed: its stamp holds whether this one commits or not.
	old, ok, err := t.getRaw(k)
	if err != nil || !ok {
		return viewStamp{}, nil, false, err
	}
	st = stampOf(old)
	t.s.stamps.put(h, st)
	return st, old, true, nil
}

// noteStamp records that this transaction left the view whose key hashes
// to h as p (p.ok false: deleted it); the store takes the stamps when the
// transaction commits.
func (t *Tx) noteStamp(h uint64, p pendingStamp) {
	if t.stamps == nil {
		t.stamps = map[uint64]pendingStamp{}
	}
	t.stamps[h] = p
}

package store

import (
	"hash/maphash"
	"sync/atomic"
)

// servedListings remembers which listing snapshots the store has served,
// so that PutListings keeps a superseded copy (o/l/, for
// Options.ListingsRetention) only of a snapshot that a cursor can name: a
// cursor is minted from a page the API served, and carries its version.
// Copying every superseded snapshot was a quarter of the value log written
// in the soak (5,000 collections, a cycle every 5 s: 51 MB/min of 348) and
// half of the store's live bytes (180 MB of superseded snapshots), almost
// all of them of collections nobody read in their 5 minutes.
//
// A slot per hash of a collection id holds the highest version served of
// the collections in it. Versions increase store-wide (NextVersion), so a
// snapshot served makes its slot at least its version: served never says
// no for a snapshot that was served. A collection sharing a slot with one
// read later may make it say yes for one that was not (a copy kept that
// need not be), never the reverse. Versions committed before the store
// opened count as served: a restart loses what this remembered, not the
// snapshots a client may be walking.
//
// A reader marks a snapshot after it has it, so one that first reads a
// collection's snapshot in the moment between the projector superseding it
// and the commit may find it gone on its next page: the API then walks the
// current snapshot, as when a walk outlives the retention (SPEC: a walk is
// not a consistent read).
type servedListings struct {
	seed   maphash.Seed
	before uint64 // versions at or below it were committed before Open
	slots  [servedSlots]atomic.Uint64
}

// servedSlots is the number of slots: 512 KiB, few collisions among the
// thousands of collections read within a retention.
const servedSlots = 1 << 16

func newServedListings(before uint64) *servedListings {
	return &servedListings{seed: maphash.MakeSeed(), before: before}
}

func (s *servedListings) slot(cid string) *atomic.Uint64 {
	return &s.slots[maphash.String(s.seed, cid)&(servedSlots-1)]
}

// mark records that cid's snapshot version v was served.
func (s *servedListings) mark(cid string, v uint64) {
	sl := s.slot(cid)
	for {
		cur := sl.Load()
		if cur >= v || sl.CompareAndSwap(cur, v) {
			return
		}
	}
}

// served reports whether cid's snapshot version v may have been served.
func (s *servedListings) served(cid string, v uint64) bool {
	return v <= s.before || s.slot(cid).Load() >= v
}

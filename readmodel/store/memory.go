package store

import (
	"context"
)

// OpenMemory returns a store held in memory. The projector's side of a
// store runs on it exactly as on Badger (Update, View and every Tx
// method, Positions, Due), writing the same keys and values: a test can
// apply the same messages to both and compare them key by key (Each),
// and a build can project in memory and write its result once. The
// read side that serves HTTP (Collection, Listings, pages, the feed,
// snapshots, GC) reads Badger files and is not available on it. Close
// releases it.
func OpenMemory(opts Options) *Store {
	opts = opts.withDefaults()
	mem := newMemEngine()
	s := &Store{kv: mem, opts: opts, cache: newCache(opts.CacheEntries, opts.CacheBytes),
		gcStop: make(chan struct{}), gcDone: make(chan struct{}), flights: make(map[string]*pageFlight),
		gather: newFeedGather()}
	close(s.gcDone) // no value log to collect
	txn := mem.begin(true)
	_ = txn.set(kSchema, []byte(schema)) // as Open records it: the stores compare key by key
	_ = txn.commit()
	s.served = newServedListings(0)
	return s
}

// Each calls fn with every key of the store and its value, in key order,
// as committed when it starts (in a memory store, with the feeds' open
// blocks as Badger would hold them: evgather.go); fn's slices are valid
// only during the call and its error stops the walk. Errors are Internal
// *readmodel.Error or fn's.
func (s *Store) Each(ctx context.Context, fn func(k, v []byte) error) error {
	txn := s.kv.begin(false)
	defer txn.discard()
	var held []memItem
	if s.gather != nil {
		held = s.gather.items(false)
	}
	// heldBefore calls fn with the held blocks' keys before k (all: nil).
	heldBefore := func(k []byte) error {
		for len(held) > 0 && (k == nil || held[0].k < string(k)) {
			if err := fn([]byte(held[0].k), held[0].v); err != nil {
				return err
			}
			held = held[1:]
		}
		return nil
	}
	err := txn.scan(nil, nil, true, func(k, v []byte) (bool, error) {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		if err := heldBefore(k); err != nil {
			return false, err
		}
		return true, fn(k, v)
	})
	if err == nil {
		err = heldBefore(nil)
	}
	return internal(err, "walk keys")
}

package store

// Sizes is how much a node's views take, for metrics.
type Sizes struct {
	LSMBytes      int64 // Badger's LSM tree (keys and small values) on disk
	ValueLogBytes int64 // Badger's value log on disk
	CacheEntries  int   // views, pages and resolved ids held in memory
	CacheBytes    int64 // approximate bytes of the in-memory cache
	GCRewrites    int64 // value-log files rewritten by garbage collection so far
	Compactions   int64 // Compact runs so far (compact.go)
	// SalesBytes is what the sales committed since Open take (keys and
	// values): the sales history is kept to its start (SPEC), so the
	// store grows by it by design.
	SalesBytes int64
}

// Sizes returns the current sizes; it is cheap (no scan) and safe for
// concurrent use. Badger refreshes its on-disk figures about once a minute.
func (s *Store) Sizes() Sizes {
	lsm, vlog := s.db.Size()
	entries, bytes := s.cache.stats()
	return Sizes{LSMBytes: lsm, ValueLogBytes: vlog, CacheEntries: entries, CacheBytes: bytes, GCRewrites: s.gcRuns.Load(), Compactions: s.compactions.Load(), SalesBytes: s.salesBytes.Load()}
}

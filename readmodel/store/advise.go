package store

// The value log's advice outside a rewrite: random (why: Open), but for
// the spans of ReadAhead. adviseValueLog does the work where the platform
// can (advise_linux.go) and nothing elsewhere.

// ReadAhead advises the value log for the kernel's read-ahead until the
// returned call ends the span, for a pass that reads back values in about
// the order they were written: the renders a cold start or a replay holds
// until its end read each collection's listing inputs, written in the
// stream's order, in the order the collections were first marked. Under
// the random advice each of those reads faults its own page in from disk
// once the page cache has evicted it (at 100,000 collections in a 3 GiB
// group the held renders spent most of their reading time so). Spans may
// overlap; the advice goes back to random when the last ends. Safe for
// concurrent use.
func (s *Store) ReadAhead() (end func()) {
	if s.db == nil { // memory: nothing is read from files
		return func() {}
	}
	s.readAheads.Add(1)
	s.adviseValueLog(adviseNormal)
	return func() {
		s.readAheads.Add(-1)
		s.adviseSettled()
	}
}

// adviseSettled advises the value log as it stays between passes that
// change it: random, or normal while a ReadAhead span is open. Each call
// also reaches the files Badger opened since the last.
func (s *Store) adviseSettled() {
	if s.readAheads.Load() > 0 {
		s.adviseValueLog(adviseNormal)
		return
	}
	s.adviseValueLog(adviseRandom)
}

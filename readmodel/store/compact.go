package store

import (
	"os"
	"strings"
	"time"
)

// Compaction of an idle store. The periodic value-log GC (gcLoop) rewrites
// a file only once Badger counts gcRatio of it garbage, and Badger counts a
// value as garbage only when a compaction drops its key's superseded
// version. With the few, large levels this store keeps (store.go), a
// version superseded in the base level can wait there for a long time, so
// most of the garbage stays uncounted: at 10,000 collections × 100 tokens,
// after a first cycle and three more, the stopped store took 897 MB for
// 571 MB of live keys and values, and the GC found nothing to rewrite.
// Merging the tree into one level (Badger's Flatten) drops every
// superseded version; rewriting the files then at least 30 % garbage took
// the same store to 568 MB (0.45 s for the merge, 8 s of rewrites,
// 2026-11-26).
const (
	// compactIdle is how long after the last large commit (compactBusy)
	// a store counts as idle: longer than the gaps inside a cycle,
	// shorter than the 2 minutes between cycles. The expiry sweep's
	// re-renders commit every few seconds but are small.
	compactIdle = 30 * time.Second
	compactBusy = 1 << 20
	// compactGrowth and compactMin: the value log must have grown by this
	// share, and by at least a file, since the last compaction (or since
	// the store was first idle after Open) before the next. The cost of a
	// compaction thus stays proportional to what was written, and a store
	// just built from empty (little garbage) is not compacted.
	compactGrowth = 20 // percent
	compactMin    = 64 << 20
)

// compactDue says whether the gc loop should compact at now: no commit of
// compactBusy bytes or more since compactIdle (lastBusy: the last such
// commit), and the value log (vlog bytes) has grown by compactGrowth % and
// compactMin over baseline, its size after the last compaction.
func compactDue(now, lastBusy time.Time, vlog, baseline int64) bool {
	if now.Sub(lastBusy) < compactIdle {
		return false
	}
	grown := vlog - baseline
	return grown >= compactMin && grown*100 >= compactGrowth*baseline
}

// Compact merges the LSM tree into one level, which drops every superseded
// version and so tells Badger which value-log entries are garbage, then
// rewrites value-log files at least gcRatio garbage until none is left or stop
// is closed (nil stop runs to the end), pausing after each so that the
// rewrites take about share of the time (see Options.GCShare; 1 never
// pauses). It returns how many files it rewrote. Writes may go on
// meanwhile (the merge holds back Badger's own compactions, so a long one
// can slow them); the store's gc loop runs it once the store has been idle
// for 30 s and its value log grew by 20 % since the last. Safe for concurrent use with reads
// and Update; not with Reset (it waits).
func (s *Store) Compact(stop <-chan struct{}, share float64) (int, error) {
	s.maintMu.Lock()
	defer s.maintMu.Unlock()
	if err := s.db.Flatten(1); err != nil {
		s.noteDamage(err)
		return 0, internal(err, "compact")
	}
	s.compactions.Add(1)
	return s.rewrite(stop, share, gcRatio, -1), nil
}

// compactGuarded is Compact for the gc loop: a panic reading a damaged
// file is damage, not a crash (see collectGuarded).
func (s *Store) compactGuarded() {
	defer func() {
		if r := recover(); r != nil {
			s.noteDamage(Recovered(r, "compaction"))
		}
	}()
	_, _ = s.Compact(s.gcStop, s.opts.GCShare)
}

// noteWrite records a commit of n bytes for compactDue.
func (s *Store) noteWrite(n int) {
	if n >= compactBusy {
		s.lastBusy.Store(time.Now().UnixNano())
	}
}

// maybeCompact compacts when compactDue says so; the first time the store
// is idle after Open it only takes the baseline (gc loop only).
func (s *Store) maybeCompact() {
	lastBusy := time.Unix(0, s.lastBusy.Load())
	if time.Since(lastBusy) < compactIdle {
		return
	}
	vlog := s.valueLogOnDisk()
	if s.compactBase == 0 {
		s.compactBase = max(vlog, 1)
		return
	}
	if !compactDue(time.Now(), lastBusy, vlog, s.compactBase) {
		return
	}
	s.compactGuarded()
	s.compactBase = max(s.valueLogOnDisk(), 1)
}

// valueLogOnDisk is the bytes of the store's value-log files now (Badger's
// own figure is refreshed once a minute).
func (s *Store) valueLogOnDisk() int64 {
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return 0
	}
	var n int64
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".vlog") {
			if fi, err := e.Info(); err == nil {
				n += fi.Size()
			}
		}
	}
	return n
}

package store

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Advice for the mapped value log (adviseValueLog).
const (
	adviseRandom = syscall.MADV_RANDOM
	adviseNormal = syscall.MADV_NORMAL
)

// adviseValueLog gives the kernel advice on every mapping of the store's
// value-log files (found in /proc/self/maps: Badger maps them and offers
// no hook) and returns how many it advised. The store keeps them advised
// random (why: Open) but for the span of a value-log rewrite
// (Store.rewrite). Errors leave the advice as it was.
func (s *Store) adviseValueLog(advice int) int {
	dir, err := filepath.Abs(s.dir)
	if err != nil {
		return 0
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return 0
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || !strings.HasSuffix(fields[5], ".vlog") || filepath.Dir(fields[5]) != dir {
			continue
		}
		lo, hi, ok := strings.Cut(fields[0], "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			continue
		}
		if _, _, e := syscall.Syscall(syscall.SYS_MADVISE, uintptr(start), uintptr(end-start), uintptr(advice)); e == 0 {
			n++
		}
	}
	return n
}

// restoreSyncEvery is how many bytes a restore writes between two
// syncWritten calls.
const restoreSyncEvery = 256 << 20

// syncWritten writes dirty pages back to disk. Badger writes its files
// through shared mappings; inside a memory cgroup the dirty pages of a
// restore of gigabytes count against the group, and the kernel then spends
// its time reclaiming (see snapshot.go): clean pages are cheap to drop.
func syncWritten() { syscall.Sync() }

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

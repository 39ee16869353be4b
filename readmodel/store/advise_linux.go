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

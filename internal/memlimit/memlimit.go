// Package memlimit finds the memory limit of the cgroup a process runs in,
// so that marketd can give the Go runtime a soft memory limit (GOMEMLIMIT)
// that fits the group. It imports the standard library only.
//
// Why: a memory cgroup counts the process's anonymous memory and the page
// cache it touches together. Badger's tables and value log are mapped
// files, working set at read time; left alone, Go's collector lets the
// heap double between collections and the page cache is what the kernel
// squeezes. A soft limit makes the collector run before the heap takes
// the room the maps need.
package memlimit

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Share is the part of a cgroup's limit that Auto gives the Go runtime
// while a node serves (one third: a node's budget is mostly for Badger's
// mapped files, which reads need in the page cache).
const Share = 3

// BuildShare is the part of a cgroup's limit that Auto gives the Go
// runtime while a node builds its views and serves no reads yet (one
// half): a first cycle holds far more in the heap than a served node.
const BuildShare = 2

// unlimited is what cgroup v1 reports for a group without a limit (the
// largest page-aligned int64), or more.
const unlimited = int64(1) << 60

// Cgroup is the memory limit found for a process and where.
type Cgroup struct {
	Limit int64  // bytes; 0 when no group on the path has a limit
	Dir   string // the group directory whose limit is Limit
	V1    bool   // found on the cgroup v1 memory hierarchy
}

// Find returns the smallest memory limit along the process's cgroup path,
// read from the files under root (normally "/", so /proc/self/cgroup and
// /sys/fs/cgroup). On the unified hierarchy (v2) it reads memory.max, on
// the v1 memory hierarchy memory.limit_in_bytes, of the process's group and
// each of its ancestors visible under root. A process outside any memory
// group, or a host without cgroups, gives a zero Cgroup and no error; an
// unreadable or malformed file is an error.
func Find(root string) (Cgroup, error) {
	self, err := os.ReadFile(filepath.Join(root, "proc/self/cgroup"))
	if errors.Is(err, os.ErrNotExist) {
		return Cgroup{}, nil
	}
	if err != nil {
		return Cgroup{}, err
	}
	unified, memV1 := SelfCgroup(string(self))
	// A v1 memory controller wins: where it is mounted, the unified
	// hierarchy has no memory controller (a hybrid host).
	if memV1 != "" {
		return walk(filepath.Join(root, "sys/fs/cgroup/memory"), memV1, "memory.limit_in_bytes", true)
	}
	if unified != "" {
		return walk(filepath.Join(root, "sys/fs/cgroup"), unified, "memory.max", false)
	}
	return Cgroup{}, nil
}

// SelfCgroup returns a process's cgroup paths from its /proc/PID/cgroup
// text: the unified (v2) path ("" if none) and the v1 memory path ("" if
// none).
func SelfCgroup(text string) (unified, memV1 string) {
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		// hierarchy-ID:controller-list:cgroup-path
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			unified = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c == "memory" {
				memV1 = parts[2]
			}
		}
	}
	return unified, memV1
}

// walk reads file in the group at path below mount and in each ancestor up
// to mount, keeping the smallest limit. A group directory that is not
// visible (a cgroup namespace shows the path from outside) is skipped.
func walk(mount, path, file string, v1 bool) (Cgroup, error) {
	best := Cgroup{V1: v1}
	dir := filepath.Join(mount, filepath.Clean("/"+path))
	for {
		b, err := os.ReadFile(filepath.Join(dir, file))
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			return Cgroup{}, err
		default:
			n, err := parseLimit(b)
			if err != nil {
				return Cgroup{}, err
			}
			if n > 0 && (best.Limit == 0 || n < best.Limit) {
				best.Limit, best.Dir = n, dir
			}
		}
		if dir == mount || len(dir) < len(mount) {
			break
		}
		dir = filepath.Dir(dir)
	}
	return best, nil
}

// parseLimit reads a limit file: a byte count, or "max" (v2: none).
func parseLimit(b []byte) (int64, error) {
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return 0, nil
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, errors.New("memlimit: malformed cgroup limit " + strconv.Quote(s))
	}
	if n >= uint64(unlimited) {
		return 0, nil
	}
	return int64(n), nil
}

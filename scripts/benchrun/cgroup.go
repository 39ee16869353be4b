package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/marketd/marketd/internal/memlimit"
)

// A memory cgroup puts a bound on a node the way a deployment would: the
// limit covers the process's anonymous memory and the page cache it
// touches (Badger's mapped files, the embedded NATS server's store). The
// harness tries, in order:
//
//  1. cgroup v2: a child of the harness's own cgroup on the unified
//     hierarchy, when the memory controller is (or can be) enabled there;
//  2. systemd-run --scope -p MemoryMax=...: when PID 1 is systemd;
//  3. cgroup v1: a child of the harness's own group on the memory
//     hierarchy (memory.limit_in_bytes), as on hosts booted without
//     systemd that mount cgroup v1 controllers.
//
// Each is probed before the node starts; when none works the node runs
// uncapped and the report says why.

// Cgroup mechanisms, as the report names them.
const (
	mechV2      = "cgroup v2"
	mechSystemd = "systemd-run --scope"
	mechV1      = "cgroup v1"
)

// memCgroup is one memory cgroup the harness created (or a systemd scope
// it will create when the process starts).
type memCgroup struct {
	Mechanism string
	Dir       string // the group's directory (for systemd: learnt after start)
	Limit     int64
	v1        bool
	unit      string // systemd scope unit name
	created   bool   // the harness made Dir and removes it
	tried     string // why the mechanisms tried before this one were not used
}

// CgroupRun is what the report keeps of a node's memory cgroup.
type CgroupRun struct {
	Mechanism string // mechV2, mechSystemd, mechV1; "" when uncapped
	Dir       string
	Limit     int64
	// Why is set when the node ran uncapped although a limit was asked.
	Why string
	// Samples at points of the run (ready, after reads, after cycles, end).
	AtReady, AfterReads, End CgroupStat
	// Peak is the group's own high-water mark (memory.peak or
	// memory.max_usage_in_bytes; 0 when the kernel keeps none), and
	// SampledPeak the highest usage the harness saw.
	Peak, SampledPeak int64
}

// CgroupStat is one reading of a memory cgroup.
type CgroupStat struct {
	Usage     int64 // memory.current / memory.usage_in_bytes
	Anon      int64 // memory.stat anon (v2) / rss (v1)
	File      int64 // memory.stat file (v2) / cache (v1)
	MajFaults int64 // memory.stat pgmajfault (v1: total_pgmajfault)
	OOMKills  int64 // memory.events oom_kill / memory.oom_control oom_kill
	LimitHits int64 // memory.events max / memory.failcnt
}

// parseSize reads a memory limit: a byte count or a number with K, M, G
// or T (binary units), as systemd and the BENCH_MEMCAP setting write it.
// "", "0", "none" and "off" mean no limit (0).
func parseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	switch strings.ToLower(s) {
	case "", "0", "none", "off":
		return 0, nil
	}
	mult := int64(1)
	unit := strings.ToUpper(strings.TrimSuffix(strings.TrimSuffix(s, "B"), "i"))
	for i, u := range []string{"K", "M", "G", "T"} {
		if num, ok := strings.CutSuffix(unit, u); ok {
			unit, mult = num, int64(1)<<(10*(i+1))
			break
		}
	}
	f, err := strconv.ParseFloat(unit, 64)
	if err != nil || f <= 0 {
		return 0, fmt.Errorf("bad memory size %q (want e.g. 3G, 512M, 0 for none)", s)
	}
	return int64(f * float64(mult)), nil
}

// fmtSize writes a limit as the report names it (3 GiB).
func fmtSize(b int64) string {
	switch {
	case b >= 1<<30 && b%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", b>>30)
	case b >= 1<<20:
		return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20))
	default:
		return fmt.Sprintf("%d bytes", b)
	}
}

// cgroupMounts returns the mount points of the cgroup2 hierarchy and of
// the v1 memory controller from a /proc/self/mountinfo text ("" if absent).
func cgroupMounts(text string) (v2, memV1 string) {
	for _, line := range strings.Split(text, "\n") {
		// id parent major:minor root mountpoint opts [optional...] - fstype source superopts
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(g) < 1 {
			continue
		}
		switch g[0] {
		case "cgroup2":
			if v2 == "" {
				v2 = f[4]
			}
		case "cgroup":
			if len(g) >= 3 {
				for _, o := range strings.Split(g[2], ",") {
					if o == "memory" && memV1 == "" {
						memV1 = f[4]
					}
				}
			}
		}
	}
	return v2, memV1
}

// newMemCgroup makes a memory cgroup of limit bytes named name, trying the
// mechanisms in order. It returns the reasons each one failed when none
// works.
func newMemCgroup(ctx context.Context, name string, limit int64) (*memCgroup, error) {
	selfText, _ := os.ReadFile("/proc/self/cgroup")
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	unified, memPath := memlimit.SelfCgroup(string(selfText))
	v2Mount, v1Mount := cgroupMounts(string(mounts))
	var why []string

	// 1. cgroup v2.
	if v2Mount != "" && unified != "" {
		g, err := makeV2(filepath.Join(v2Mount, unified), name, limit)
		if err == nil {
			g.tried = strings.Join(why, "; ")
			return g, nil
		}
		why = append(why, "cgroup v2: "+err.Error())
	} else {
		why = append(why, "cgroup v2: no unified hierarchy mounted for this process")
	}

	// 2. systemd-run --scope.
	if _, err := os.Stat("/run/systemd/system"); err != nil {
		why = append(why, "systemd-run: PID 1 is not systemd (no /run/systemd/system)")
	} else if out, _, err := runCmd(ctx, 20*time.Second, "", "systemd-run", "--scope", "--quiet", "-p", "MemoryMax=1G", "true"); err != nil {
		why = append(why, "systemd-run: "+strings.TrimSpace(firstLine(out+" "+err.Error())))
	} else {
		return &memCgroup{Mechanism: mechSystemd, Limit: limit, unit: name + ".scope", tried: strings.Join(why, "; ")}, nil
	}

	// 3. cgroup v1 memory controller.
	if v1Mount != "" && memPath != "" {
		g, err := makeV1(filepath.Join(v1Mount, memPath), name, limit)
		if err == nil {
			g.tried = strings.Join(why, "; ")
			return g, nil
		}
		why = append(why, "cgroup v1: "+err.Error())
	} else {
		why = append(why, "cgroup v1: no memory controller mounted")
	}
	return nil, errors.New(strings.Join(why, "; "))
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func writeFile(path, v string) error { return os.WriteFile(path, []byte(v), 0o644) }

// makeV2 creates parent/name with memory.max = limit. The memory
// controller must be enabled in parent's subtree_control; the harness
// tries to enable it, which the kernel refuses while parent itself holds
// processes (cgroup v2's no-internal-process rule), except at the root.
func makeV2(parent, name string, limit int64) (*memCgroup, error) {
	ctrl, err := os.ReadFile(filepath.Join(parent, "cgroup.controllers"))
	if err != nil {
		return nil, err
	}
	if !strings.Contains(" "+strings.TrimSpace(string(ctrl))+" ", " memory ") {
		return nil, fmt.Errorf("the memory controller is not available in %s (controllers: %q)", parent, strings.TrimSpace(string(ctrl)))
	}
	sub, _ := os.ReadFile(filepath.Join(parent, "cgroup.subtree_control"))
	if !strings.Contains(" "+string(sub)+" ", " memory") {
		if err := writeFile(filepath.Join(parent, "cgroup.subtree_control"), "+memory"); err != nil {
			return nil, fmt.Errorf("enable memory in %s: %w", parent, err)
		}
	}
	dir := filepath.Join(parent, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	g := &memCgroup{Mechanism: mechV2, Dir: dir, Limit: limit, created: true}
	if err := writeFile(filepath.Join(dir, "memory.max"), strconv.FormatInt(limit, 10)); err != nil {
		g.remove()
		return nil, fmt.Errorf("memory.max: %w", err)
	}
	_ = writeFile(filepath.Join(dir, "memory.swap.max"), "0") // absent without swap accounting
	return g, nil
}

// makeV1 creates parent/name with memory.limit_in_bytes = limit (and the
// same memory+swap limit where swap is accounted).
func makeV1(parent, name string, limit int64) (*memCgroup, error) {
	dir := filepath.Join(parent, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	g := &memCgroup{Mechanism: mechV1, Dir: dir, Limit: limit, v1: true, created: true}
	if err := writeFile(filepath.Join(dir, "memory.limit_in_bytes"), strconv.FormatInt(limit, 10)); err != nil {
		g.remove()
		return nil, fmt.Errorf("memory.limit_in_bytes: %w", err)
	}
	_ = writeFile(filepath.Join(dir, "memory.memsw.limit_in_bytes"), strconv.FormatInt(limit, 10))
	return g, nil
}

// wrap returns argv to be started inside the group: a shell that moves
// itself into the group and execs argv (the pid stays the program's), or
// systemd-run, which runs argv in a new scope under its own pid.
func (g *memCgroup) wrap(argv []string) []string {
	if g == nil {
		return argv
	}
	if g.Mechanism == mechSystemd {
		return append([]string{"systemd-run", "--scope", "--quiet", "--unit", g.unit,
			"-p", "MemoryMax=" + strconv.FormatInt(g.Limit, 10), "-p", "MemorySwapMax=0"}, argv...)
	}
	return append([]string{"sh", "-c", `echo $$ > "$0" && exec "$@"`, filepath.Join(g.Dir, "cgroup.procs")}, argv...)
}

// learn finds the group's directory from the started process's
// /proc/PID/cgroup (systemd creates the scope; the others know it).
func (g *memCgroup) learn(pid int) error {
	if g == nil || g.Dir != "" {
		return nil
	}
	text, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return err
	}
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	unified, memPath := memlimit.SelfCgroup(string(text))
	v2Mount, v1Mount := cgroupMounts(string(mounts))
	switch {
	case v2Mount != "" && unified != "" && fileExists(filepath.Join(v2Mount, unified, "memory.max")):
		g.Dir = filepath.Join(v2Mount, unified)
	case v1Mount != "" && memPath != "":
		g.Dir, g.v1 = filepath.Join(v1Mount, memPath), true
	default:
		return errors.New("cannot find the scope's memory cgroup")
	}
	return nil
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// remove deletes a group the harness created (its processes must have
// exited); systemd removes its scopes itself.
func (g *memCgroup) remove() {
	if g == nil || !g.created {
		return
	}
	for i := 0; i < 20; i++ {
		if err := os.Remove(g.Dir); err == nil || os.IsNotExist(err) {
			return
		}
		time.Sleep(100 * time.Millisecond) // the last task's exit is accounted asynchronously
	}
}

// stat reads the group's usage, memory.stat and events.
func (g *memCgroup) stat() (CgroupStat, error) {
	if g == nil || g.Dir == "" {
		return CgroupStat{}, errors.New("no cgroup")
	}
	var c CgroupStat
	read := func(name string) (string, error) {
		b, err := os.ReadFile(filepath.Join(g.Dir, name))
		return string(b), err
	}
	usageFile, statFile := "memory.current", "memory.stat"
	if g.v1 {
		usageFile = "memory.usage_in_bytes"
	}
	u, err := read(usageFile)
	if err != nil {
		return c, err
	}
	c.Usage, _ = strconv.ParseInt(strings.TrimSpace(u), 10, 64)
	st, err := read(statFile)
	if err != nil {
		return c, err
	}
	kv := parseKV(st)
	if g.v1 {
		c.Anon, c.File, c.MajFaults = kv["rss"], kv["cache"], kv["total_pgmajfault"]
		if oc, err := read("memory.oom_control"); err == nil {
			c.OOMKills = parseKV(oc)["oom_kill"]
		}
		if f, err := read("memory.failcnt"); err == nil {
			c.LimitHits, _ = strconv.ParseInt(strings.TrimSpace(f), 10, 64)
		}
	} else {
		c.Anon, c.File, c.MajFaults = kv["anon"], kv["file"], kv["pgmajfault"]
		if ev, err := read("memory.events"); err == nil {
			e := parseKV(ev)
			c.OOMKills, c.LimitHits = e["oom_kill"], e["max"]
		}
	}
	return c, nil
}

// peak is the group's own high-water mark (0 when the kernel keeps none).
func (g *memCgroup) peak() int64 {
	if g == nil || g.Dir == "" {
		return 0
	}
	name := "memory.peak"
	if g.v1 {
		name = "memory.max_usage_in_bytes"
	}
	b, err := os.ReadFile(filepath.Join(g.Dir, name))
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n
}

// parseKV reads "key value" lines (memory.stat, memory.events).
func parseKV(text string) map[string]int64 {
	m := map[string]int64{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 {
			continue
		}
		if n, err := strconv.ParseInt(f[1], 10, 64); err == nil {
			m[f[0]] = n
		}
	}
	return m
}

// readMajFaults returns the major page faults of pid (field 12 of
// /proc/PID/stat): pages it had to wait for the disk to bring in.
func readMajFaults(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStatMajflt(string(b))
}

// parseStatMajflt returns majflt (field 12) of a /proc/PID/stat line.
func parseStatMajflt(s string) (int64, error) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, errors.New("stat: no command field")
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); majflt is field 12 → f[9].
	if len(f) < 10 {
		return 0, errors.New("stat: too few fields")
	}
	return strconv.ParseInt(f[9], 10, 64)
}

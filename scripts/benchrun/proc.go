package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Proc is a child process the harness started (marketd or benchref),
// optionally pinned with taskset, its output going to a log file.
type Proc struct {
	Name string
	cmd  *exec.Cmd
	log  *os.File
	done chan struct{}
	err  error
}

// startProc starts argv pinned to core ("" = unpinned), appending its
// stdout and stderr to logPath.
func startProc(name, core, logPath string, argv ...string) (*Proc, error) {
	if core != "" {
		argv = append([]string{"taskset", "-c", core}, argv...)
	}
	lf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = lf, lf
	if err := cmd.Start(); err != nil {
		lf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Proc{Name: name, cmd: cmd, log: lf, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		lf.Close()
		close(p.done)
	}()
	return p, nil
}

// Pid is the process id (taskset execs, so it is the program's own).
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Exited reports whether the process has ended.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Stop sends SIGTERM, waits up to grace, then SIGKILLs. It returns how long
// the process took to exit and its exit error (nil on a clean exit).
func (p *Proc) Stop(grace time.Duration) (time.Duration, error) {
	start := time.Now()
	if p.Exited() {
		return 0, p.err
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return time.Since(start), p.err
	case <-time.After(grace):
	}
	_ = p.cmd.Process.Kill()
	<-p.done
	return time.Since(start), fmt.Errorf("%s did not exit within %s of SIGTERM; killed", p.Name, grace)
}

// Mem is a process's resident memory from /proc/PID/status, in bytes.
type Mem struct {
	RSS  int64 // VmRSS now
	HWM  int64 // VmHWM: peak resident set since start
	Anon int64 // RssAnon now: heap and other anonymous memory (0 if the kernel does not say)
	File int64 // RssFile now: file-backed pages, e.g. Badger's memory-mapped files (reclaimable)
}

// readMem reads VmRSS and VmHWM of pid.
func readMem(pid int) (Mem, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Mem{}, err
	}
	return parseStatus(string(b))
}

// parseStatus extracts VmRSS and VmHWM (kB) from a /proc/PID/status text.
func parseStatus(s string) (Mem, error) {
	var m Mem
	var seen int
	for _, line := range strings.Split(s, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || (k != "VmRSS" && k != "VmHWM" && k != "RssAnon" && k != "RssFile") {
			continue
		}
		f := strings.Fields(v)
		if len(f) != 2 || f[1] != "kB" {
			return m, fmt.Errorf("bad %s line %q", k, line)
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return m, fmt.Errorf("bad %s line %q", k, line)
		}
		switch k {
		case "VmRSS":
			m.RSS = n << 10
			seen++
		case "VmHWM":
			m.HWM = n << 10
			seen++
		case "RssAnon":
			m.Anon = n << 10
		case "RssFile":
			m.File = n << 10
		}
	}
	if seen != 2 {
		return m, errors.New("status lacks VmRSS or VmHWM")
	}
	return m, nil
}

// clockTicks is the kernel's USER_HZ (getconf CLK_TCK), 100 if unknown.
var clockTicks = sync.OnceValue(func() float64 {
	out, err := exec.Command("getconf", "CLK_TCK").Output()
	if err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(out))); err == nil && n > 0 {
			return float64(n)
		}
	}
	return 100
})

// readCPU returns the user+system CPU time pid has used (all threads).
func readCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	ticks, err := parseStatTicks(string(b))
	if err != nil {
		return 0, err
	}
	return time.Duration(float64(ticks) / clockTicks() * float64(time.Second)), nil
}

// parseStatTicks returns utime+stime (fields 14 and 15) of a /proc/PID/stat
// line. The command name (field 2) may hold spaces and parentheses, so
// fields are counted after its last ')'.
func parseStatTicks(s string) (int64, error) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, errors.New("stat: no command field")
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); utime is field 14 → f[11], stime f[12].
	if len(f) < 13 {
		return 0, errors.New("stat: too few fields")
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, errors.New("stat: bad utime/stime")
	}
	return u + st, nil
}

// memSampler polls a process's RSS (and its memory cgroup's usage, when it
// has one) until stopped and keeps the maxima it saw (VmHWM is the
// kernel's exact peak of RSS; anonymous memory and the group's usage have
// no such mark in every kernel, so their peaks are sampled).
type memSampler struct {
	mu      sync.Mutex
	max     int64
	maxAnon int64
	maxCg   int64
	last    Mem
	stop    chan struct{}
	done    chan struct{}
}

func sampleMem(pid int, every time.Duration, g *memCgroup) *memSampler {
	s := &memSampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			if m, err := readMem(pid); err == nil {
				s.mu.Lock()
				s.last = m
				s.max, s.maxAnon = max(s.max, m.RSS), max(s.maxAnon, m.Anon)
				s.mu.Unlock()
			}
			if g != nil {
				if c, err := g.stat(); err == nil {
					s.mu.Lock()
					s.maxCg = max(s.maxCg, c.Usage)
					s.mu.Unlock()
				}
			}
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// Last is the latest sample (VmHWM included).
func (s *memSampler) Last() Mem { s.mu.Lock(); defer s.mu.Unlock(); return s.last }

// MaxAnon is the highest anonymous RSS (RssAnon) sampled.
func (s *memSampler) MaxAnon() int64 { s.mu.Lock(); defer s.mu.Unlock(); return s.maxAnon }

// MaxCgroup is the highest usage of the process's memory cgroup sampled
// (0 without one).
func (s *memSampler) MaxCgroup() int64 { s.mu.Lock(); defer s.mu.Unlock(); return s.maxCg }

// Stop ends sampling; it may be called more than once.
func (s *memSampler) Stop() {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	<-s.done
}

// freePort returns a loopback address with a port free right now.
func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// runCmd runs argv with a timeout, returning combined output.
func runCmd(ctx context.Context, timeout time.Duration, dir string, argv ...string) (string, time.Duration, error) {
	out, d, _, err := runCmdRSS(ctx, timeout, dir, argv...)
	return out, d, err
}

// runCmdRSS is runCmd that also returns the peak resident set of the
// process (its rusage ru_maxrss; 0 when unknown).
func runCmdRSS(ctx context.Context, timeout time.Duration, dir string, argv ...string) (string, time.Duration, int64, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	out, err := cmd.CombinedOutput()
	d := time.Since(start)
	if ctx.Err() == context.DeadlineExceeded {
		err = fmt.Errorf("%s: timed out after %s", argv[0], timeout)
	}
	var peak int64
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			peak = ru.Maxrss << 10 // kilobytes on Linux
		}
	}
	return string(out), d, peak, err
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// machineInfo describes the host for the report header.
func machineInfo(ctx context.Context) map[string]string {
	info := map[string]string{"nproc": "?", "cpu": "?", "memory": "?", "go": "?", "kernel": "?", "load": "?"}
	// nproc --all: this process runs pinned to one core, plain nproc would say 1.
	if out, _, err := runCmd(ctx, 10*time.Second, "", "nproc", "--all"); err == nil {
		info["nproc"] = strings.TrimSpace(out)
	}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				info["cpu"] = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && k == "MemTotal" {
				if f := strings.Fields(v); len(f) == 2 {
					if n, err := strconv.ParseInt(f[0], 10, 64); err == nil {
						info["memory"] = fmt.Sprintf("%.1f GiB", float64(n)/(1<<20))
					}
				}
			}
		}
	}
	if out, _, err := runCmd(ctx, 30*time.Second, "", "go", "version"); err == nil {
		info["go"] = strings.TrimSpace(out)
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		info["kernel"] = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		info["load"] = strings.Join(strings.Fields(string(b))[:3], " ")
	}
	if out, _, err := runCmd(ctx, 10*time.Second, "", "wrk", "-v"); out != "" || err == nil {
		info["wrk"] = strings.TrimSpace(strings.SplitN(out, "\n", 2)[0])
	}
	return info
}

// quietCores is the CPU use (cores, averaged over a second) below which
// settle counts marketd as quiet, and quietFor how many such seconds in a
// row it waits for.
const (
	quietCores = 0.15
	quietFor   = 3
)

// settle waits, up to bound, until process pid has used less than
// quietCores for quietFor consecutive seconds. It returns how long it
// waited and whether the process got quiet within the bound.
func settle(ctx context.Context, pid int, bound time.Duration) (time.Duration, bool) {
	start := time.Now()
	prev, err := readCPU(pid)
	if err != nil {
		return 0, false
	}
	quiet := 0
	for time.Since(start) < bound {
		select {
		case <-ctx.Done():
			return time.Since(start), false
		case <-time.After(time.Second):
		}
		cur, err := readCPU(pid)
		if err != nil {
			return time.Since(start), false
		}
		if quiet = quietStep(quiet, cur-prev, time.Second); quiet >= quietFor {
			return time.Since(start), true
		}
		prev = cur
	}
	return time.Since(start), false
}

// quietStep is settle's counter: quiet seconds in a row after a sample of
// cpu used over wall.
func quietStep(quiet int, cpu, wall time.Duration) int {
	if cpu.Seconds() < quietCores*wall.Seconds() {
		return quiet + 1
	}
	return 0
}

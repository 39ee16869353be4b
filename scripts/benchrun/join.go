package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// JoinRun is a new `marketd serve` node joining the large node's streams:
// it starts on an empty data dir against the large node's NATS server and
// is ready once its projector has caught up with the streams.
type JoinRun struct {
	NatsURL string
	Ready   time.Duration
	ReadyOK bool
	CPU     time.Duration
	PeakRSS int64
	Cgroup  *CgroupRun // its own group of the same limit, when available
	Store   DiskUsage  // its view store once ready
	// Proxy is set when no serve node could be started and the replay of
	// the whole stream stands in for it.
	Proxy string
	Err   string
	// The views snapshot the large node published (POST /admin/snapshot)
	// just before the serve node started, which the serve node restores
	// (--join snapshot, its default) before it applies the streams after
	// it. SnapshotErr says why there was none: the node then applies the
	// streams from their start.
	Snapshot    *SnapshotRun
	SnapshotErr string
	// Restored: what the joining node's log says of its restore.
	Restored    bool
	RestoreTook time.Duration
}

// SnapshotRun is one POST /admin/snapshot.
type SnapshotRun struct {
	Took  time.Duration // the request, publish included
	Bytes int64         // the snapshot as stored
}

// publishSnapshot asks the node at admin to publish its views snapshot.
func publishSnapshot(ctx context.Context, admin string, bound time.Duration) (*SnapshotRun, error) {
	start := time.Now()
	code, body, err := post(ctx, admin+"/admin/snapshot", bound)
	if err != nil {
		return nil, err
	}
	if code != 200 {
		return nil, fmt.Errorf("POST /admin/snapshot: %d %s", code, strings.TrimSpace(string(body)))
	}
	var got struct {
		Bytes int64 `json:"bytes"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		return nil, fmt.Errorf("POST /admin/snapshot: %v", err)
	}
	return &SnapshotRun{Took: time.Since(start), Bytes: got.Bytes}, nil
}

// restoreLine finds the joining node's "views restored" log line and the
// restore's duration in it.
func restoreLine(logPath string) (bool, time.Duration) {
	b, err := os.ReadFile(logPath)
	if err != nil {
		return false, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.Contains(line, "views restored from the tier's snapshot") {
			continue
		}
		var l struct {
			TookMS int64 `json:"took_ms"`
		}
		_ = json.Unmarshal([]byte(line), &l)
		return true, time.Duration(l.TookMS) * time.Millisecond
	}
	return false, 0
}

// listenPorts returns the TCP ports pid listens on, from its socket
// descriptors and /proc/PID/net/tcp{,6}.
func listenPorts(pid int) ([]int, error) {
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return nil, err
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		l, err := os.Readlink(filepath.Join(fmt.Sprintf("/proc/%d/fd", pid), fd.Name()))
		if err != nil {
			continue
		}
		if in, ok := strings.CutPrefix(l, "socket:["); ok {
			inodes[strings.TrimSuffix(in, "]")] = true
		}
	}
	var ports []int
	for _, f := range []string{"tcp", "tcp6"} {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, f))
		if err != nil {
			continue
		}
		ports = append(ports, parseListen(string(b), inodes)...)
	}
	return ports, nil
}

// parseListen returns the local ports of the LISTEN sockets of a
// /proc/net/tcp text whose inode is in inodes.
func parseListen(text string, inodes map[string]bool) []int {
	var ports []int
	for i, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if i == 0 || len(f) < 10 || f[3] != "0A" || !inodes[f[9]] {
			continue
		}
		_, portHex, ok := strings.Cut(f[1], ":")
		if !ok {
			continue
		}
		b, err := hex.DecodeString(portHex)
		if err != nil || len(b) != 2 {
			continue
		}
		ports = append(ports, int(b[0])<<8|int(b[1]))
	}
	return ports
}

// natsPort finds the client port of the NATS server a `marketd all`
// embeds: `all` has no setting for it (the server listens on a free
// loopback port), so it is the one listening port of the process that is
// none of the known HTTP addresses.
func natsPort(pid int, known ...string) (string, error) {
	ports, err := listenPorts(pid)
	if err != nil {
		return "", err
	}
	skip := map[int]bool{}
	for _, a := range known {
		if _, p, err := net.SplitHostPort(strings.TrimPrefix(a, "http://")); err == nil {
			if n, err := strconv.Atoi(p); err == nil {
				skip[n] = true
			}
		}
	}
	var left []int
	for _, p := range ports {
		if !skip[p] {
			left = append(left, p)
		}
	}
	if len(left) != 1 {
		return "", fmt.Errorf("expected one listening port besides %v, found %v", known, left)
	}
	return "nats://127.0.0.1:" + strconv.Itoa(left[0]), nil
}

// join starts `marketd serve` on an empty data dir against n's NATS
// server and times it to /readyz.
func (h *harness) join(ctx context.Context, n *node, s *SizeRun) *JoinRun {
	j := &JoinRun{}
	url, err := natsPort(n.p.Pid(), n.api, n.admin, n.simAddr)
	if err != nil {
		j.Err = "no NATS URL for a serve node: " + err.Error()
		j.Proxy = "replay"
		h.note("%s: %s; the replay of the whole stream stands in for a joining node", s.Label, j.Err)
		return j
	}
	j.NatsURL = url
	// The tier's views snapshot, as a tier's nodes publish it on their
	// schedule (--snapshot-every): published now so that the joining
	// node finds one of this market.
	h.logf("%s: the node publishes its views snapshot", s.Label)
	if j.Snapshot, err = publishSnapshot(ctx, n.admin, h.bound(10*time.Minute, 12*time.Minute)); err != nil {
		j.SnapshotErr = err.Error()
		h.note("%s: no views snapshot for the joining node: %v", s.Label, err)
	} else {
		h.logf("%s: views snapshot published in %s, %s", s.Label, fmtDur(j.Snapshot.Took), mib(j.Snapshot.Bytes))
	}
	dir := s.DataDir + "-join"
	_ = os.MkdirAll(dir, 0o755)
	addrs := make([]string, 2)
	for i := range addrs {
		if addrs[i], err = freePort(); err != nil {
			j.Err = err.Error()
			return j
		}
	}
	args := []string{"taskset", "-c", h.allCores(), h.bin("marketd"), "serve", "--nats", url,
		"--data-dir", dir, "--http-addr", addrs[0], "--admin-addr", addrs[1],
		"--rate-list", "1000000000", "--rate-item", "1000000000",
		"--cursor-key", "bench-cursor-key-0123456789abcdef", "--log-format", "json"}
	args = append(args, strings.Fields(h.o.ExtraArgs)...)
	var g *memCgroup
	if h.o.MemCap > 0 {
		if g, err = newMemCgroup(ctx, "marketd-bench-join-"+strconv.Itoa(os.Getpid()), h.o.MemCap); err == nil {
			args = g.wrap(args)
			j.Cgroup = &CgroupRun{Mechanism: g.Mechanism, Dir: g.Dir, Limit: g.Limit, Why: g.tried}
		}
	}
	defer g.remove()
	bound := h.bound(h.o.JoinTimeout, 4*time.Minute)
	h.logf("%s: a new serve node joins %s (bound %s)", s.Label, url, bound)
	p, err := startProc("marketd serve (joining)", "", dir+".log", args...)
	if err != nil {
		j.Err = err.Error()
		return j
	}
	if g != nil {
		if err := g.learn(p.Pid()); err == nil {
			j.Cgroup.Dir = g.Dir
		}
	}
	mem := sampleMem(p.Pid(), 250*time.Millisecond, g)
	cpu0, _ := readCPU(p.Pid())
	j.Ready, err = waitReady(ctx, "http://"+addrs[1], p, bound)
	cpu1, _ := readCPU(p.Pid())
	j.CPU = cpu1 - cpu0
	if m, e := readMem(p.Pid()); e == nil {
		j.PeakRSS = m.HWM
	}
	if j.Cgroup != nil {
		j.Cgroup.End, _ = g.stat()
		j.Cgroup.Peak, j.Cgroup.SampledPeak = g.peak(), mem.MaxCgroup()
	}
	mem.Stop()
	if err != nil {
		j.Err = fmt.Sprintf("serve node: %v (log %s.log)", err, dir)
	} else {
		j.ReadyOK = true
	}
	if _, err := p.Stop(30 * time.Second); err != nil {
		h.note("%s: joining serve node: %v", s.Label, err)
	}
	j.Restored, j.RestoreTook = restoreLine(dir + ".log")
	j.Store, _ = diskUsage(filepath.Join(dir, "badger"))
	if !h.o.Keep {
		os.RemoveAll(dir)
	}
	h.logf("%s: serve node ready=%v after %s (CPU %s), peak RSS %s", s.Label, j.ReadyOK, fmtDur(j.Ready), fmtDur(j.CPU), mib(j.PeakRSS))
	return j
}

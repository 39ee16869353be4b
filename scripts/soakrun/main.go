// Command soakrun is the soak of `scripts/soak DURATION` (`make soak`): it
// starts `marketd all` on a medium simulated market that moves a tick and
// is ingested (one projected cycle) every few seconds, drives it with
// wrk (several hundred connections, a Lua script mixing every endpoint over
// real ids), samples the node's RSS (/proc), Go heap and goroutines (the
// admin listener's /metrics) every --sample, and at the end:
//
//   - fails if any response was not 2xx or any socket failed;
//   - fits a line to RSS and heap after --warmup and states the slopes
//     (MB/min), failing when RSS grows faster than --max-slope;
//   - stops the node, digests its views at one instant, replays a copy of
//     its data dir from the streams, digests that at the same instant and
//     fails unless the two digests are equal;
//   - writes samples.csv, memory.svg (a line chart it draws itself) and
//     report.md under --out.
//
// It uses only the standard library.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

type options struct {
	bin          string
	out          string
	duration     time.Duration
	warmup       time.Duration
	sample       time.Duration
	collections  int
	tokens       int
	connections  int
	threads      int
	tick         time.Duration
	maxSlope     float64
	readyWait    time.Duration
	extra        string
	feedEvents   int
	marketEvents int
}

func main() {
	var o options
	flag.StringVar(&o.bin, "marketd", "bin/marketd", "the marketd binary")
	flag.StringVar(&o.out, "out", "", "output directory (default soak-results/<UTC time>)")
	flag.DurationVar(&o.duration, "duration", 10*time.Minute, "how long wrk drives the node")
	flag.DurationVar(&o.warmup, "warmup", 0, "samples before this are warm-up, left out of the slope (default half the duration, at most 5m: the superseded listing snapshots the store keeps for 5 minutes fill by then)")
	flag.DurationVar(&o.sample, "sample", 10*time.Second, "sampling interval")
	flag.IntVar(&o.collections, "collections", 5000, "simulated collections")
	flag.IntVar(&o.tokens, "tokens", 40, "simulated tokens per collection")
	flag.IntVar(&o.connections, "connections", 300, "wrk connections")
	flag.IntVar(&o.threads, "threads", 2, "wrk threads")
	flag.DurationVar(&o.tick, "tick", 5*time.Second, "interval of a simulator tick followed by an ingest cycle")
	flag.Float64Var(&o.maxSlope, "max-slope", 5, "largest RSS slope after warm-up, MB/min, beyond the growth of the sales history the store keeps, that passes")
	flag.DurationVar(&o.readyWait, "ready-timeout", 5*time.Minute, "how long the node may take to become ready")
	flag.StringVar(&o.extra, "marketd-args", "", "extra marketd flags, space-separated")
	flag.IntVar(&o.feedEvents, "feed-events", 0, "marketd's --feed-events (change-feed events kept per collection); 0: marketd's default")
	flag.IntVar(&o.marketEvents, "market-events", 0, "marketd's --market-events (events the market's change feed keeps); 0: marketd's default")
	flag.Parse()
	if o.warmup == 0 {
		o.warmup = min(o.duration/2, 5*time.Minute)
	}
	if o.out == "" {
		o.out = filepath.Join("soak-results", time.Now().UTC().Format("20060102-150405"))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := run(ctx, o)
	if rep != nil {
		if werr := rep.write(o.out); werr != nil && err == nil {
			err = werr
		}
		fmt.Println(filepath.Join(o.out, "report.md"))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
}

// freePort returns a loopback address with a port nobody listens on now.
func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func run(ctx context.Context, o options) (*report, error) {
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return nil, err
	}
	dataDir, err := filepath.Abs(filepath.Join(o.out, "data"))
	if err != nil {
		return nil, err
	}
	var addr [3]string
	for i := range addr {
		if addr[i], err = freePort(); err != nil {
			return nil, err
		}
	}
	api, admin := "http://"+addr[0], "http://"+addr[1]
	args := []string{"all", "--data-dir", dataDir, "--http-addr", addr[0], "--admin-addr", addr[1], "--sim-addr", addr[2],
		"--sim-collections", strconv.Itoa(o.collections), "--sim-tokens", strconv.Itoa(o.tokens),
		"--poll-interval", "24h", // cycles run when the driver asks (see driveTicks)
		"--rate-list", "1000000000", "--rate-item", "1000000000",
		"--cursor-key", "soak-cursor-key-0123456789abcdef", "--log-format", "json", "--log-level", "warn"}
	if o.feedEvents > 0 {
		args = append(args, "--feed-events", strconv.Itoa(o.feedEvents))
	}
	if o.marketEvents > 0 {
		args = append(args, "--market-events", strconv.Itoa(o.marketEvents))
	}
	args = append(args, strings.Fields(o.extra)...)
	logf, err := os.Create(filepath.Join(o.out, "marketd.log"))
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	node := exec.Command(o.bin, args...)
	node.Stdout, node.Stderr = logf, logf
	if err := node.Start(); err != nil {
		return nil, fmt.Errorf("start marketd: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- node.Wait() }()
	stopped := false
	stopNode := func() error {
		if stopped {
			return nil
		}
		stopped = true
		_ = node.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			return err
		case <-time.After(2 * time.Minute):
			_ = node.Process.Kill()
			<-exited
			return errors.New("marketd did not stop within 2m of SIGTERM")
		}
	}
	defer stopNode()

	rep := &report{opts: o, started: time.Now().UTC()}
	logStep("waiting for readiness (%d collections)", o.collections)
	if err := waitReady(ctx, admin, o.readyWait, exited); err != nil {
		return rep, err
	}
	rep.readyAfter = time.Since(rep.started)
	paths, err := collectPaths(api)
	if err != nil {
		return rep, fmt.Errorf("collect paths: %w", err)
	}
	rep.paths = len(paths)
	lua := filepath.Join(o.out, "mix.lua")
	if err := writeLua(lua, paths); err != nil {
		return rep, err
	}

	logStep("wrk: %d connections for %s over %d paths; sampling every %s", o.connections, o.duration, len(paths), o.sample)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wrkOut := &strings.Builder{}
	wrk := exec.CommandContext(wctx, "wrk", "-t", strconv.Itoa(o.threads), "-c", strconv.Itoa(o.connections),
		"-d", strconv.Itoa(int(o.duration.Seconds()))+"s", "--timeout", "10s", "-s", lua, api)
	wrk.Stdout, wrk.Stderr = wrkOut, wrkOut
	if err := wrk.Start(); err != nil {
		return rep, fmt.Errorf("start wrk: %w", err)
	}
	wrkDone := make(chan error, 1)
	go func() { wrkDone <- wrk.Wait() }()
	sim := "http://" + addr[2]
	ticksDone := make(chan tickStats, 1)
	tctx, stopTicks := context.WithCancel(ctx)
	defer stopTicks()
	go func() { ticksDone <- driveTicks(tctx, sim, admin, o.tick) }()
	t0 := time.Now()
	sampleOnce := func() {
		s, err := takeSample(node.Process.Pid, admin, dataDir)
		if err != nil {
			rep.notes = append(rep.notes, fmt.Sprintf("sample at %s: %v", time.Since(t0).Round(time.Second), err))
			return
		}
		s.at = time.Since(t0)
		rep.samples = append(rep.samples, s)
		logStep("%4.0fs  rss %6.1f MB (anon %6.1f, file %6.1f: vlog %6.1f, sst %6.1f, mem %6.1f)  heap %6.1f MB  goroutines %d  disk badger %6.1f MB, nats %6.1f MB  gc rewrites %d  cpu %.0f s  sales +%.1f MB",
			s.at.Seconds(), s.rssMB, s.anonMB, s.fileMB, s.vlogMB, s.sstMB, s.memMB, s.heapMB, s.goroutines, s.badgerMB, s.natsMB, s.gcRewrites, s.cpuSeconds, s.salesMB)
	}
	sampleOnce()
	tk := time.NewTicker(o.sample)
	var wrkErr error
	// A heap profile when the warm-up ends, beside the one at the end: what
	// grew in between is their difference (go tool pprof -diff_base
	// heap-warm.pprof heap.pprof).
	warm := time.NewTimer(o.warmup)
	defer warm.Stop()
loop:
	for {
		select {
		case <-warm.C:
			if err := saveURL(admin+"/debug/pprof/heap?gc=1", filepath.Join(o.out, "heap-warm.pprof")); err != nil {
				rep.notes = append(rep.notes, "heap profile after warm-up: "+err.Error())
			}
		case <-tk.C:
			sampleOnce()
		case wrkErr = <-wrkDone:
			break loop
		case err := <-exited:
			tk.Stop()
			stopped = true
			return rep, fmt.Errorf("marketd exited during the soak: %v", err)
		case <-ctx.Done():
			tk.Stop()
			return rep, ctx.Err()
		}
	}
	tk.Stop()
	sampleOnce()
	stopTicks()
	rep.ticks = <-ticksDone
	// The heap profile at the end says what the heap holds, for whoever
	// has to find what grows: go tool pprof -sample_index=inuse_space
	// (-diff_base heap-warm.pprof: what grew after the warm-up).
	if err := saveURL(admin+"/debug/pprof/heap?gc=1", filepath.Join(o.out, "heap.pprof")); err != nil {
		rep.notes = append(rep.notes, "heap profile: "+err.Error())
	}
	rep.wrk = parseWrk(wrkOut.String())
	rep.wrkRaw = wrkOut.String()
	if wrkErr != nil {
		return rep, fmt.Errorf("wrk: %v\n%s", wrkErr, wrkOut)
	}

	// Digest the live views, then a replay of a copy, at one instant.
	logStep("stopping the node; digest vs replay")
	if err := stopNode(); err != nil {
		rep.notes = append(rep.notes, "marketd stop: "+err.Error())
	}
	replayDir := dataDir + "-replay"
	_ = os.RemoveAll(replayDir)
	if err := exec.CommandContext(ctx, "cp", "-a", dataDir, replayDir).Run(); err != nil {
		return rep, fmt.Errorf("copy the data dir: %w", err)
	}
	if out, err := exec.CommandContext(ctx, o.bin, "replay", "--data-dir", replayDir, "--log-level", "warn").CombinedOutput(); err != nil {
		return rep, fmt.Errorf("replay: %v\n%s", err, out)
	}
	// The instant comes after the replay: a replay renders clock-dependent
	// views (a token's listing that expired) as of when it runs, and a
	// digest can settle views forward in time, never back. Digested at an
	// instant before the replay ran, the listings that expired in between
	// differ (91 of 80,440 token views in a 10-minute soak).
	at := time.Now().UTC().Add(time.Second).Truncate(time.Second).Format(time.RFC3339)
	rep.digestAt = at
	if rep.digestLive, err = digest(ctx, o.bin, dataDir, at); err != nil {
		return rep, err
	}
	if rep.digestReplay, err = digest(ctx, o.bin, replayDir, at); err != nil {
		return rep, err
	}
	if rep.digestLive == rep.digestReplay {
		_ = os.RemoveAll(replayDir) // else kept beside the live one, to compare
	}
	return rep, rep.verdict()
}

// tickStats is what the tick driver did.
type tickStats struct {
	ticks, cycles, failed int
	lastErr               string
}

// driveTicks moves the simulated market one step every interval and runs
// an ingest cycle after each (POST /admin/ingest answers once the
// projector applied the cycle), until ctx ends; it returns after the
// cycle in flight, so when it returns everything published is projected
// and nothing more will be (the node polls on its own only every 24h): the
// live views are then exactly what a replay of the streams must rebuild.
func driveTicks(ctx context.Context, sim, admin string, every time.Duration) tickStats {
	var st tickStats
	c := http.Client{Timeout: 5 * time.Minute}
	post := func(u string) error {
		r, err := c.Post(u, "application/json", nil)
		if err != nil {
			return err
		}
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		if r.StatusCode != 200 {
			return fmt.Errorf("POST %s: %d %.200s", u, r.StatusCode, b)
		}
		return nil
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return st
		case <-t.C:
		}
		if err := post(sim + "/_sim/tick"); err != nil {
			st.failed++
			st.lastErr = err.Error()
			continue
		}
		st.ticks++
		if err := post(admin + "/admin/ingest"); err != nil {
			st.failed++
			st.lastErr = err.Error()
			continue
		}
		st.cycles++
	}
}

func logStep(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "soak: "+format+"\n", a...)
}

func waitReady(ctx context.Context, admin string, limit time.Duration, exited <-chan error) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if r, err := http.Get(admin + "/readyz"); err == nil {
			r.Body.Close()
			if r.StatusCode == 200 {
				return nil
			}
		}
		select {
		case err := <-exited:
			return fmt.Errorf("marketd exited before it was ready: %v", err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
	return fmt.Errorf("not ready within %s", limit)
}

func digest(ctx context.Context, bin, dir, at string) (string, error) {
	out, err := exec.CommandContext(ctx, bin, "digest", "--data-dir", dir, "--at", at, "--log-level", "warn").Output()
	if err != nil {
		return "", fmt.Errorf("digest %s: %w", dir, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// saveURL writes the body of GET u to file.
func saveURL(u, file string) error {
	r, err := http.Get(u)
	if err != nil {
		return err
	}
	defer r.Body.Close()
	if r.StatusCode != 200 {
		return fmt.Errorf("GET %s: %d", u, r.StatusCode)
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// getJSON fetches an API document.
func getJSON(u string) (map[string]any, error) {
	r, err := http.Get(u)
	if err != nil {
		return nil, err
	}
	defer r.Body.Close()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	if r.StatusCode != 200 {
		return nil, fmt.Errorf("GET %s: %d %.200s", u, r.StatusCode, b)
	}
	var m map[string]any
	return m, json.Unmarshal(b, &m)
}

// collectPaths walks the collection index and builds the request mix: the
// index, browse pages (every sort, a chain filter, a second page), and per
// usable collection its detail, floor, listings and sales, plus token paths
// from listed tokens. Collections without a chain or contract are left out
// (their floor or sales are a 404 by contract, not a failure).
func collectPaths(api string) ([]string, error) {
	paths := []string{"/v1", "/v1/openapi.json", "/v1/collections", "/v1/collections?sort=floor&limit=50",
		"/v1/collections?sort=recent&limit=100", "/v1/collections?chain=ethereum", "/v1/collections?chain=solana&limit=10"}
	var ids [][3]string // id, chain, contract
	next := ""
	for page := 0; page < 20 && len(ids) < 400; page++ {
		u := api + "/v1/collections?limit=100"
		if next != "" {
			u += "&cursor=" + url.QueryEscape(next)
		}
		m, err := getJSON(u)
		if err != nil {
			return nil, err
		}
		for _, it := range m["data"].([]any) {
			c := it.(map[string]any)
			chain, _ := c["chain"].(string)
			contract, _ := c["contractAddress"].(string)
			if chain != "" && contract != "" {
				ids = append(ids, [3]string{c["id"].(string), chain, contract})
			}
		}
		if page == 1 && next != "" {
			paths = append(paths, "/v1/collections?limit=100&cursor="+url.QueryEscape(next))
		}
		pg := m["pagination"].(map[string]any)
		n, _ := pg["nextCursor"].(string)
		if n == "" {
			break
		}
		next = n
	}
	if len(ids) == 0 {
		return nil, errors.New("no collection with a chain and contract")
	}
	tokens := 0
	for i, c := range ids {
		p := "/v1/collections/" + url.PathEscape(c[0])
		paths = append(paths, p, p+"/floor", p+"/listings", p+"/listings?limit=100", p+"/sales")
		if i%4 != 0 || tokens > 400 {
			continue
		}
		m, err := getJSON(api + p + "/listings?limit=10")
		if err != nil {
			return nil, err
		}
		for _, it := range m["data"].([]any) {
			row := it.(map[string]any)
			if mint, ok := row["mint"].(string); ok && c[1] == "solana" {
				paths = append(paths, "/v1/tokens/solana/"+url.PathEscape(c[2])+"/"+url.PathEscape(mint))
				tokens++
			} else if tid, ok := row["tokenId"].(string); ok {
				paths = append(paths, "/v1/tokens/"+c[1]+"/"+c[2]+"/"+url.PathEscape(tid))
				tokens++
			}
		}
	}
	return paths, nil
}

// writeLua writes the wrk script: each thread walks the paths from its own
// random start, round-robin.
func writeLua(file string, paths []string) error {
	var b strings.Builder
	b.WriteString("paths = {\n")
	for _, p := range paths {
		fmt.Fprintf(&b, "  %q,\n", p)
	}
	b.WriteString(`}
local threads = {}
function setup(thread)
  table.insert(threads, thread)
end
local i = 0
bad = {}
function init(args)
  math.randomseed(os.time() + tonumber(tostring({}):sub(8), 16))
  i = math.random(#paths)
end
function request()
  i = i % #paths + 1
  return wrk.format("GET", paths[i])
end
function response(status, headers, body)
  if status < 200 or status > 299 then
    local k = status .. " " .. paths[i]
    bad[k] = (bad[k] or 0) + 1
  end
end
function done(summary, latency, requests)
  local all = {}
  for _, t in ipairs(threads) do
    for k, n in pairs(t:get("bad")) do
      all[k] = (all[k] or 0) + n
    end
  end
  for k, n in pairs(all) do
    io.write(string.format("NON2XX %d %s\n", n, k))
  end
  io.write(string.format("LATENCY p50 %.1fms p99 %.1fms\n", latency:percentile(50) / 1000, latency:percentile(99) / 1000))
end
`)
	return os.WriteFile(file, []byte(b.String()), 0o644)
}

// sample is one measurement of the node.
type sample struct {
	at         time.Duration
	rssMB      float64
	anonMB     float64 // RssAnon: the Go heap and runtime, off-heap buffers
	fileMB     float64 // RssFile: mapped files (Badger's value log, tables and memtables)
	heapMB     float64 // go_memstats_heap_inuse_bytes
	goroutines int
	// Resident pages of Badger's mapped files by kind (/proc/PID/smaps):
	// value log, tables, memtables.
	vlogMB, sstMB, memMB float64
	// Disk the data dir's two stores take (allocated blocks, not the
	// apparent size: Badger's files are preallocated sparse).
	badgerMB, natsMB float64
	gcRewrites       int     // marketd_views_value_log_gc_rewrites_total
	cpuSeconds       float64 // the process's user and system CPU time so far
	salesMB          float64 // marketd_views_sales_bytes_total: the sales history the store added
}

var (
	reHeap  = regexp.MustCompile(`(?m)^go_memstats_heap_inuse_bytes ([0-9.e+]+)$`)
	reGor   = regexp.MustCompile(`(?m)^go_goroutines ([0-9.e+]+)$`)
	reGC    = regexp.MustCompile(`(?m)^marketd_views_value_log_gc_rewrites_total ([0-9.e+]+)$`)
	reSales = regexp.MustCompile(`(?m)^marketd_views_sales_bytes_total ([0-9.e+]+)$`)
)

// mappedByKind sums the resident pages of the process's mappings of
// Badger's files by kind, from /proc/PID/smaps.
func mappedByKind(pid int) (vlog, sst, mem float64, err error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/smaps", pid))
	if err != nil {
		return 0, 0, 0, err
	}
	defer f.Close()
	return parseSmaps(f)
}

// parseSmaps is mappedByKind of an smaps text.
func parseSmaps(r io.Reader) (vlog, sst, mem float64, err error) {
	var cur *float64
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if k, v, ok := strings.Cut(line, ":"); ok && !strings.Contains(k, " ") && !strings.Contains(k, "-") {
			if k == "Rss" && cur != nil {
				kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
				*cur += kb / 1024
			}
			continue
		}
		// A mapping's header: address range, perms, offset, dev, inode, path.
		fs := strings.Fields(line)
		cur = nil
		if len(fs) < 6 {
			continue
		}
		switch filepath.Ext(fs[5]) {
		case ".vlog":
			cur = &vlog
		case ".sst":
			cur = &sst
		case ".mem":
			cur = &mem
		}
	}
	return vlog, sst, mem, sc.Err()
}

// cpuSeconds is the user and system CPU time of process pid
// (/proc/PID/stat, in clock ticks of 1/100 s).
func cpuSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The fields after the command (in parentheses, which may hold spaces):
	// state is field 3, utime 14 and stime 15.
	i := strings.LastIndexByte(string(b), ')')
	fs := strings.Fields(string(b[i+1:]))
	if len(fs) < 13 {
		return 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	u, _ := strconv.ParseFloat(fs[11], 64)
	st, _ := strconv.ParseFloat(fs[12], 64)
	return (u + st) / 100, nil
}

// diskMB is the disk the files under dir take (allocated blocks).
func diskMB(dir string) float64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if fi, err := d.Info(); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				n += st.Blocks * 512
			}
		}
		return nil
	})
	return float64(n) / (1 << 20)
}

func takeSample(pid int, admin, dataDir string) (sample, error) {
	var s sample
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, err
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
		switch k {
		case "VmRSS":
			s.rssMB = kb / 1024
		case "RssAnon":
			s.anonMB = kb / 1024
		case "RssFile":
			s.fileMB = kb / 1024
		}
	}
	f.Close()
	c := http.Client{Timeout: 5 * time.Second}
	r, err := c.Get(admin + "/metrics")
	if err != nil {
		return s, err
	}
	b, err := io.ReadAll(r.Body)
	r.Body.Close()
	if err != nil {
		return s, err
	}
	if m := reHeap.FindSubmatch(b); m != nil {
		v, _ := strconv.ParseFloat(string(m[1]), 64)
		s.heapMB = v / (1 << 20)
	}
	if m := reGor.FindSubmatch(b); m != nil {
		v, _ := strconv.ParseFloat(string(m[1]), 64)
		s.goroutines = int(v)
	}
	if m := reGC.FindSubmatch(b); m != nil {
		v, _ := strconv.ParseFloat(string(m[1]), 64)
		s.gcRewrites = int(v)
	}
	if m := reSales.FindSubmatch(b); m != nil {
		v, _ := strconv.ParseFloat(string(m[1]), 64)
		s.salesMB = v / (1 << 20)
	}
	if s.cpuSeconds, err = cpuSeconds(pid); err != nil {
		return s, err
	}
	if s.vlogMB, s.sstMB, s.memMB, err = mappedByKind(pid); err != nil {
		return s, err
	}
	s.badgerMB, s.natsMB = diskMB(filepath.Join(dataDir, "badger")), diskMB(filepath.Join(dataDir, "nats"))
	return s, nil
}

// wrkResult is what the soak needs of wrk's summary.
type wrkResult struct {
	requests int64
	rps      float64
	non2xx   int64
	sockErrs int64
	p50, p99 string
}

func parseWrk(out string) wrkResult {
	var w wrkResult
	if m := regexp.MustCompile(`(\d+) requests in`).FindStringSubmatch(out); m != nil {
		w.requests, _ = strconv.ParseInt(m[1], 10, 64)
	}
	if m := regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`).FindStringSubmatch(out); m != nil {
		w.rps, _ = strconv.ParseFloat(m[1], 64)
	}
	if m := regexp.MustCompile(`Non-2xx or 3xx responses: (\d+)`).FindStringSubmatch(out); m != nil {
		w.non2xx, _ = strconv.ParseInt(m[1], 10, 64)
	}
	if m := regexp.MustCompile(`Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)`).FindStringSubmatch(out); m != nil {
		for _, x := range m[1:] {
			n, _ := strconv.ParseInt(x, 10, 64)
			w.sockErrs += n
		}
	}
	if m := regexp.MustCompile(`LATENCY p50 (\S+) p99 (\S+)`).FindStringSubmatch(out); m != nil {
		w.p50, w.p99 = m[1], m[2]
	}
	return w
}

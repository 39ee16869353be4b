package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/marketd/marketd/config"
)

// Results is everything one run measured; the report renders it.
type Results struct {
	Started, Finished time.Time
	Options           Options
	Machine           map[string]string
	SelfConsume       *ConsumeResult // benchconsume --self: publish and consume ceiling
	SelfConsumeErr    string
	Sizes             []*SizeRun
	Fresh             []FreshSample
	FreshErr          string
	FreshSummary      string // the last ingest summary, trimmed
	Replays           []*ReplayRun
	GoBench           string
	GoBenchErr        string
	Notes             []string
}

// SizeRun is one market size: start-up, read path, memory, cycle.
type SizeRun struct {
	Label       string
	Collections int
	DataDir     string
	Ready       time.Duration // start to /readyz 200 (first cycle projected), or to the bound
	ReadyOK     bool          // /readyz answered 200 within the bound
	ReadyCPU    time.Duration // CPU used by marketd until then
	Picked      Picked
	Endpoints   []*EPResult
	MemReady    Mem
	MemSteady   Mem // after the read benchmark, idle
	PeakRSS     int64
	// Settled is how long after ready marketd's CPU took to fall below
	// quietCores (Badger compacting, sweeps); SettledOK is false when the
	// bound ended the wait first.
	Settled   time.Duration
	SettledOK bool
	// Background is what marketd did besides answering, during the reads
	// and right after them; nil when not measured.
	Background *Background
	// Cycle is the large size's tick + cycle, run when the market's clock
	// reaches the wall clock (see SimAnchor).
	Cycle *CycleRun
	// SimAnchor is the simulator's market clock at tick 0. At the large
	// size it is start-up plus the ready bound, so that the market stands
	// still at a time the wall clock has not yet reached while the first
	// cycle runs, and the measured cycle is one step of change.
	SimAnchor  time.Time
	Skipped    string // why this size was not (fully) measured
	Metrics    string // marketd_* lines of /metrics when it was not ready in time
	GOMAXPROCS string // as marketd reported it after pinning
	// TokensPerCollection is what the simulator was given; 0: its default
	// (varied, 20–400, about 210 on average).
	TokensPerCollection int
	ShutdownTook        time.Duration

	// Cgroup is the memory cgroup the node ran in (the large size, when a
	// limit is set); nil when it ran uncapped by choice.
	Cgroup *CgroupRun
	// MaxAnon is the highest anonymous RSS sampled (RssAnon).
	MaxAnon int64
	// Faults are marketd's major page faults (/proc/PID/stat majflt),
	// cumulative at each point; -1 where not read.
	Faults Faults
	// MoreCycles are the cycles after the first measured one (Cycle): the
	// ones the mixed reads ran during. With Cycle they make the three
	// cycles after which the store is measured.
	MoreCycles []*CycleRun
	// Mixed is the mixed-set wrk runs: idle, and during MoreCycles.
	Mixed []*MixedRun
	// Store is the view store's size after the cycles and a value-log GC.
	Store *StoreRun
	// Join is a new serve node joining this node's streams.
	Join *JoinRun
}

// Faults are a node's cumulative major page faults at points of its run.
type Faults struct {
	AtReady, AfterReads, AfterCycles, End int64
}

// Tokens is the market's token count (0 when the simulator varied it).
func (s *SizeRun) Tokens() int { return s.Collections * s.TokensPerCollection }

// StoreRun is what the view store (<data-dir>/badger) takes on disk.
type StoreRun struct {
	Tokens int
	Cycles int // tick + ingest cycles after the first, full one
	// GCRewrites is the value-log files the node's periodic GC rewrote
	// since start, when the third cycle ended and when measured (-1: the
	// node has no such counter).
	GCRewrites0, GCRewrites1 int64
	Waited                   time.Duration // from the third cycle's end to the measurement
	GCNote                   string        // how the GC was waited for
	Live                     DiskUsage     // node running, after the GC wait
	Stopped                  DiskUsage     // after a clean stop: the figure judged
	Streams                  DiskUsage     // <data-dir>/nats, for scale
	AfterReplay              DiskUsage     // the store `marketd replay` built
	Err                      string
}

// PerToken is bytes of the stopped store per token (the larger of the
// apparent and allocated sizes); 0 when unknown.
func (st *StoreRun) PerToken() float64 {
	if st == nil || st.Tokens == 0 || st.Stopped.Max() == 0 {
		return 0
	}
	return float64(st.Stopped.Max()) / float64(st.Tokens)
}

// Background is marketd's own work around a size's read phase. A node
// that settled can still be busy during the reads (the expiry sweep every
// few seconds, Badger compacting), and on the one pinned core that work
// competes with the requests: these say how much there was.
type Background struct {
	Reads time.Duration // wall time of the read phase
	// Sweep is how long the expiry sweep ran during the read phase
	// (marketd_projector_sweep_seconds_total); negative when unknown.
	Sweep time.Duration
	// Cores is marketd's CPU, in cores, over Window right after the
	// reads: no load, still pinned.
	Cores  float64
	Window time.Duration
}

// EPResult is one endpoint at one size.
type EPResult struct {
	Endpoint
	Capture Capture
	Marketd Measured
	Ref     *Measured
	Err     string
}

// RPSRatio is marketd's rate against the reference's: the median of the
// ratios of the runs made back to back (marketd's run i, then the
// reference's run i). This machine's speed drifts between runs, and with
// large bodies a run lands in one of two rates about 2× apart for either
// server alike; a ratio of medians taken apart can then pair a slow
// marketd run with a fast reference run (0.62 for the same prepared
// bytes that measured 1.11 in the run before), a run pair cannot. 0
// without reference runs.
func (e *EPResult) RPSRatio() float64 {
	if e.Ref == nil {
		return 0
	}
	n := min(len(e.Marketd.Runs), len(e.Ref.Runs))
	rs := make([]float64, 0, n)
	for i := 0; i < n; i++ {
		rs = append(rs, ratio(e.Marketd.Runs[i].RPS, e.Ref.Runs[i].RPS))
	}
	return median(rs)
}

// CycleRun is one ingest cycle through the admin API, after the simulator
// ticks that brought its market's clock up to the wall clock.
type CycleRun struct {
	Wall, CPU time.Duration
	// Ticks is how many steps the market moved before the cycle, and Lag
	// how far its clock trailed the wall clock before them.
	Ticks     int
	Lag       time.Duration
	Published int           // messages the cycle published, from its summary
	SimCPU    time.Duration // the simulator's CPU meanwhile (answering the polls)
	Summary   string
	Err       string
}

// ConsumeResult mirrors benchconsume's JSON.
type ConsumeResult struct {
	Mode  string `json:"mode"`
	Rates []struct {
		Stream  string  `json:"stream"`
		Op      string  `json:"op"`
		Msgs    int     `json:"msgs"`
		Bytes   int64   `json:"bytes"`
		Seconds float64 `json:"seconds"`
		PerSec  float64 `json:"msgsPerSec"`
	} `json:"rates"`
	Total struct {
		Msgs    int     `json:"msgs"`
		Bytes   int64   `json:"bytes"`
		Seconds float64 `json:"seconds"`
		PerSec  float64 `json:"msgsPerSec"`
	} `json:"total"`
}

// ReplayRun is `marketd replay` on one size's data dir against the raw
// ordered-consumer rate on the same store.
type ReplayRun struct {
	Label string
	Msgs  int // messages in the streams (from the raw read)
	Wall  time.Duration
	Rate  float64 // Msgs / Wall (Partial / Wall when replay was cut off)
	// Partial is how many messages replay had applied when its bound cut
	// it off (from its last progress line); 0 when it finished.
	Partial int
	Output  string // replay's last lines
	Raw     []*ConsumeResult
	RawMax  float64
	// Bytes is the streams' payload bytes (from the raw read), and PeakRSS
	// replay's peak resident set (its rusage).
	Bytes   int64
	PeakRSS int64
	Err     string
	// The floor under any build of this store, from the same run: RawWall
	// is the faster of the raw consumer's two reads of the streams, Write
	// what StreamWriter took to write every record of the store replay
	// built from memory (see floorWrite). Floor is their sum.
	RawWall time.Duration
	Write   *FloorWrite
}

// FloorWrite is BenchmarkStreamWriterStore (readmodel/store) run on the
// store a replay built: the mean of two writes of all its records.
type FloorWrite struct {
	Wall    time.Duration
	Records int
	MBps    float64
	Err     string
}

// Floor is RawWall plus the write's wall time; 0 when either is missing.
func (r *ReplayRun) Floor() time.Duration {
	if r.RawWall <= 0 || r.Write == nil || r.Write.Err != "" || r.Write.Wall <= 0 {
		return 0
	}
	return r.RawWall + r.Write.Wall
}

type harness struct {
	o        Options
	out      io.Writer
	res      *Results
	work     string
	deadline time.Time // the whole run's budget ends here
}

// bound is want, shortened so that reserve is still left of the run's
// budget afterwards (never below a minute).
func (h *harness) bound(want, reserve time.Duration) time.Duration {
	if h.deadline.IsZero() {
		return want
	}
	left := time.Until(h.deadline) - reserve
	if left < want {
		want = left
	}
	if want < time.Minute {
		want = time.Minute
	}
	return want
}

func (h *harness) logf(format string, a ...any) {
	fmt.Fprintf(h.out, "%s  %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, a...))
}

func (h *harness) note(format string, a ...any) {
	msg := fmt.Sprintf(format, a...)
	h.res.Notes = append(h.res.Notes, msg)
	h.logf("NOTE: %s", msg)
}

func (h *harness) bin(name string) string { return filepath.Join(h.o.BinDir, name) }

func (h *harness) run(ctx context.Context) {
	if h.o.Budget > 0 {
		h.deadline = time.Now().Add(h.o.Budget)
	}
	h.res.Machine = machineInfo(ctx)
	h.logf("machine: %s cores, %s, %s, %s; load %s", h.res.Machine["nproc"], h.res.Machine["cpu"], h.res.Machine["memory"], h.res.Machine["go"], h.res.Machine["load"])

	h.selfConsume(ctx)
	demo := h.size(ctx, "demo", h.o.DemoSize, true, true)
	if h.o.BigSize > 0 && !h.deadline.IsZero() && time.Until(h.deadline) < 6*time.Minute {
		h.note("large market skipped: only %s of the run's %s budget left", time.Until(h.deadline).Round(time.Second), h.o.Budget)
	} else if ctx.Err() == nil && h.o.BigSize > 0 {
		h.size(ctx, "large", h.o.BigSize, h.o.BigRef, false)
	} else if h.o.BigSize == 0 {
		h.note("large market skipped (BENCH_BIG=0)")
	}
	_ = demo
	if ctx.Err() == nil && h.o.GoBench {
		if !h.deadline.IsZero() && time.Until(h.deadline) < 30*time.Second {
			h.note("go test -bench skipped: the run's %s budget is used up", h.o.Budget)
		} else {
			h.goBench(ctx)
		}
	}
	if ctx.Err() != nil {
		h.note("run interrupted: %v", ctx.Err())
	}
}

func (h *harness) selfConsume(ctx context.Context) {
	n := "200000"
	if h.o.Quick {
		n = "50000"
	}
	h.logf("raw JetStream rates: benchconsume --self %s", n)
	out, _, err := runCmd(ctx, 3*time.Minute, "", "taskset", "-c", h.allCores(), h.bin("benchconsume"), "--self", n, "--size", "300", "--json")
	if err != nil {
		h.res.SelfConsumeErr = fmt.Sprintf("%v: %s", err, tail(out, 5))
		return
	}
	var r ConsumeResult
	if err := json.Unmarshal([]byte(lastLine(out)), &r); err != nil {
		h.res.SelfConsumeErr = fmt.Sprintf("bad output: %v", err)
		return
	}
	h.res.SelfConsume = &r
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// node is a running marketd all, fed by a simulator in its own process.
type node struct {
	p               *Proc
	simP            *Proc // marketd sim: the upstreams
	api, admin, sim string
	simAddr         string // the built-in simulator's listener (idle)
	mem             *memSampler
	cg              *memCgroup // the memory cgroup it runs in, or nil
}

// stop stops marketd, then the simulator; it returns marketd's shutdown
// time and error.
func (n *node) stop() (time.Duration, error) {
	took, err := n.p.Stop(30 * time.Second)
	_, _ = n.simP.Stop(10 * time.Second)
	n.cg.remove()
	return took, err
}

// startNode starts `marketd sim` and a `marketd all` whose seven sources
// poll it. The upstreams run in their own process so that marketd's CPU is
// marketd's own: a deployment polls real upstreams and does not pay for
// answering itself (in `all` the built-in simulator answers in-process).
func (h *harness) startNode(ctx context.Context, s *SizeRun) (*node, error) {
	addrs := make([]string, 4)
	for i := range addrs {
		a, err := freePort()
		if err != nil {
			return nil, err
		}
		addrs[i] = a
	}
	simArgs := []string{h.bin("marketd"), "sim", "--sim-addr", addrs[3],
		"--sim-collections", strconv.Itoa(s.Collections), "--log-format", "json"}
	if !s.SimAnchor.IsZero() {
		simArgs = append(simArgs, "--sim-anchor", s.SimAnchor.Format(time.RFC3339))
	}
	if f := h.tokensFlag(ctx); f != "" && s.Label != "demo" {
		// The large market: 100 tokens a collection (10 M at 100 k),
		// so that the store's bytes per token have a known denominator.
		simArgs = append(simArgs, f, "100")
		s.TokensPerCollection = 100
	}
	simP, err := startProc("marketd sim "+s.Label, h.allCores(), filepath.Join(s.DataDir+".sim.log"), simArgs...)
	if err != nil {
		return nil, err
	}
	sim := "http://" + addrs[3]
	if err := waitHTTP(ctx, sim+"/_sim/faults", simP, 30*time.Second); err != nil {
		_, _ = simP.Stop(10 * time.Second)
		return nil, fmt.Errorf("simulator: %w", err)
	}
	args := []string{h.bin("marketd"), "all",
		"--data-dir", s.DataDir,
		// The built-in simulator still listens (all always runs one), idle.
		"--http-addr", addrs[0], "--admin-addr", addrs[1], "--sim-addr", addrs[2],
		// Raised, not switched off: one client IP makes every request of the run.
		"--rate-list", "1000000000", "--rate-item", "1000000000",
		"--cursor-key", "bench-cursor-key-0123456789abcdef",
		// Cycles run only when the harness asks (POST /admin/ingest), so a
		// scheduled cycle never lands inside a read measurement.
		"--poll-interval", "24h",
		"--log-format", "json",
	}
	for _, name := range config.SourceNames {
		args = append(args, "--source-"+name+"-url", sim+"/"+name)
	}
	args = append(args, strings.Fields(h.o.ExtraArgs)...)
	// Unpinned until the read path: start-up and cycles use the machine as a
	// deployment would, so their CPU figures mean something.
	argv := append([]string{"taskset", "-c", h.allCores()}, args...)
	var g *memCgroup
	if s.Label != "demo" && h.o.MemCap > 0 {
		s.Cgroup = &CgroupRun{Limit: h.o.MemCap}
		g, err = newMemCgroup(ctx, "marketd-bench-"+slugify(s.Label)+"-"+strconv.Itoa(os.Getpid()), h.o.MemCap)
		if err != nil {
			s.Cgroup.Why = err.Error()
			h.note("%s: not measured inside a %s memory cgroup, the node runs uncapped: %v", s.Label, fmtSize(h.o.MemCap), err)
		} else {
			s.Cgroup.Mechanism, s.Cgroup.Dir, s.Cgroup.Why = g.Mechanism, g.Dir, g.tried
			argv = g.wrap(argv)
			h.logf("%s: marketd runs inside a %s memory cgroup (%s %s)", s.Label, fmtSize(h.o.MemCap), g.Mechanism, g.Dir)
		}
	}
	p, err := startProc("marketd "+s.Label, "", filepath.Join(s.DataDir+".log"), argv...)
	if err != nil {
		_, _ = simP.Stop(10 * time.Second)
		g.remove()
		return nil, err
	}
	if g != nil {
		if err := g.learn(p.Pid()); err != nil {
			h.note("%s: %v", s.Label, err)
		}
		s.Cgroup.Dir = g.Dir
	}
	return &node{p: p, simP: simP, api: "http://" + addrs[0], admin: "http://" + addrs[1], sim: sim,
		simAddr: "http://" + addrs[2], cg: g, mem: sampleMem(p.Pid(), 250*time.Millisecond, g)}, nil
}

// size measures one market size end to end and stops its node.
func (h *harness) size(ctx context.Context, label string, collections int, withRef, demo bool) *SizeRun {
	s := &SizeRun{Label: label, Collections: collections, DataDir: filepath.Join(h.work, slugify(label))}
	h.res.Sizes = append(h.res.Sizes, s)
	timeout := h.o.ReadyTimeout
	if !demo {
		timeout = h.bound(h.o.BigReady, 5*time.Minute)
		// The market's clock stands at tick 0 until the harness ticks it,
		// while the first cycle takes up to the ready bound. Anchored
		// there, it is neither behind the wall clock when the cycle is
		// measured (a market left twenty minutes behind would have most of
		// its listings expired at once, a catch-up rather than an
		// interval) nor far ahead of it during the reads.
		s.SimAnchor = time.Now().Add(timeout).Truncate(time.Minute).Add(time.Minute).UTC()
	}
	h.logf("== %s: starting marketd sim --sim-collections %d and marketd all polling it (core %s)", label, collections, h.o.ServerCore)
	n, err := h.startNode(ctx, s)
	if err != nil {
		s.Skipped = "start: " + err.Error()
		h.logf("%s", s.Skipped)
		return s
	}
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		if m, err := readMem(n.p.Pid()); err == nil {
			s.PeakRSS = m.HWM
		}
		s.Faults.End = faults(n)
		if s.Cgroup != nil && n.cg != nil {
			s.Cgroup.End, _ = n.cg.stat()
			s.Cgroup.Peak = n.cg.peak()
		}
		n.mem.Stop()
		s.MaxAnon = n.mem.MaxAnon()
		if s.Cgroup != nil {
			s.Cgroup.SampledPeak = n.mem.MaxCgroup()
		}
		took, err := n.stop()
		s.ShutdownTook = took
		if err != nil {
			h.note("%s: shutdown: %v", label, err)
		}
	}
	defer stop()

	s.Faults = Faults{-1, -1, -1, -1}
	cpu0, _ := readCPU(n.p.Pid())
	ready, err := waitReady(ctx, n.admin, n.p, timeout)
	s.Ready = ready
	if cpu1, err := readCPU(n.p.Pid()); err == nil {
		s.ReadyCPU = cpu1 - cpu0
	}
	if err != nil {
		s.Skipped = fmt.Sprintf("not ready: %v (log: %s)", err, s.DataDir+".log")
		h.logf("%s", s.Skipped)
		s.Metrics = scrapeMetrics(ctx, n.admin)
		if m, err := readMem(n.p.Pid()); err == nil {
			s.MemReady = m
		}
		// The streams hold what was published so far: replay is still
		// measurable on them.
		stop()
		if ctx.Err() == nil {
			h.replay(ctx, s)
		}
		return s
	}
	s.ReadyOK = true
	s.MemReady, _ = readMem(n.p.Pid())
	s.Faults.AtReady = faults(n)
	if s.Cgroup != nil && n.cg != nil {
		s.Cgroup.AtReady, _ = n.cg.stat()
	}
	h.logf("ready after %s (CPU %s), RSS %s", ready.Round(time.Millisecond), s.ReadyCPU.Round(time.Millisecond), mib(s.MemReady.RSS))

	// A new serve node joins while the market's clock is ahead of the
	// wall clock (the harness waits for it anyway, below): its streams
	// hold the whole market by now.
	if !demo && ctx.Err() == nil {
		if left := time.Until(h.deadline); h.deadline.IsZero() || left > 8*time.Minute {
			s.Join = h.join(ctx, n, s)
		} else {
			h.note("%s: the joining serve node was skipped: only %s of the run's budget left", label, left.Round(time.Second))
		}
	}

	// The large size's cycle: when the wall clock reaches the market's,
	// one tick and one cycle, on the whole machine. It runs before the
	// reads so that they see a market level with the wall clock (rows
	// expiring as they would between two cycles); the settling below
	// keeps what it leaves running out of the reads.
	if !demo && ctx.Err() == nil {
		if err := sleepUntil(ctx, s.SimAnchor); err == nil {
			s.Cycle = h.cycle(ctx, n, nil)
		}
	}

	// Reads are measured on a quiet node, at both sizes: after a large
	// first cycle Badger is still compacting for a while.
	s.Settled, s.SettledOK = settle(ctx, n.p.Pid(), h.bound(3*time.Minute, 5*time.Minute))
	if !s.SettledOK {
		h.note("%s: marketd still busy %s after ready; reads measured anyway", label, fmtDur(s.Settled))
	}
	h.logf("settled after %s", s.Settled.Round(time.Millisecond))

	if h.o.ServerCore != "" {
		if err := pin(ctx, n.p.Pid(), h.o.ServerCore); err != nil {
			h.note("%s: could not pin marketd to core %s: %v", label, h.o.ServerCore, err)
		}
		time.Sleep(2 * time.Second) // the Go runtime re-reads its CPU set periodically
		s.GOMAXPROCS = metricValue(ctx, n.admin, "go_sched_gomaxprocs_threads")
		h.logf("marketd pinned to core %s (GOMAXPROCS %s)", h.o.ServerCore, s.GOMAXPROCS)
	}
	p, err := pickIDs(ctx, n.api, 40)
	if err == nil && !demo && len(h.res.Sizes) > 1 {
		// Same collection and token as the demo size when they exist here
		// too (the simulator's first collections are the same at every
		// size), so the ratio to demo compares like with like.
		if d := h.res.Sizes[0].Picked; d.Collection.ID != "" && stillThere(ctx, n.api, d) {
			d.Candidates = p.Candidates
			d.EventsFull, d.EventsHead = feedPaths(ctx, n.api, d.Collection.ID) // feed cursors are this node's
			d.MarketFull, d.MarketHead = marketFeedPaths(ctx, n.api)
			p = d
		}
	}
	if err != nil {
		s.Skipped = "pick ids: " + err.Error()
		h.logf("%s", s.Skipped)
		return s
	}
	s.Picked = p
	h.logf("measuring on %s (%d listings on the 100-page, %d sales), token %s", p.Collection.ID, p.Listings, p.Sales, p.TokenPath)
	sweep0, readsStart := sweepSeconds(ctx, n.admin), time.Now()
	h.readPath(ctx, n, s, withRef)
	s.Background = h.background(ctx, n, sweep0, time.Since(readsStart))

	// Steady memory: after the read load and background's idle window.
	s.MemSteady, _ = readMem(n.p.Pid())
	s.Faults.AfterReads = faults(n)
	if s.Cgroup != nil && n.cg != nil {
		s.Cgroup.AfterReads, _ = n.cg.stat()
	}

	// The mixed set: every endpoint in turn, idle (at both sizes: the
	// demo's is the reference) and, at the large size, while a cycle is
	// applied; then the store's size after a value-log GC.
	if ctx.Err() == nil {
		h.mixedAndCycles(ctx, n, s, demo)
	}

	// Freshness cycles run on the whole machine again; the pollers stay
	// on the harness's core.
	if ctx.Err() == nil && demo && h.o.FreshReps > 0 {
		if err := pin(ctx, n.p.Pid(), h.allCores()); err != nil {
			h.note("%s: could not unpin marketd: %v", label, err)
		}
		h.freshness(ctx, n, p)
	}
	stop()
	h.logf("%s: stopped in %s; peak RSS %s, steady %s", label, s.ShutdownTook.Round(time.Millisecond), mib(s.PeakRSS), mib(s.MemSteady.RSS))
	if s.Store != nil {
		s.Store.Stopped, _ = diskUsage(filepath.Join(s.DataDir, "badger"))
		s.Store.Streams, _ = diskUsage(filepath.Join(s.DataDir, "nats"))
		h.logf("%s: view store after a clean stop: %s apparent, %s on disk; %.0f bytes per token (%d tokens)", label,
			mib(s.Store.Stopped.Apparent), mib(s.Store.Stopped.OnDisk), s.Store.PerToken(), s.Store.Tokens)
	}
	if ctx.Err() == nil {
		h.replay(ctx, s)
		// Only a finished replay swapped in the store it built.
		if x := replayOf(h.res, s.Label); s.Store != nil && x != nil && x.Err == "" {
			s.Store.AfterReplay, _ = diskUsage(filepath.Join(s.DataDir, "badger"))
		}
	}
	return s
}

// simStep is how far one tick moves the simulator's market clock (its
// default; the harness does not change it).
const simStep = 2 * time.Minute

// cycle ticks the simulator until its market's clock is less than a step
// behind the wall clock (at least once), then times one ingest cycle, wall
// and CPU of marketd and of the simulator.
//
// The market moves only when ticked, while the wall clock runs on: had a
// first cycle of twenty minutes left the market that far behind, a single
// tick would find most of its listings expired (ingest drops rows whose
// expiry has passed): a catch-up, not the step a 2-minute interval sees.
// The ticks say how many steps the measured cycle covers.
//
// during, when not nil, runs while the cycle's POST is in flight (load on
// the read path); the cycle's CPU then includes answering it. ended is
// told when the cycle started and when its POST answered.
func (h *harness) cycle(ctx context.Context, n *node, during func(), ended ...func(start, end time.Time)) *CycleRun {
	c := &CycleRun{}
	ticks, lag, err := tickToWall(ctx, n.sim, time.Now)
	c.Ticks, c.Lag = ticks, lag
	if err != nil {
		c.Err = err.Error()
		return c
	}
	bound := h.bound(h.o.CycleTimeout, 5*time.Minute)
	h.logf("cycle: %s; POST /admin/ingest (bound %s)", tickPhrase(c), bound)
	cpu0, _ := readCPU(n.p.Pid())
	sim0, _ := readCPU(n.simP.Pid())
	type answer struct {
		st  int
		b   []byte
		err error
		at  time.Time
	}
	start := time.Now()
	answered := make(chan answer, 1)
	go func() {
		st, b, err := post(ctx, n.admin+"/admin/ingest", bound)
		answered <- answer{st, b, err, time.Now()}
	}()
	if during != nil {
		during()
	}
	a := <-answered
	st, b, err := a.st, a.b, a.err
	c.Wall = a.at.Sub(start)
	for _, f := range ended {
		f(start, a.at)
	}
	cpu1, _ := readCPU(n.p.Pid())
	sim1, _ := readCPU(n.simP.Pid())
	c.CPU, c.SimCPU = cpu1-cpu0, sim1-sim0
	c.Summary = trimJSON(b, 1500)
	var sum struct {
		Published int `json:"published"`
	}
	if json.Unmarshal(b, &sum) == nil {
		c.Published = sum.Published
	}
	if err != nil || st != http.StatusOK {
		c.Err = fmt.Sprintf("admin ingest: status %d %v %.300s", st, err, b)
	}
	h.logf("cycle: wall %s, CPU %s (simulator %s), %d messages", c.Wall.Round(time.Millisecond), c.CPU.Round(time.Millisecond),
		c.SimCPU.Round(time.Millisecond), c.Published)
	return c
}

// sleepUntil waits until t or until ctx ends (its error).
func sleepUntil(ctx context.Context, t time.Time) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Until(t)):
		return nil
	}
}

// maxTicks bounds tickToWall: a week of steps.
const maxTicks = 7 * 24 * 30

// tickToWall ticks the simulator at simBase until its market clock is less
// than simStep behind now(), and at least once. It returns the ticks and
// how far the market trailed before them.
func tickToWall(ctx context.Context, simBase string, now func() time.Time) (int, time.Duration, error) {
	var lag time.Duration
	for ticks := 1; ; ticks++ {
		st, b, err := post(ctx, simBase+"/_sim/tick", 10*time.Second)
		if err != nil || st/100 != 2 {
			return ticks - 1, lag, fmt.Errorf("sim tick: status %d %v %.200s", st, err, b)
		}
		var r struct {
			Now time.Time `json:"now"`
		}
		if err := json.Unmarshal(b, &r); err != nil || r.Now.IsZero() {
			return ticks, lag, fmt.Errorf("sim tick: no market time in %.200s", b)
		}
		behind := now().Sub(r.Now)
		if ticks == 1 {
			lag = behind + simStep
		}
		if behind < simStep || ticks >= maxTicks {
			return ticks, lag, nil
		}
	}
}

// readPath runs wrk against every endpoint, alternating with the reference.
func (h *harness) readPath(ctx context.Context, n *node, s *SizeRun, withRef bool) {
	capDir := filepath.Join(h.work, "captures-"+slugify(s.Label))
	_ = os.MkdirAll(capDir, 0o755)
	for _, ep := range endpoints(s.Picked) {
		if ctx.Err() != nil {
			return
		}
		r := &EPResult{Endpoint: ep}
		s.Endpoints = append(s.Endpoints, r)
		c, err := capture(ctx, n.api, ep.Path, capDir, slugify(ep.Name))
		r.Capture = c
		if err != nil {
			r.Err = err.Error()
			h.logf("%-20s skipped: %v", ep.Name, err)
			continue
		}
		var ref *Proc
		refURL := ""
		if withRef {
			ref, refURL, err = h.startRef(ctx, c, filepath.Join(capDir, slugify(ep.Name)+".benchref.log"))
			if err != nil {
				r.Err = "reference: " + err.Error()
			} else {
				r.Ref = &Measured{}
			}
		}
		// Warm-up, not counted: first-touch costs (connections, caches, GC
		// sizing) of both servers.
		warm := h.o.Wrk
		warm.Duration = time.Second
		_, _, _ = runWrk(ctx, warm, n.api+ep.Path)
		if ref != nil {
			_, _, _ = runWrk(ctx, warm, refURL+ep.Path)
		}
		for i := 0; i < h.o.Runs && ctx.Err() == nil; i++ {
			st, out, err := runWrk(ctx, h.o.Wrk, n.api+ep.Path)
			if err != nil {
				r.Err = err.Error()
				h.logf("wrk: %v\n%s", err, out)
				break
			}
			r.Marketd.Add(st)
			if ref != nil {
				rst, out, err := runWrk(ctx, h.o.Wrk, refURL+ep.Path)
				if err != nil {
					r.Err = "reference wrk: " + err.Error()
					h.logf("wrk: %v\n%s", err, out)
					break
				}
				r.Ref.Add(rst)
			}
		}
		if ref != nil {
			_, _ = ref.Stop(10 * time.Second)
		}
		m := r.Marketd.Median
		line := fmt.Sprintf("%-20s %6d B  marketd %8.0f rps p50 %-8s p99 %-8s", ep.Name, c.BodyBytes, m.RPS, fmtDur(m.P50), fmtDur(m.P99))
		if r.Ref != nil && len(r.Ref.Runs) > 0 {
			rm := r.Ref.Median
			line += fmt.Sprintf(" | ref %8.0f rps p50 %-8s p99 %-8s | %.2f×", rm.RPS, fmtDur(rm.P50), fmtDur(rm.P99), r.RPSRatio())
		}
		if m.Non2xx > 0 || m.SockErrs > 0 {
			line += fmt.Sprintf("  (non-2xx %d, socket errors %d)", m.Non2xx, m.SockErrs)
		}
		h.logf("%s", line)
	}
}

// startRef starts benchref on the server core with a captured response and
// waits until it answers.
func (h *harness) startRef(ctx context.Context, c Capture, logPath string) (*Proc, string, error) {
	addr, err := freePort()
	if err != nil {
		return nil, "", err
	}
	p, err := startProc("benchref", h.o.ServerCore, logPath, h.bin("benchref"), "--addr", addr, "--body", c.BodyFile, "--headers", c.HeaderFile)
	if err != nil {
		return nil, "", err
	}
	u := "http://" + addr
	for i := 0; i < 100; i++ {
		if st, _, _, err := get(ctx, u+"/"); err == nil && st == http.StatusOK {
			return p, u, nil
		}
		if p.Exited() {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	_, _ = p.Stop(5 * time.Second)
	return nil, "", fmt.Errorf("benchref did not answer (log %s)", logPath)
}

func (h *harness) freshness(ctx context.Context, n *node, p Picked) {
	paths := pollSet(p.Candidates, 20)
	h.logf("freshness: %d repetitions (bound %s), watching %d paths", h.o.FreshReps, h.o.FreshBudget, len(paths))
	start := time.Now()
	for i := 0; i < h.o.FreshReps && ctx.Err() == nil; i++ {
		if i > 0 && time.Since(start) > h.o.FreshBudget {
			h.note("freshness: stopped after %d of %d repetitions: the phase's %s bound was used up (one cycle takes %s)",
				i, h.o.FreshReps, h.o.FreshBudget, fmtDur(h.res.Fresh[i-1].Returned))
			return
		}
		base := stableBaseline(ctx, n.api, paths)
		if len(base) == 0 {
			h.res.FreshErr = "no path answered the same body twice in a row; nothing to watch"
			return
		}
		s, summary, err := freshOnce(ctx, n.api, n.admin, n.sim, base, 4, h.o.CycleTimeout, 2*time.Second)
		if err != nil {
			h.res.FreshErr = fmt.Sprintf("repetition %d: %v", i+1, err)
			return
		}
		h.res.Fresh = append(h.res.Fresh, s)
		h.res.FreshSummary = trimJSON(summary, 1500)
		h.logf("fresh %2d: publish end %-8s first served %-8s last served %-8s ingest answered %-8s (%d/%d paths changed; last %s)",
			i+1, pubStr(s), fmtDur(s.Served), fmtDur(s.LastServed), fmtDur(s.Returned), s.Changed, s.Watched, s.LastURL)
	}
}

func pubStr(s FreshSample) string {
	if !s.HasPublish {
		return "n/a"
	}
	return fmtDur(s.Published)
}

// replay times `marketd replay` and its floor (floorWrite) on the
// store the stopped node left.
func (h *harness) replay(ctx context.Context, s *SizeRun) {
	r := &ReplayRun{Label: s.Label}
	h.res.Replays = append(h.res.Replays, r)
	store := filepath.Join(s.DataDir, "nats")
	rawBound := 2 * time.Minute
	raw := func() {
		out, _, err := runCmd(ctx, rawBound, "", "taskset", "-c", h.allCores(), h.bin("benchconsume"), "--store-dir", store, "--stream", "MARKETD_STATE,MARKETD_SALES", "--json", "--timeout", rawBound.String())
		if err != nil {
			r.Err = fmt.Sprintf("raw consumer: %v: %s", err, tail(out, 3))
			return
		}
		var c ConsumeResult
		if err := json.Unmarshal([]byte(lastLine(out)), &c); err != nil {
			r.Err = "raw consumer: bad output: " + err.Error()
			return
		}
		r.Raw = append(r.Raw, &c)
		r.Msgs, r.Bytes = c.Total.Msgs, c.Total.Bytes
		if w := time.Duration(c.Total.Seconds * float64(time.Second)); w > 0 && (r.RawWall == 0 || w < r.RawWall) {
			r.RawWall = w
		}
		if c.Total.PerSec > r.RawMax {
			r.RawMax = c.Total.PerSec
		}
	}
	h.logf("replay %s: raw ordered consumer on %s", s.Label, store)
	raw()
	bound := h.bound(h.o.ReplayTimeout, 90*time.Second)
	h.logf("replay %s: marketd replay --data-dir %s (bound %s)", s.Label, s.DataDir, bound)
	// Unpinned, like the raw consumer it is compared with.
	argv := []string{h.bin("marketd"), "replay", "--data-dir", s.DataDir, "--log-format", "json"}
	out, wall, peak, err := runCmdRSS(ctx, bound, "", argv...)
	r.Wall, r.PeakRSS = wall, peak
	r.Output = tail(out, 6)
	if err != nil {
		r.Err = strings.TrimSpace(strings.TrimPrefix(r.Err+"; replay: "+err.Error(), "; "))
		// A replay cut off by its bound still shows how far it got.
		if done, ok := replayProgress(out); ok && wall > 0 {
			r.Partial, r.Rate = done, float64(done)/wall.Seconds()
		}
	} else if r.Msgs > 0 && wall > 0 {
		r.Rate = float64(r.Msgs) / wall.Seconds()
	}
	raw()
	h.logf("replay %s: %d msgs (%s) in %s = %.0f msgs/s, peak RSS %s; raw consumer best %.0f msgs/s (%.2f×)", s.Label, r.Msgs, mib(r.Bytes),
		wall.Round(time.Millisecond), r.Rate, mib(r.PeakRSS), r.RawMax, ratio(r.Rate, r.RawMax))
	if err == nil && ctx.Err() == nil {
		h.floorWrite(ctx, s, r)
	}
}

// floorWrite measures the write half of the floor: every record of the
// store the replay just built, loaded into memory and sorted, written into
// a fresh store by StreamWriter with the node's options, the fastest write
// Badger offers (BenchmarkStreamWriterStore, twice; ns/op is the mean).
// With the raw read it is what any build of this store costs at least on
// this machine, so replay's ratio to it measures the projector alone.
func (h *harness) floorWrite(ctx context.Context, s *SizeRun, r *ReplayRun) {
	w := &FloorWrite{}
	r.Write = w
	// go test runs in the package's directory: the store's path must not
	// be relative to the harness's.
	src, err := filepath.Abs(filepath.Join(s.DataDir, "badger"))
	if err != nil {
		w.Err = err.Error()
		return
	}
	h.logf("replay %s: floor write, StreamWriter of %s's records", s.Label, src)
	out, _, err := runCmd(ctx, h.bound(20*time.Minute, 60*time.Second), h.o.RepoDir, "env", "MARKETD_BENCH_STORE="+src,
		"taskset", "-c", h.allCores(), "go", "test", "-count=1", "-run", "^$", "-bench", "^BenchmarkStreamWriterStore$",
		"-benchtime", "2x", "-timeout", "19m", "./readmodel/store")
	if err != nil {
		w.Err = fmt.Sprintf("%v: %s", err, tail(out, 8))
		return
	}
	b, ok := parseStreamWriterBench(out)
	if !ok {
		w.Err = "no BenchmarkStreamWriterStore line in: " + tail(out, 3)
		return
	}
	*w = b
	h.logf("replay %s: floor %s (raw read %s + write %s of %d records); replay %s = %.2f × the floor", s.Label,
		fmtDur(r.Floor()), fmtDur(r.RawWall), fmtDur(w.Wall), w.Records, fmtDur(r.Wall), ratio(r.Wall.Seconds(), r.Floor().Seconds()))
}

// parseStreamWriterBench reads BenchmarkStreamWriterStore's result line:
// "BenchmarkStreamWriterStore-2  2  6660000000 ns/op  350.1 MB/s  1.2 cpu-s/GB  3500000 records".
func parseStreamWriterBench(out string) (FloorWrite, bool) {
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) < 4 || !strings.HasPrefix(f[0], "BenchmarkStreamWriterStore") {
			continue
		}
		var w FloorWrite
		ok := false
		for i := 1; i+1 < len(f); i++ {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			switch f[i+1] {
			case "ns/op":
				w.Wall, ok = time.Duration(v), v > 0
			case "MB/s":
				w.MBps = v
			case "records":
				w.Records = int(v)
			}
		}
		return w, ok
	}
	return FloorWrite{}, false
}

func (h *harness) goBench(ctx context.Context) {
	h.logf("go test -bench (benchtime %s)", h.o.BenchTime)
	out, _, err := runCmd(ctx, 8*time.Minute, h.o.RepoDir, "taskset", "-c", h.allCores(), "go", "test", "-count=1", "-run", "^$", "-bench", ".", "-benchmem",
		"-benchtime", h.o.BenchTime, "-timeout", "7m", "./httpapi/...", "./readmodel/...")
	h.res.GoBench = filterBench(out)
	if err != nil {
		h.res.GoBenchErr = err.Error()
	}
}

// filterBench keeps the lines of go test -bench output that matter.
func filterBench(out string) string {
	var keep []string
	for _, l := range strings.Split(out, "\n") {
		t := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(t, "Benchmark"), strings.HasPrefix(t, "ok "), strings.HasPrefix(t, "FAIL"),
			strings.HasPrefix(t, "--- FAIL"), strings.HasPrefix(t, "pkg:"), strings.HasPrefix(t, "cpu:"),
			strings.HasPrefix(t, "panic"), strings.Contains(t, "build failed"), strings.HasPrefix(t, "#"):
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// trimJSON compacts a JSON body and cuts it to n bytes.
func trimJSON(b []byte, n int) string {
	var v any
	s := strings.TrimSpace(string(b))
	if json.Unmarshal(b, &v) == nil {
		if c, err := json.Marshal(v); err == nil {
			s = string(c)
		}
	}
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}

// scrapeMetrics returns the marketd_* samples of the admin /metrics (what
// ingest and the projector had done), for a report on a phase that timed out.
func scrapeMetrics(ctx context.Context, admin string) string {
	st, _, b, err := get(ctx, admin+"/metrics")
	if err != nil || st != http.StatusOK {
		return fmt.Sprintf("(metrics unavailable: status %d %v)", st, err)
	}
	var keep []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "marketd_") || strings.HasPrefix(l, "process_resident_memory_bytes") || strings.HasPrefix(l, "process_cpu_seconds_total") {
			keep = append(keep, l)
		}
	}
	if len(keep) > 60 {
		keep = append(keep[:60], "…")
	}
	return strings.Join(keep, "\n")
}

// stillThere reports whether every endpoint of p answers 200 on api.
func stillThere(ctx context.Context, api string, p Picked) bool {
	for _, ep := range endpoints(p) {
		if st, _, _, err := get(ctx, api+ep.Path); err != nil || st != http.StatusOK {
			return false
		}
	}
	return true
}

// replayProgress finds the message count of replay's last progress line,
// "replay: N messages, ...".
func replayProgress(out string) (int, bool) {
	lines := strings.Split(out, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		rest, ok := strings.CutPrefix(strings.TrimSpace(lines[i]), "replay: ")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) >= 2 && strings.HasPrefix(f[1], "messages") {
			if n, err := strconv.Atoi(f[0]); err == nil {
				return n, true
			}
		}
	}
	return 0, false
}

// pin moves every thread of pid to the CPU list core.
func pin(ctx context.Context, pid int, core string) error {
	out, _, err := runCmd(ctx, 10*time.Second, "", "taskset", "-a", "-p", "-c", core, strconv.Itoa(pid))
	if err != nil {
		return fmt.Errorf("%v: %s", err, strings.TrimSpace(out))
	}
	return nil
}

// metricValue returns the value of an unlabelled metric on admin /metrics,
// or "?".
func metricValue(ctx context.Context, admin, name string) string {
	st, _, b, err := get(ctx, admin+"/metrics")
	if err != nil || st != http.StatusOK {
		return "?"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, name+" "); ok {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}

// backgroundWindow is how long background samples marketd's CPU after
// the reads.
const backgroundWindow = 10 * time.Second

// background measures what marketd did besides answering: the sweep's
// time during the reads (sweep0 is its counter before them) and its CPU
// over backgroundWindow after them, with no load.
func (h *harness) background(ctx context.Context, n *node, sweep0 float64, reads time.Duration) *Background {
	bg := &Background{Reads: reads, Sweep: -1, Window: backgroundWindow}
	if sweep1 := sweepSeconds(ctx, n.admin); sweep0 >= 0 && sweep1 >= sweep0 {
		bg.Sweep = time.Duration((sweep1 - sweep0) * float64(time.Second))
	}
	c0, err := readCPU(n.p.Pid())
	if err != nil {
		return bg
	}
	select {
	case <-ctx.Done():
		return bg
	case <-time.After(backgroundWindow):
	}
	if c1, err := readCPU(n.p.Pid()); err == nil {
		bg.Cores = (c1 - c0).Seconds() / backgroundWindow.Seconds()
	}
	h.logf("%s", backgroundNote(bg))
	return bg
}

// sweepSeconds reads marketd_projector_sweep_seconds_total; -1 when the
// build or the scrape does not have it.
func sweepSeconds(ctx context.Context, admin string) float64 {
	v, err := strconv.ParseFloat(metricValue(ctx, admin, "marketd_projector_sweep_seconds_total"), 64)
	if err != nil {
		return -1
	}
	return v
}

// allCores is the taskset list of every online CPU. The harness itself runs
// pinned to the wrk core and children inherit that, so "unpinned" children
// are started with this list explicitly.
func (h *harness) allCores() string {
	n, err := strconv.Atoi(h.res.Machine["nproc"])
	if err != nil || n < 1 {
		n = runtime.NumCPU()
	}
	return fmt.Sprintf("0-%d", n-1)
}

// tokensFlag is marketd's flag for the simulator's tokens per collection,
// if this build has one ("" otherwise).
func (h *harness) tokensFlag(ctx context.Context) string {
	out, _, _ := runCmd(ctx, 10*time.Second, "", h.bin("marketd"), "sim", "-h")
	return findFlag(out, "sim-tokens")
}

// findFlag returns the first flag in a -h text whose name starts with
// prefix, as --name ("" if none).
func findFlag(help, prefix string) string {
	for _, f := range strings.Fields(help) {
		name := strings.TrimLeft(f, "-")
		if len(name) == len(f) {
			continue // not a flag
		}
		if name, _, _ = strings.Cut(name, "="); strings.HasPrefix(name, prefix) {
			return "--" + strings.TrimRight(name, ",")
		}
	}
	return ""
}

// Command benchrun is the performance harness behind `make bench`
// (scripts/bench builds it with marketd, benchref and benchconsume and runs
// it). In one bounded run it measures, and writes as a markdown report under
// bench-results/:
//
//  1. the read path: every public endpoint with wrk (pinned to its own core)
//     against marketd (pinned to another) and, alternately, against
//     benchref serving the same body with the same headers;
//  2. the same at a large market (--big collections);
//  3. freshness: time from a simulator tick to a changed body being served,
//     and the cost (wall, CPU) of one cycle at the large size;
//  4. replay against its floor on the same store: a raw ordered consumer
//     reading the streams plus StreamWriter writing the store replay built;
//  5. resident memory (steady, peak) at both sizes;
//  6. `go test -bench` of the handlers and the projector;
//
// and, for a lean node at ten million tokens, at the large size: the node
// inside a memory cgroup (cgroup.go: its usage, anonymous memory, major
// faults), a new `serve` node joining its streams (join.go), reads over a
// mixed set of endpoints while a cycle is applied (mixed.go), and the view
// store's bytes per token after three cycles and a value-log GC (phases.go,
// disk.go).
//
// Every phase has a timeout; a phase that fails or does not fit is written
// into the report as skipped, with the reason, and the run goes on.
//
// Settings come from flags or BENCH_* variables (see options). The process
// expects to run pinned off the server core (scripts/bench runs it with
// taskset on the wrk core).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// Options are the knobs of one run.
type Options struct {
	Quick         bool
	BinDir        string // holds marketd, benchref, benchconsume
	RepoDir       string // the product module's root, for go test -bench
	OutDir        string // where the report goes
	ServerCore    string // taskset list for marketd and benchref
	WrkCore       string // taskset list for wrk
	Wrk           WrkOptions
	Runs          int
	DemoSize      int
	BigSize       int // 0: skip the large market
	BigRef        bool
	FreshReps     int
	FreshBudget   time.Duration // the freshness phase stops starting repetitions after this
	ReadyTimeout  time.Duration // demo start-up
	BigReady      time.Duration // large start-up (first cycle)
	CycleTimeout  time.Duration
	ReplayTimeout time.Duration
	GoBench       bool
	BenchTime     string
	Budget        time.Duration // whole-run budget: later phases shrink or skip to fit (0: none)
	Keep          bool          // keep data dirs
	ExtraArgs     string        // extra marketd flags (space-separated)
	Medium        bool          // the medium preset: 10,000 collections, short runs
	// MemCap is the memory cgroup limit the large node runs under (0:
	// uncapped).
	MemCap      int64
	JoinTimeout time.Duration // a joining serve node's start-up bound
}

func defaultOptions(quick, medium bool) Options {
	o := Options{
		Quick: quick, BinDir: "bench-results/.bin", RepoDir: ".", OutDir: "bench-results",
		ServerCore: "0", WrkCore: "1",
		Wrk:  WrkOptions{Threads: 1, Connections: 64, Duration: 10 * time.Second},
		Runs: 3, DemoSize: 300, BigSize: 100_000, FreshReps: 20, FreshBudget: 2 * time.Minute,
		ReadyTimeout: 3 * time.Minute, BigReady: 5 * time.Minute, CycleTimeout: 4 * time.Minute,
		ReplayTimeout: 3 * time.Minute, GoBench: true, BenchTime: "1s", Budget: 45 * time.Minute,
		MemCap: 3 << 30, JoinTimeout: 3 * time.Minute,
	}
	switch {
	case quick:
		o.Wrk.Duration, o.Runs, o.BigSize, o.FreshReps, o.BenchTime = 2*time.Second, 1, 5000, 5, "100ms"
		o.FreshBudget, o.BigReady = time.Minute, 3*time.Minute
	case medium:
		// The size to iterate on the large node at: 10,000 collections x
		// 100 tokens, every phase of the full run, shorter wrk runs, no go
		// test -bench.
		o.Medium = true
		o.Wrk.Duration, o.Runs, o.BigSize, o.FreshReps = 5*time.Second, 1, 10_000, 5
		o.FreshBudget, o.BigReady, o.GoBench, o.Budget = time.Minute, 3*time.Minute, false, 25*time.Minute
	}
	return o
}

// parseOptions reads flags, falling back to BENCH_* variables, then the
// defaults (BENCH_QUICK=1 or --quick selects the short development mode).
func parseOptions(args []string, getenv func(string) string, stderr io.Writer) (Options, error) {
	quick, medium := getenv("BENCH_QUICK") == "1", getenv("BENCH_MEDIUM") == "1"
	for _, a := range args {
		switch a {
		case "--quick", "-quick", "--quick=true":
			quick = true
		case "--medium", "-medium", "--medium=true":
			medium = true
		}
	}
	if quick && medium {
		return defaultOptions(false, false), fmt.Errorf("quick and medium are two presets: choose one")
	}
	o := defaultOptions(quick, medium)
	fs := flag.NewFlagSet("benchrun", flag.ContinueOnError)
	fs.SetOutput(stderr)
	env := func(name, def string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return def
	}
	fs.Bool("quick", quick, "short development mode: 2 s runs, 1 repetition, small large-market (BENCH_QUICK=1)")
	fs.Bool("medium", medium, "the size to iterate on: 10,000 collections x 100 tokens, every phase, 5 s runs (BENCH_MEDIUM=1)")
	fs.StringVar(&o.BinDir, "bin-dir", env("BENCH_BIN_DIR", o.BinDir), "directory with marketd, benchref, benchconsume")
	fs.StringVar(&o.RepoDir, "repo", env("BENCH_REPO", o.RepoDir), "the product module's root (for go test -bench)")
	fs.StringVar(&o.OutDir, "out", env("BENCH_OUT", o.OutDir), "report directory")
	fs.StringVar(&o.ServerCore, "server-core", env("BENCH_SERVER_CORE", o.ServerCore), "taskset CPU list of the servers")
	fs.StringVar(&o.WrkCore, "wrk-core", env("BENCH_WRK_CORE", o.WrkCore), "taskset CPU list of wrk")
	dur := fs.Duration("duration", envDur(getenv, "BENCH_DURATION", o.Wrk.Duration), "one wrk run (BENCH_DURATION)")
	fs.IntVar(&o.Wrk.Connections, "connections", envInt(getenv, "BENCH_CONNECTIONS", o.Wrk.Connections), "wrk connections")
	fs.IntVar(&o.Wrk.Threads, "threads", envInt(getenv, "BENCH_THREADS", o.Wrk.Threads), "wrk threads")
	fs.IntVar(&o.Runs, "runs", envInt(getenv, "BENCH_RUNS", o.Runs), "wrk runs per target (medians)")
	fs.IntVar(&o.DemoSize, "demo", envInt(getenv, "BENCH_DEMO", o.DemoSize), "demo market size in collections")
	fs.IntVar(&o.BigSize, "big", envInt(getenv, "BENCH_BIG", o.BigSize), "large market size in collections (0: skip)")
	fs.BoolVar(&o.BigRef, "big-ref", getenv("BENCH_BIG_REF") == "1", "also run the reference at the large size")
	fs.IntVar(&o.FreshReps, "fresh-reps", envInt(getenv, "BENCH_FRESH_REPS", o.FreshReps), "freshness repetitions")
	fs.DurationVar(&o.FreshBudget, "fresh-budget", envDur(getenv, "BENCH_FRESH_BUDGET", o.FreshBudget), "time bound of the freshness phase")
	fs.DurationVar(&o.ReadyTimeout, "ready-timeout", envDur(getenv, "BENCH_READY_TIMEOUT", o.ReadyTimeout), "demo start-up bound")
	fs.DurationVar(&o.BigReady, "big-ready-timeout", envDur(getenv, "BENCH_BIG_READY_TIMEOUT", o.BigReady), "large start-up bound")
	fs.DurationVar(&o.CycleTimeout, "cycle-timeout", envDur(getenv, "BENCH_CYCLE_TIMEOUT", o.CycleTimeout), "one ingest cycle bound")
	fs.DurationVar(&o.ReplayTimeout, "replay-timeout", envDur(getenv, "BENCH_REPLAY_TIMEOUT", o.ReplayTimeout), "one replay bound")
	fs.BoolVar(&o.GoBench, "gobench", o.GoBench && getenv("BENCH_SKIP_GOBENCH") != "1", "run go test -bench (BENCH_SKIP_GOBENCH=1: no)")
	fs.StringVar(&o.BenchTime, "benchtime", env("BENCH_BENCHTIME", o.BenchTime), "go test -benchtime")
	fs.DurationVar(&o.Budget, "budget", envDur(getenv, "BENCH_BUDGET", o.Budget), "whole-run budget; later phases shrink or are skipped to fit (0: none)")
	fs.BoolVar(&o.Keep, "keep", getenv("BENCH_KEEP") == "1", "keep the data directories")
	fs.StringVar(&o.ExtraArgs, "marketd-args", getenv("BENCH_MARKETD_ARGS"), "extra marketd flags")
	memcap := fs.String("memcap", env("BENCH_MEMCAP", "3G"), "memory cgroup limit of the large node and the joining node (0: uncapped)")
	fs.DurationVar(&o.JoinTimeout, "join-timeout", envDur(getenv, "BENCH_JOIN_TIMEOUT", o.JoinTimeout), "a joining serve node's start-up bound")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.Wrk.Duration = *dur
	o.Wrk.Core = o.WrkCore
	mc, err := parseSize(*memcap)
	if err != nil {
		return o, err
	}
	o.MemCap = mc
	switch {
	case o.Runs < 1, o.Wrk.Connections < 1, o.Wrk.Threads < 1, o.Wrk.Duration < time.Second:
		return o, fmt.Errorf("runs, connections, threads must be ≥ 1 and duration ≥ 1s")
	case o.DemoSize < 1, o.BigSize < 0, o.FreshReps < 0:
		return o, fmt.Errorf("demo ≥ 1, big ≥ 0, fresh-reps ≥ 0")
	}
	return o, nil
}

func envInt(getenv func(string) string, name string, def int) int {
	if v, err := strconv.Atoi(getenv(name)); err == nil {
		return v
	}
	return def
}

func envDur(getenv func(string) string, name string, def time.Duration) time.Duration {
	if v, err := time.ParseDuration(getenv(name)); err == nil {
		return v
	}
	return def
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) == 2 && args[0] == "--render" {
		if err := renderFrom(args[1]); err != nil {
			fmt.Fprintf(stderr, "benchrun: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "rendered %s and its README section from %s\n", strings.TrimSuffix(args[1], ".json")+".md", args[1])
		return 0
	}
	o, err := parseOptions(args, getenv, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "benchrun: %v\n", err)
		return 2
	}
	for _, b := range []string{"marketd", "benchref", "benchconsume"} {
		if _, err := os.Stat(filepath.Join(o.BinDir, b)); err != nil {
			fmt.Fprintf(stderr, "benchrun: %v (scripts/bench builds it)\n", err)
			return 2
		}
	}
	h := &harness{o: o, out: stdout, res: &Results{Started: time.Now(), Options: o}}
	stamp := h.res.Started.UTC().Format("20060102-150405")
	h.work = filepath.Join(o.OutDir, "work-"+stamp)
	if err := os.MkdirAll(h.work, 0o755); err != nil {
		fmt.Fprintf(stderr, "benchrun: %v\n", err)
		return 1
	}
	h.run(ctx)
	h.res.Finished = time.Now()
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		h.res.Machine["loadEnd"] = strings.Join(strings.Fields(string(b))[:3], " ")
	}
	path := filepath.Join(o.OutDir, stamp+".md")
	switch {
	case o.Quick:
		path = filepath.Join(o.OutDir, stamp+"-quick.md")
	case o.Medium:
		path = filepath.Join(o.OutDir, stamp+"-medium.md")
	}
	if err := os.WriteFile(path, []byte(renderReport(h.res)), 0o644); err != nil {
		fmt.Fprintf(stderr, "benchrun: write report: %v\n", err)
		return 1
	}
	readme := strings.TrimSuffix(path, ".md") + "-readme.md"
	if err := os.WriteFile(readme, []byte(renderReadme(h.res, path)), 0o644); err != nil {
		fmt.Fprintf(stderr, "benchrun: write README section: %v\n", err)
	}
	if js, err := json.MarshalIndent(h.res, "", "  "); err == nil {
		_ = os.WriteFile(strings.TrimSuffix(path, ".md")+".json", js, 0o644)
	}
	if !o.Keep {
		for _, s := range h.res.Sizes {
			os.RemoveAll(s.DataDir)
		}
	}
	fmt.Fprintf(stdout, "\nREADME Performance section for this run: %s\nreport: %s\n", readme, path)
	return 0
}

// renderFrom rewrites a run's report and README section from the results
// it saved (RUN.json beside RUN.md): `benchrun --render RUN.json`, after a
// change to how reports are written.
func renderFrom(file string) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var res Results
	if err := json.Unmarshal(b, &res); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	path := strings.TrimSuffix(file, ".json") + ".md"
	if err := os.WriteFile(path, []byte(renderReport(&res)), 0o644); err != nil {
		return err
	}
	return os.WriteFile(strings.TrimSuffix(path, ".md")+"-readme.md", []byte(renderReadme(&res, path)), 0o644)
}

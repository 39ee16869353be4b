package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func measured(rps float64, p99 time.Duration) Measured {
	var m Measured
	m.Add(Stat{RPS: rps, P50: p99 / 2, P99: p99, Requests: int64(rps * 10)})
	return m
}

func sampleResults() *Results {
	ref := measured(30000, 4*time.Millisecond)
	demo := &SizeRun{Label: "demo", Collections: 300, Ready: 2 * time.Second, ReadyOK: true, Endpoints: []*EPResult{
		{Endpoint: Endpoint{Name: "floor"}, Capture: Capture{BodyBytes: 600}, Marketd: measured(27000, 5*time.Millisecond), Ref: &ref},
		{Endpoint: Endpoint{Name: "token"}, Capture: Capture{BodyBytes: 900}, Marketd: measured(20000, 9*time.Millisecond), Ref: &ref},
	}, Mixed: []*MixedRun{{Label: "idle", Duration: 10 * time.Second, Stat: Stat{RPS: 25000, P50: time.Millisecond, P99: 4 * time.Millisecond, Requests: 250000}}}}
	big := &SizeRun{Label: "large", Collections: 100000, TokensPerCollection: 100, Ready: 90 * time.Second, ReadyOK: true, ReadyCPU: 100 * time.Second,
		PeakRSS: 2 << 30, MaxAnon: 900 << 20, MemSteady: Mem{RSS: 1 << 30},
		Faults: Faults{AtReady: 100, AfterReads: 150, AfterCycles: 400, End: 410},
		Cgroup: &CgroupRun{Mechanism: mechV1, Dir: "/sys/fs/cgroup/memory/x/marketd-bench-large-1", Limit: 3 << 30,
			Why:     "cgroup v2: no memory controller; systemd-run: PID 1 is not systemd",
			AtReady: CgroupStat{Usage: 2 << 30, Anon: 800 << 20, File: 1200 << 20, MajFaults: 90},
			End:     CgroupStat{Usage: 3 << 30, Anon: 900 << 20, File: 2100 << 20, MajFaults: 400, LimitHits: 12},
			Peak:    3 << 30, SampledPeak: 3000 << 20},
		Cycle: &CycleRun{Ticks: 1, Lag: -30 * time.Second, Published: 700, Wall: 30 * time.Second, CPU: 40 * time.Second, SimCPU: 12 * time.Second},
		MoreCycles: []*CycleRun{
			{Ticks: 1, Lag: -2 * time.Minute, Published: 690, Wall: 45 * time.Second, CPU: 44 * time.Second, SimCPU: 11 * time.Second},
			{Ticks: 1, Lag: -4 * time.Minute, Published: 710, Wall: 50 * time.Second, CPU: 46 * time.Second, SimCPU: 11 * time.Second},
		},
		Mixed: []*MixedRun{
			{Label: "idle", Duration: 10 * time.Second, Stat: Stat{RPS: 24000, P99: 5 * time.Millisecond, Requests: 240000}},
			{Label: "during cycle 2", During: true, Duration: 10 * time.Second, Overlap: 1, Stat: Stat{RPS: 15000, P99: 7 * time.Millisecond, Requests: 150000}},
			{Label: "during cycle 3", During: true, Duration: 10 * time.Second, Overlap: 0.5, Stat: Stat{RPS: 14000, P99: 9 * time.Millisecond, Requests: 140000}},
		},
		Store: &StoreRun{Tokens: 10_000_000, Cycles: 3, GCRewrites0: 4, GCRewrites1: 6, GCNote: "waited 70s",
			Live: DiskUsage{Apparent: 3 << 30, OnDisk: 2 << 30, Files: 40}, Stopped: DiskUsage{Apparent: 2_000_000_000, OnDisk: 2_100_000_000, Files: 38},
			Streams: DiskUsage{Apparent: 1 << 30, OnDisk: 1 << 30, Files: 10}},
		Join: &JoinRun{NatsURL: "nats://127.0.0.1:4222", Ready: 45 * time.Second, ReadyOK: true, CPU: 60 * time.Second, PeakRSS: 700 << 20,
			Snapshot: &SnapshotRun{Took: 20 * time.Second, Bytes: 400 << 20}, Restored: true, RestoreTook: 12 * time.Second},
		Endpoints: []*EPResult{
			{Endpoint: Endpoint{Name: "floor"}, Marketd: measured(26000, 5*time.Millisecond)},
			{Endpoint: Endpoint{Name: "token"}, Marketd: measured(10000, 9*time.Millisecond)},
		}}
	return &Results{
		Started: time.Date(2026, 11, 22, 19, 0, 0, 0, time.UTC), Finished: time.Date(2026, 11, 22, 19, 15, 0, 0, time.UTC),
		Options: defaultOptions(false, false), Machine: map[string]string{"nproc": "2"},
		Sizes: []*SizeRun{demo, big},
		Fresh: []FreshSample{
			{Observed: true, Served: 800 * time.Millisecond, LastServed: 900 * time.Millisecond, Returned: 950 * time.Millisecond, Published: 850 * time.Millisecond, HasPublish: true},
			{Observed: true, Served: 700 * time.Millisecond, LastServed: 700 * time.Millisecond, Returned: 720 * time.Millisecond, Published: 690 * time.Millisecond, HasPublish: true},
		},
		Replays: []*ReplayRun{{Label: "large", Msgs: 1000, Bytes: 300 << 20, Wall: time.Second, Rate: 1000, RawMax: 1500, PeakRSS: 800 << 20,
			RawWall: 300 * time.Millisecond, Write: &FloorWrite{Wall: 550 * time.Millisecond, Records: 4000, MBps: 120}}},
		GoBench: "BenchmarkX-2   100   10 ns/op   0 B/op   0 allocs/op",
	}
}

func TestVerdicts(t *testing.T) {
	vs := verdicts(sampleResults())
	require.Len(t, vs, 13)
	want := []struct{ measured, met string }{
		{"lowest 0.67 (token)", "**NO**"},
		{"highest 2.25 (token)", "**NO**"},
		{"lowest 0.50 (token)", "**NO**"},
		{"p99 50.0ms last change served after publish end, 2/2 observed", "yes"},
		{"cycle of 1 tick(s), 700 messages: 30.00s wall, 40.00s CPU (0.33 cores over the interval); first full cycle 90.00s wall, 100.00s CPU", "yes"},
		{"large: 1.18 (replay 1.00s, floor 850.0ms = raw read 300.0ms + write 550.0ms; 1000 msgs, 300 MiB)", "yes"},
		// Anonymous memory is within 1 GiB, but the reads were not at full
		// speed inside the group (the token at 0.50 × demo).
		{"cgroup v1 (3 GiB): ready after 90.00s; reads lowest 0.50 (token); group peak 3072 MiB; anonymous peak 900 MiB (sampled), peak RSS 2048 MiB; major faults 50 during the reads; OOM kills 0", "**NO**"},
		{"210 bytes per token (2003 MiB for 10000000 tokens, after 3 cycle(s) besides the first)", "yes"},
		{"ready after 45.00s, 60.00s CPU, peak RSS 700 MiB", "yes"},
		{"90.00s wall, 100.00s CPU (inside the 3 GiB cgroup)", "yes"},
		{"highest 1.00 (floor)", "yes"},
		{"during cycle 2: p99 7.00ms = 1.75 × demo's 4.00ms (cycle applied during 100% of the run); during cycle 3: p99 9.00ms = 2.25 × demo's 4.00ms (cycle applied during 50% of the run)", "**NO**"},
		{"large: peak 800 MiB", "yes"},
	}
	for i, w := range want {
		assert.Contains(t, vs[i].measured, w.measured, vs[i].target)
		assert.Equal(t, w.met, vs[i].met, vs[i].target)
	}
}

func TestVerdictsWithNothingMeasured(t *testing.T) {
	vs := verdicts(&Results{})
	for _, v := range vs {
		assert.Equal(t, "?", v.met, v.target)
	}
}

func TestRenderReport(t *testing.T) {
	out := renderReport(sampleResults())
	for _, s := range []string{
		"## Targets",
		"| floor | 600 | 27000 | 2.50ms | 5.00ms | 30000 | 2.00ms | 4.00ms | 0.90 | 1.25 | yes |",
		"## Freshness (demo size)",
		"| large | 1 tick(s), the market 30s ahead of the wall clock before them, then POST /admin/ingest (700 messages) | 30.00s | 40.00s | 1.33 | 0.33 | 12.00s |",
		"| large | cycle 2, pinned to the server core, the mixed reads running: 1 tick(s), the market 2m0s ahead of the wall clock before them (690 messages) | 45.00s | 44.00s (reads included) | 0.98 | – | 11.00s |",
		"| large | 1000 | 300 MiB | 1.00s | 1000 | 300.0ms | 550.0ms (4000 records, 120 MB/s) | 850.0ms | 1.18 | yes | 800 MiB |",
		"## Read path — large: 100000 collections, 100 tokens per collection (10000000 in all)",
		"| token | 0 | 10000 | 4.50ms | 9.00ms | 20000 | 0.50 | 9.00ms | 1.00 | – | – | **NO** | yes |",
		"marketd ran inside a 3 GiB memory cgroup (cgroup v1); the demo node ran uncapped.",
		"## Reads while a cycle is applied",
		"| demo | idle | 10.00s | 25000 | 1.00ms | 4.00ms | – | – | – | – |",
		"| large | idle | 10.00s | 24000 | 0 | 5.00ms | – | 1.25 | yes | – |",
		"| large | during cycle 2 | 10.00s | 15000 | 0 | 7.00ms | 1.40 | 1.75 | yes | 100% |",
		"| large | during cycle 3 | 10.00s | 14000 | 0 | 9.00ms | 1.80 | 2.25 | **NO** | 50% |",
		"## A new serve node joining (large)",
		"it published its views snapshot (`POST /admin/snapshot`: 400 MiB in 20.00s; the serve node restored it in 12.00s), then `marketd serve --nats nats://127.0.0.1:4222` started on an empty data dir (unpinned; memory cgroup: none)",
		"| 45.00s | 60.00s | 700 MiB | n/a / n/a | yes |",
		"## View store on disk (large)",
		"| **after a clean stop** (judged) | 1907 MiB | 2003 MiB | 38 | 210 |",
		"| large | 3 GiB, cgroup v1 | n/a | n/a / n/a | 1024 MiB | 2048 MiB | 900 MiB | yes |",
		"### large: inside a 3 GiB memory cgroup",
		"Mechanism: cgroup v1 (a child of the harness's own group on the v1 memory hierarchy, `memory.limit_in_bytes`",
		"Not used: cgroup v2: no memory controller; systemd-run: PID 1 is not systemd.",
		"| at the end | 3072 MiB | 900 MiB | 2100 MiB | 400 | 0 | 12 |",
		"100 during start-up to ready, 50 from ready through the first cycle and the reads, 250 during the cycles with reads, 10 after them.",
		"BenchmarkX-2",
	} {
		assert.Contains(t, out, s)
	}
	assert.False(t, strings.Contains(out, "QUICK"), "a full run is not labelled quick")
}

func TestVerdictCycle(t *testing.T) {
	for _, tc := range []struct {
		name          string
		cycle         *CycleRun
		measured, met string
	}{
		{name: "one step within the interval and a core", cycle: &CycleRun{Ticks: 1, Wall: 100 * time.Second, CPU: 110 * time.Second},
			measured: "cycle of 1 tick(s), 0 messages: 100.00s wall", met: "yes"},
		{name: "over the interval", cycle: &CycleRun{Ticks: 1, Wall: 121 * time.Second, CPU: 100 * time.Second},
			measured: "121.00s wall", met: "**NO**"},
		{name: "over a core", cycle: &CycleRun{Ticks: 1, Wall: 100 * time.Second, CPU: 121 * time.Second},
			measured: "(1.01 cores over the interval)", met: "**NO**"},
		{name: "more than a step of change is not an interval's cycle",
			cycle:    &CycleRun{Ticks: 3, Lag: 5 * time.Minute, Wall: 100 * time.Second, CPU: 100 * time.Second},
			measured: "more than one step of change: the market was 5m0s behind the wall clock", met: "**NO**"},
		{name: "failed", cycle: &CycleRun{Ticks: 1, Err: "admin ingest: status 500"},
			measured: "failed: admin ingest: status 500", met: "**NO**"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := sampleResults()
			r.Sizes[1].Cycle = tc.cycle
			v := verdicts(r)[4]
			assert.Contains(t, v.measured, tc.measured)
			assert.Equal(t, tc.met, v.met)
		})
	}
}

func TestVerdictLargeNotReady(t *testing.T) {
	r := sampleResults()
	big := r.Sizes[1]
	big.ReadyOK, big.Cycle, big.Endpoints, big.Skipped = false, nil, nil, "not ready after 5m0s"
	big.Ready, big.ReadyCPU = 5*time.Minute, 4*time.Minute
	vs := verdicts(r)
	assert.Equal(t, "**NO**", vs[4].met)
	assert.Contains(t, vs[4].measured, "had not been projected after 300.00s")
	assert.Equal(t, "?", vs[2].met, "no large read path measured")
	big.Faults = Faults{AtReady: -1, AfterReads: -1, AfterCycles: -1, End: 5000}
	big.Cgroup.AtReady = CgroupStat{}
	out := renderReport(r)
	assert.Contains(t, out, "**not ready** when the bound ran out")
	assert.Contains(t, out, "| at ready | – | – | – | – | – | – |")
	assert.Contains(t, out, "5000 in all (it was not ready)")
}

func TestRenderReadme(t *testing.T) {
	out := renderReadme(sampleResults(), "bench-results/x.md")
	assert.True(t, strings.HasPrefix(out, "## Performance\n"))
	assert.Contains(t, out, "### Targets")
	assert.Contains(t, out, "### Read path — demo")
	assert.Contains(t, out, "| floor | 600 | 27000 |")
	for _, target := range []string{
		"the large node serves at full speed inside a 3 GiB memory cgroup; anonymous ≤ 1 GiB",
		"view store ≤ 250 bytes per token and ≤ 3 GB after three cycles and a value-log GC",
		"a new serve node joining the large node's streams ready ≤ 60.00s",
		"`marketd all` on an empty data dir to ready ≤ 180.00s at 100000 collections",
		"read p99 at the large size ≤ 2 × demo p99, every endpoint",
		"read p99 while a cycle is applied at the large size ≤ 2 × demo p99 (mixed set)",
	} {
		assert.Contains(t, out, "| "+target+" |", "the large node's targets are in the README's table")
	}
	assert.NotContains(t, out, "RSS ≤ 1.5 GB", "the RSS target gave way to the memory cgroup's anonymous target")
	assert.NotContains(t, out, "## Freshness", "only the targets and the demo table")
	assert.Contains(t, out, "`bench-results/x.md`")
}

// TestFmtRatio: a ratio that two decimals would round onto its target is
// written with three, so a miss never reads as the target.
func TestFmtRatio(t *testing.T) {
	tests := []struct {
		name   string
		x, tgt float64
		want   string
	}{
		{"far below", 0.72, 0.85, "0.72"},
		{"just below rounds up onto it", 0.8465, 0.85, "0.847"},
		{"just above", 0.8521, 0.85, "0.852"},
		{"exactly the target", 0.85, 0.85, "0.85"},
		{"far above", 1.76, 2.0, "1.76"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, fmtRatio(tt.x, tt.tgt))
		})
	}
}

// TestRenderFromSavedResults: a run's saved results render the same report
// as the run wrote.
func TestRenderFromSavedResults(t *testing.T) {
	res := sampleResults()
	dir := t.TempDir()
	file := filepath.Join(dir, "run.json")
	js, err := json.MarshalIndent(res, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(file, js, 0o644))
	require.NoError(t, renderFrom(file))
	got, err := os.ReadFile(filepath.Join(dir, "run.md"))
	require.NoError(t, err)
	assert.Equal(t, renderReport(res), string(got))
	readme, err := os.ReadFile(filepath.Join(dir, "run-readme.md"))
	require.NoError(t, err)
	assert.Equal(t, renderReadme(res, filepath.Join(dir, "run.md")), string(readme))
}

// TestLargeNodeVerdicts: how each of the large node's targets reads when a
// phase could not run as planned.
func TestLargeNodeVerdicts(t *testing.T) {
	const (
		memory = 6 + iota
		store
		join
		ready
		p99
		during
		replayRSS
		replay = 5
	)
	tests := []struct {
		name          string
		change        func(r *Results)
		index         int
		measured, met string
	}{
		{name: "no cgroup on the machine", index: memory,
			change: func(r *Results) {
				r.Sizes[1].Cgroup = &CgroupRun{Limit: 3 << 30, Why: "cgroup v2: no memory controller; systemd-run: PID 1 is not systemd; cgroup v1: no memory controller mounted"}
			},
			measured: "not measured: no memory cgroup on this machine (cgroup v2: no memory controller", met: "?"},
		{name: "uncapped by choice", index: memory,
			change:   func(r *Results) { r.Sizes[1].Cgroup = nil },
			measured: "not measured: the large node ran uncapped (BENCH_MEMCAP=0)", met: "?"},
		{name: "at full speed and lean inside the group", index: memory,
			change: func(r *Results) {
				for _, e := range r.Sizes[1].Endpoints {
					e.Marketd = measured(27000, 5*time.Millisecond)
				}
			},
			measured: "reads lowest 1.00 (floor)", met: "yes"},
		{name: "killed by the group", index: memory,
			change: func(r *Results) {
				for _, e := range r.Sizes[1].Endpoints {
					e.Marketd = measured(27000, 5*time.Millisecond)
				}
				r.Sizes[1].Cgroup.End.OOMKills = 1
			},
			measured: "OOM kills 1", met: "**NO**"},
		{name: "not ready inside the group", index: memory,
			change:   func(r *Results) { r.Sizes[1].ReadyOK, r.Sizes[1].Endpoints = false, nil },
			measured: "**not ready** after 90.00s", met: "**NO**"},
		{name: "too many bytes per token", index: store,
			change:   func(r *Results) { r.Sizes[1].Store.Stopped = DiskUsage{Apparent: 20e9, OnDisk: 20e9, Files: 90} },
			measured: "2000 bytes per token", met: "**NO**"},
		{name: "fewer than three cycles", index: store,
			change:   func(r *Results) { r.Sizes[1].Store.Cycles = 1 },
			measured: "after 1 cycle(s) besides the first", met: "**NO**"},
		{name: "tokens unknown", index: store,
			change:   func(r *Results) { r.Sizes[1].Store.Tokens = 0 },
			measured: "tokens per collection unknown", met: "?"},
		{name: "a slow join", index: join,
			change:   func(r *Results) { r.Sizes[1].Join.Ready = 61 * time.Second },
			measured: "ready after 61.00s", met: "**NO**"},
		{name: "no NATS URL: replay is the proxy", index: join,
			change: func(r *Results) {
				r.Sizes[1].Join = &JoinRun{Proxy: "replay", Err: "no NATS URL for a serve node: expected one listening port"}
			},
			measured: "proxy: replay of the whole stream took 1.00s", met: "yes (proxy)"},
		{name: "medium size has its own start-up goal", index: ready,
			change:   func(r *Results) { r.Sizes[1].Collections = 10_000 },
			measured: "90.00s wall", met: "**NO**"},
		{name: "a p99 over twice the demo's", index: p99,
			change:   func(r *Results) { r.Sizes[1].Endpoints[1].Marketd = measured(10000, 19*time.Millisecond) },
			measured: "highest 2.11 (token)", met: "**NO**"},
		{name: "no demo mixed run", index: during,
			change:   func(r *Results) { r.Sizes[0].Mixed = nil },
			measured: "not measured", met: "?"},
		{name: "errors during the cycle fail it", index: during,
			change: func(r *Results) {
				r.Sizes[1].Mixed = r.Sizes[1].Mixed[:2]
				r.Sizes[1].Mixed[1].Stat.SockErrs = 3
			},
			measured: "during cycle 2: p99 7.00ms = 1.75 × demo's 4.00ms", met: "**NO**"},
		{name: "replay slower than 1.2 × its floor", index: replay,
			change:   func(r *Results) { r.Replays[0].Wall = 1100 * time.Millisecond },
			measured: "large: 1.29 (replay 1.10s, floor 850.0ms", met: "**NO**"},
		{name: "the floor's write failed", index: replay,
			change:   func(r *Results) { r.Replays[0].Write = &FloorWrite{Err: "exit status 1"} },
			measured: "large: floor not measured (replay 1.00s, 1000 msgs, 300 MiB), write: exit status 1", met: "?"},
		{name: "a failed replay fails whatever its floor", index: replay,
			change:   func(r *Results) { r.Replays[0].Err = "replay: signal: killed"; r.Replays[0].Write = nil },
			measured: "replay: signal: killed", met: "**NO**"},
		{name: "replay over 1 GiB", index: replayRSS,
			change:   func(r *Results) { r.Replays[0].PeakRSS = 2 << 30 },
			measured: "large: peak 2048 MiB", met: "**NO**"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := sampleResults()
			tc.change(r)
			v := verdicts(r)[tc.index]
			assert.Contains(t, v.measured, tc.measured, v.target)
			assert.Equal(t, tc.met, v.met, v.target)
		})
	}
}

func TestParseStreamWriterBench(t *testing.T) {
	out := "goos: linux\npkg: github.com/marketd/marketd/readmodel/store\n" +
		"BenchmarkStreamWriterStore-2   \t       2\t6660123456 ns/op\t  52.31 MB/s\t  3.10 cpu-s/GB\t 3500000 records\nPASS\n"
	w, ok := parseStreamWriterBench(out)
	require.True(t, ok)
	assert.Equal(t, FloorWrite{Wall: 6660123456, Records: 3500000, MBps: 52.31}, w)

	_, ok = parseStreamWriterBench("--- SKIP: BenchmarkStreamWriterStore\n    MARKETD_BENCH_STORE names no store to copy\nPASS\n")
	assert.False(t, ok, "a skipped benchmark has no result")
}

func TestReadyTarget(t *testing.T) {
	assert.Equal(t, 25*time.Second, readyTarget(10_000))
	assert.Equal(t, 180*time.Second, readyTarget(100_000))
}

func TestRenderCgroupNotAvailable(t *testing.T) {
	r := sampleResults()
	r.Sizes[1].Cgroup = &CgroupRun{Limit: 3 << 30, Why: "systemd-run: PID 1 is not systemd"}
	out := renderReport(r)
	assert.Contains(t, out, "**Not measured:** no memory cgroup could be made on this machine, so the node ran uncapped. Why: systemd-run: PID 1 is not systemd")
	assert.Contains(t, out, "| large | none (3 GiB asked, not available) |")
}

func TestRenderJoinProxy(t *testing.T) {
	r := sampleResults()
	r.Sizes[1].Join = &JoinRun{Proxy: "replay", Err: "no NATS URL for a serve node: x"}
	assert.Contains(t, renderReport(r), "**Not measured directly:** no NATS URL for a serve node: x. The replay of the whole stream (above) stands in for it")
}

// TestRPSRatioPairsRuns: the rps ratio pairs each marketd run with the
// reference run made right after it, so a machine whose speed flips
// between runs does not pair one server's slow runs with the other's
// fast ones.
func TestRPSRatioPairsRuns(t *testing.T) {
	runs := func(rps ...float64) []Stat {
		var s []Stat
		for _, r := range rps {
			s = append(s, Stat{RPS: r})
		}
		return s
	}
	tests := []struct {
		name      string
		m, ref    []float64
		want      float64
		noRefRuns bool
	}{
		{name: "equal servers on a machine that flips speed", m: []float64{16, 36, 16}, ref: []float64{16.5, 36, 17}, want: 16.0 / 16.5},
		{name: "a steady machine", m: []float64{80, 82, 81}, ref: []float64{100, 100, 100}, want: 0.81},
		{name: "no reference runs", m: []float64{80}, noRefRuns: true, want: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := &EPResult{Marketd: Measured{Runs: runs(tc.m...)}}
			if !tc.noRefRuns {
				e.Ref = &Measured{Runs: runs(tc.ref...)}
			}
			assert.InDelta(t, tc.want, e.RPSRatio(), 1e-9)
		})
	}
}

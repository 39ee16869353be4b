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
	}}
	big := &SizeRun{Label: "large", Collections: 100000, Ready: 90 * time.Second, ReadyOK: true, ReadyCPU: 100 * time.Second,
		PeakRSS: 2 << 30, MemSteady: Mem{RSS: 1 << 30},
		Cycle: &CycleRun{Ticks: 1, Lag: -30 * time.Second, Published: 700, Wall: 30 * time.Second, CPU: 40 * time.Second, SimCPU: 12 * time.Second},
		Endpoints: []*EPResult{
			{Endpoint: Endpoint{Name: "floor"}, Marketd: measured(26000, 5*time.Millisecond)},
			{Endpoint: Endpoint{Name: "token"}, Marketd: measured(10000, 9*time.Millisecond)},
		}}
	return &Results{
		Started: time.Date(2026, 11, 22, 19, 0, 0, 0, time.UTC), Finished: time.Date(2026, 11, 22, 19, 15, 0, 0, time.UTC),
		Options: defaultOptions(false), Machine: map[string]string{"nproc": "2"},
		Sizes: []*SizeRun{demo, big},
		Fresh: []FreshSample{
			{Observed: true, Served: 800 * time.Millisecond, LastServed: 900 * time.Millisecond, Returned: 950 * time.Millisecond, Published: 850 * time.Millisecond, HasPublish: true},
			{Observed: true, Served: 700 * time.Millisecond, LastServed: 700 * time.Millisecond, Returned: 720 * time.Millisecond, Published: 690 * time.Millisecond, HasPublish: true},
		},
		Replays: []*ReplayRun{{Label: "large", Msgs: 1000, Wall: time.Second, Rate: 1000, RawMax: 1500}},
		GoBench: "BenchmarkX-2   100   10 ns/op   0 B/op   0 allocs/op",
	}
}

func TestVerdicts(t *testing.T) {
	vs := verdicts(sampleResults())
	require.Len(t, vs, 7)
	want := []struct{ measured, met string }{
		{"lowest 0.67 (token)", "**NO**"},
		{"highest 2.25 (token)", "**NO**"},
		{"lowest 0.50 (token)", "**NO**"},
		{"p99 50.0ms last change served after publish end, 2/2 observed", "yes"},
		{"cycle of 1 tick(s), 700 messages: 30.00s wall, 40.00s CPU (0.33 cores over the interval); first full cycle 90.00s wall, 100.00s CPU", "yes"},
		{"large: 0.67 (1000 vs 1500 msgs/s, 1000 msgs)", "yes"},
		{"peak 2048 MiB", "**NO**"},
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
		"| token | 0 | 10000 | 4.50ms | 9.00ms | 20000 | 0.50 | – | – | **NO** |",
		"## Freshness (demo size)",
		"| large | 1 tick(s), the market 30s ahead of the wall clock before them, then POST /admin/ingest (700 messages) | 30.00s | 40.00s | 1.33 | 0.33 | 12.00s |",
		"| large | 1000 | 1.00s | 1000 | 1500 | 0.67 | yes |",
		"## Read path — large: 100000 collections",
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
	assert.Contains(t, renderReport(r), "**not ready** when the bound ran out")
}

func TestRenderReadme(t *testing.T) {
	out := renderReadme(sampleResults(), "bench-results/x.md")
	assert.True(t, strings.HasPrefix(out, "## Performance\n"))
	assert.Contains(t, out, "### Targets")
	assert.Contains(t, out, "### Read path — demo")
	assert.Contains(t, out, "| floor | 600 | 27000 |")
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

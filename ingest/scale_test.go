package ingest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/ingest"
	"github.com/marketd/marketd/ingest/sim"
	"github.com/marketd/marketd/readmodel"
)

// countPub counts messages and discards them.
type countPub struct{ n atomic.Int64 }

func (p *countPub) Publish(context.Context, *readmodel.Message) error { p.n.Add(1); return nil }
func (p *countPub) Flush(context.Context) (readmodel.Position, error) {
	return readmodel.Position{State: uint64(p.n.Load())}, nil
}

// cpuTime is the process's user+system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// simOnly walks every steady-cycle endpoint and discards the bodies.
func simOnly(b *testing.B, base, since string) {
	for _, path := range []string{"/collection-index/collections", "/order-book/listings", "/indexer-mirror/listings",
		"/indexer-mirror/tokens?since=" + since, "/indexer-stats/stats", "/analytics/analytics"} {
		cursor := ""
		for {
			u := base + path
			sep := "?"
			if strings.Contains(u, "?") {
				sep = "&"
			}
			if cursor != "" {
				u += sep + "cursor=" + cursor
			}
			resp, err := http.Get(u)
			require.NoError(b, err)
			var p struct {
				NextCursor string `json:"nextCursor"`
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.NoError(b, err)
			// Only the cursor is needed: find it without decoding the page.
			i := bytes.LastIndex(body, []byte(`"nextCursor":`))
			require.True(b, i >= 0)
			require.NoError(b, json.NewDecoder(bytes.NewReader(append([]byte("{"), body[i:]...))).Decode(&p))
			if p.NextCursor == "" {
				break
			}
			cursor = p.NextCursor
		}
	}
}

// BenchmarkCycleAtScale measures ingest cycles against a simulator of
// MARKETD_BENCH_COLLECTIONS collections (default 10,000) × 100 tokens in the
// same process (the simulator's work is included): the first cycle (full
// history and every token) and a steady cycle after one tick.
//
//	MARKETD_BENCH_COLLECTIONS=100000 go test -run '^$' -bench CycleAtScale -benchtime 1x -timeout 60m ./ingest/
//
// Measured 2026-11-22 on a loaded 2-vCPU VM (CPU time, so load does not
// count), 100,000 collections × 100 tokens = 10 M tokens, listing ratio
// 0.3, one year of sales, publisher discarding: steady cycle ≈ 82 CPU-s
// for simulator and ingest together (≈ 21 s of it ingest, by subtracting a
// bodies-discarded walk of the simulator), 70k messages; first cycle
// (every token, 1.2 M historic sales, 1.1 M messages) ≈ 222 CPU-s; max RSS
// 410 MB.
func BenchmarkCycleAtScale(b *testing.B) {
	n := 10000
	if v, err := strconv.Atoi(os.Getenv("MARKETD_BENCH_COLLECTIONS")); err == nil && v > 0 {
		n = v
	}
	for i := 0; i < b.N; i++ {
		s := sim.New(sim.Options{Seed: 1, Collections: n, TokensPerCollection: 100, SalesDepth: 1, Anchor: anchor})
		srv := httptest.NewServer(s.Handler())
		pub := &countPub{}
		cfg := ingest.Config{Sources: map[readmodel.Source]ingest.SourceConfig{}, Now: func() time.Time { return anchor.Add(time.Duration(s.Ticks()) * 2 * time.Minute) }}
		for _, src := range readmodel.Sources {
			cfg.Sources[src] = ingest.SourceConfig{BaseURL: srv.URL + "/" + string(src), Timeout: time.Minute}
		}
		in, err := ingest.New(cfg, pub, zerolog.Nop())
		require.NoError(b, err)
		c0 := cpuTime()
		sum, err := in.RunCycle(context.Background())
		require.NoError(b, err)
		first := cpuTime() - c0
		s.Tick()
		c1 := cpuTime()
		sum2, err := in.RunCycle(context.Background())
		require.NoError(b, err)
		steady := cpuTime() - c1
		// The simulator's share: the same steady walk, bodies discarded.
		c2 := cpuTime()
		simOnly(b, srv.URL, strconv.Itoa(s.Ticks()-1))
		simCPU := cpuTime() - c2
		b.ReportMetric(first.Seconds(), "first-cpu-s")
		b.ReportMetric(steady.Seconds(), "steady-cpu-s")
		b.ReportMetric(simCPU.Seconds(), "steady-sim-cpu-s")
		b.ReportMetric((steady - simCPU).Seconds(), "steady-ingest-cpu-s")
		b.ReportMetric(float64(sum.Published), "first-msgs")
		b.ReportMetric(float64(sum2.Published), "steady-msgs")
		for name, ss := range sum.Sources {
			b.Logf("first  %-22s %6d ms %8d rows", name, ss.TookMS, ss.RowsAccepted)
		}
		for name, ss := range sum2.Sources {
			b.Logf("steady %-22s %6d ms %8d rows", name, ss.TookMS, ss.RowsAccepted)
		}
		srv.Close()
	}
}

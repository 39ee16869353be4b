package ingest_test

import (
	"context"
	"net/http/httptest"
	"os"
	"strconv"
	"sync/atomic"
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

// BenchmarkCycleAtScale measures ingest cycles against a simulator of
// MARKETD_BENCH_COLLECTIONS collections (default 10,000) × 100 tokens in the
// same process (the simulator's work is included): the first cycle (full
// history and every token) and a steady cycle after one tick.
//
//	MARKETD_BENCH_COLLECTIONS=100000 go test -run '^$' -bench CycleAtScale -benchtime 1x ./ingest/
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
		t0 := time.Now()
		sum, err := in.RunCycle(context.Background())
		require.NoError(b, err)
		first := time.Since(t0)
		s.Tick()
		t1 := time.Now()
		sum2, err := in.RunCycle(context.Background())
		require.NoError(b, err)
		steady := time.Since(t1)
		b.ReportMetric(first.Seconds(), "first-cycle-s")
		b.ReportMetric(steady.Seconds(), "steady-cycle-s")
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

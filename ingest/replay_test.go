package ingest_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/ingest"
	"github.com/marketd/marketd/ingest/sim"
	"github.com/marketd/marketd/readmodel"
)

// replay passes requests to next, recording the answers' bodies by URL
// (rec), or answers them with the bodies recorded (bodies set, next nil);
// a request it has no body for is a 500.
type replay struct {
	mu     sync.Mutex
	rec    bool
	next   http.Handler
	bodies map[string][]byte
	misses int
}

func (r *replay) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	rec, next := r.rec, r.next
	body, ok := r.bodies[req.URL.RequestURI()]
	if next == nil && !ok {
		r.misses++
	}
	r.mu.Unlock()
	if next != nil && !rec {
		next.ServeHTTP(w, req)
		return
	}
	if rec {
		var buf bytes.Buffer
		rw := &recorder{ResponseWriter: w, buf: &buf}
		r.next.ServeHTTP(rw, req)
		r.mu.Lock()
		r.bodies[req.URL.RequestURI()] = buf.Bytes()
		r.mu.Unlock()
		return
	}
	if !ok {
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	_, _ = w.Write(body)
}

type recorder struct {
	http.ResponseWriter
	buf *bytes.Buffer
}

func (r *recorder) Write(p []byte) (int, error) {
	r.buf.Write(p)
	return r.ResponseWriter.Write(p)
}

// BenchmarkSteadyCycleIngestOnly measures ingest's own CPU in a steady
// cycle at MARKETD_BENCH_COLLECTIONS collections (default 10,000) × 100
// tokens, without the simulator's: the steady cycle's upstream answers
// are recorded once and replayed from memory to an Ingest brought to the
// same state by a first cycle against a simulator of the same seed.
//
//	go test -run '^$' -bench SteadyCycleIngestOnly -benchtime 3x ./ingest/
func BenchmarkSteadyCycleIngestOnly(b *testing.B) {
	n := 10000
	if v, err := strconv.Atoi(os.Getenv("MARKETD_BENCH_COLLECTIONS")); err == nil && v > 0 {
		n = v
	}
	opts := sim.Options{Seed: 1, Collections: n, TokensPerCollection: 100, SalesDepth: 1, Anchor: anchor}
	// first brings a fresh Ingest through the first cycle against a fresh
	// simulator behind rp and ticks the simulator.
	first := func(rp *replay, s *sim.Sim, url string) *ingest.Ingest {
		cfg := ingest.Config{Sources: map[readmodel.Source]ingest.SourceConfig{},
			Now: func() time.Time { return anchor.Add(time.Duration(s.Ticks()) * 2 * time.Minute) }}
		for _, src := range readmodel.Sources {
			cfg.Sources[src] = ingest.SourceConfig{BaseURL: url + "/" + string(src), Timeout: time.Minute}
		}
		in, err := ingest.New(cfg, &countPub{}, zerolog.Nop())
		require.NoError(b, err)
		rp.mu.Lock()
		rp.next, rp.rec, rp.bodies = s.Handler(), false, nil
		rp.mu.Unlock()
		_, err = in.RunCycle(context.Background())
		require.NoError(b, err)
		s.Tick()
		return in
	}
	rp := &replay{}
	srv := httptest.NewServer(rp)
	defer srv.Close()
	// Record the steady cycle's answers.
	s := sim.New(opts)
	in := first(rp, s, srv.URL)
	rp.mu.Lock()
	rp.rec, rp.bodies = true, map[string][]byte{}
	rp.mu.Unlock()
	_, err := in.RunCycle(context.Background())
	require.NoError(b, err)
	steady := rp.bodies
	b.ResetTimer()
	var cpu time.Duration
	var msgs int
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		s := sim.New(opts)
		in := first(rp, s, srv.URL)
		rp.mu.Lock()
		rp.next, rp.rec, rp.bodies, rp.misses = nil, false, steady, 0
		rp.mu.Unlock()
		b.StartTimer()
		c0 := cpuTime()
		sum, err := in.RunCycle(context.Background())
		cpu += cpuTime() - c0
		require.NoError(b, err)
		require.Zero(b, rp.misses, "the steady cycle asked for something the recording lacks")
		msgs = sum.Published
	}
	b.ReportMetric(cpu.Seconds()/float64(b.N), "steady-ingest-cpu-s")
	b.ReportMetric(float64(msgs), "steady-msgs")
}

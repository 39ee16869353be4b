package ingest_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/ingest"
	"github.com/marketd/marketd/ingest/sim"
	"github.com/marketd/marketd/readmodel"
)

// fakeLease is a lease the test hands over by hand; it can lapse after a
// number of Held calls, as a lease does whose renewals stopped mid-cycle.
type fakeLease struct {
	mu        sync.Mutex
	held      bool
	term      uint64
	lapseIn   int // > 0: Held turns false after this many calls
	checks    int
	taken     bool // Check fails: another holder wrote the key
	heldCalls int
}

func (l *fakeLease) Held() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.heldCalls++
	if l.lapseIn > 0 && l.heldCalls >= l.lapseIn {
		l.held = false
	}
	return l.held
}

func (l *fakeLease) Term() uint64 { l.mu.Lock(); defer l.mu.Unlock(); return l.term }

func (l *fakeLease) Check(context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.checks++
	if l.taken {
		return errors.New("taken over by b")
	}
	return nil
}

func (l *fakeLease) acquire() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.held, l.term, l.lapseIn, l.heldCalls, l.taken = true, l.term+1, 0, 0, false
}

func mustLeasedIngest(t *testing.T, l ingest.Lease) (*ingest.Ingest, *fakePub) {
	t.Helper()
	s := sim.New(sim.Options{Seed: 9, Collections: 12, TokensPerCollection: 20, Anchor: anchor})
	srv := httptest.NewServer(s.Handler())
	pub := &fakePub{}
	cfg := ingest.Config{Sources: map[readmodel.Source]ingest.SourceConfig{}, Lease: l, PageLimit: 300,
		Now: func() time.Time { return anchor.Add(10 * time.Second) }}
	for _, src := range readmodel.Sources {
		cfg.Sources[src] = ingest.SourceConfig{BaseURL: srv.URL + "/" + string(src)}
	}
	in, err := ingest.New(cfg, pub, zerolog.Nop())
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, in.Close(context.Background()))
		require.NoError(t, s.Close(context.Background()))
		srv.Close()
	})
	return in, pub
}

func TestLeaseGatesPublishing(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		run  func(t *testing.T, in *ingest.Ingest, pub *fakePub, l *fakeLease)
	}{
		{"a standby runs no cycle and publishes nothing", func(t *testing.T, in *ingest.Ingest, pub *fakePub, l *fakeLease) {
			_, err := in.RunCycle(ctx)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "standby")
			assert.Empty(t, pub.take())
			assert.True(t, in.Standby())
		}},
		{"the holder publishes, confirming the lease with the bus", func(t *testing.T, in *ingest.Ingest, pub *fakePub, l *fakeLease) {
			l.acquire()
			sum, err := in.RunCycle(ctx)
			require.NoError(t, err)
			assert.NotZero(t, sum.Published)
			assert.Len(t, pub.take(), sum.Published)
			assert.GreaterOrEqual(t, l.checks, 1)
			assert.False(t, in.Standby())
		}},
		{"a lease lost mid-cycle stops publishing and fails the cycle", func(t *testing.T, in *ingest.Ingest, pub *fakePub, l *fakeLease) {
			l.acquire()
			l.lapseIn = 30
			_, err := in.RunCycle(ctx)
			require.Error(t, err)
			assert.Less(t, len(pub.take()), 30, "nothing published after the lease lapsed")
		}},
		{"a lease taken over fails the fence", func(t *testing.T, in *ingest.Ingest, pub *fakePub, l *fakeLease) {
			l.acquire()
			l.taken = true
			_, err := in.RunCycle(ctx)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "fence")
			assert.Empty(t, pub.take())
		}},
		{"a new term publishes everything again", func(t *testing.T, in *ingest.Ingest, pub *fakePub, l *fakeLease) {
			l.acquire()
			first, err := in.RunCycle(ctx)
			require.NoError(t, err)
			pub.take()
			same, err := in.RunCycle(ctx)
			require.NoError(t, err)
			assert.Less(t, same.Published, first.Published, "same term: only changes")
			pub.take()
			l.acquire() // lost and won again: another holder may have published meanwhile
			again, err := in.RunCycle(ctx)
			require.NoError(t, err)
			assert.Greater(t, again.Published, same.Published)
			assert.Equal(t, first.Unchanged, again.Unchanged, "nothing skipped as unchanged on a new term")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := &fakeLease{}
			in, pub := mustLeasedIngest(t, l)
			tt.run(t, in, pub, l)
		})
	}
}

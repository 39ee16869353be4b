package node

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel/bus"
	"github.com/marketd/marketd/readmodel/bus/bustest"
)

// TestIngestReadinessFollowsTheLease drives an ingest's lease by hand on
// a fake clock: an ingest whose lease lapsed (renewals failed while NATS
// was away) is not ready once NATS is back until it holds the lease again
// and has published that term's first cycle; a standby behind another
// holder is ready.
func TestIngestReadinessFollowsTheLease(t *testing.T) {
	ctx := context.Background()
	js := bustest.MustConnect(t, bustest.MustStartServer(t), 1)
	const period = time.Hour // the bucket's TTL never acts: only the lease's rules do
	var mu sync.Mutex
	now := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	open := func(holder string) *Lease {
		l, err := bus.OpenLease(ctx, js, bus.LeaseOptions{Holder: holder, Period: period, Now: clock})
		require.NoError(t, err)
		return &Lease{Lease: l, log: zerolog.Nop(), changed: make(chan struct{}, 1)}
	}
	a, b := open("a"), open("b")
	// An ingest's readiness: the lease's check, then its first cycle.
	readiness := func(l *Lease) *Readiness {
		r := NewReadiness(nil)
		r.Require(l.NotReady)
		r.Until(Fixed("first ingest cycle not yet published"))
		return r
	}
	ra, rb := readiness(a), readiness(b)
	published := func() { a.published(a.Term()); ra.MarkReady() } // what Lead does
	steps := []struct {
		name   string
		do     func()
		ready  *Readiness
		reason string // "" ready
	}{
		{"before the first look", func() {}, ra, "acquiring it"},
		{"acquired, first cycle not published", func() { a.Step(ctx) }, ra, "term 1): its first cycle is not yet published"},
		{"first cycle published", published, ra, ""},
		{"a standby behind the holder", func() { b.Step(ctx); rb.MarkReady() }, rb, ""},
		{"lease lapsed (no renewal while NATS was away)", func() { mu.Lock(); now = now.Add(period); mu.Unlock() }, ra, "ingest lease not held"},
		{"taken back: a new term", func() { a.Step(ctx) }, ra, "term 2): its first cycle is not yet published"},
		{"the new term's first cycle published", published, ra, ""},
	}
	for _, s := range steps {
		s.do()
		ok, reason := s.ready.Readiness()
		if s.reason == "" {
			assert.True(t, ok, "%s: %s", s.name, reason)
		} else {
			assert.False(t, ok, s.name)
			assert.Contains(t, reason, s.reason, s.name)
		}
	}
}

// TestMayRunSaysWhatTheNodeKnows: a node that does not hold the lease
// names another holder only when it has seen one; when its own hold
// lapsed, or nobody took the lease yet, it says so.
func TestMayRunSaysWhatTheNodeKnows(t *testing.T) {
	ctx := context.Background()
	js := bustest.MustConnect(t, bustest.MustStartServer(t), 1)
	const period = time.Hour
	var mu sync.Mutex
	now := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	open := func(holder string) *Lease {
		l, err := bus.OpenLease(ctx, js, bus.LeaseOptions{Holder: holder, Period: period, Now: clock})
		require.NoError(t, err)
		return &Lease{Lease: l, log: zerolog.Nop(), changed: make(chan struct{}, 1)}
	}
	a, b := open("a"), open("b")
	steps := []struct {
		name string
		do   func()
		l    *Lease
		says string // "" may run
	}{
		{"nobody took it yet", func() {}, a, "nobody holds the ingest lease yet"},
		{"held", func() { a.Step(ctx) }, a, ""},
		{"a standby behind the holder", func() { b.Step(ctx) }, b, `held by "a"`},
		{"its own hold lapsed", func() { mu.Lock(); now = now.Add(period); mu.Unlock() }, a, "this node's hold on the ingest lease lapsed"},
	}
	for _, s := range steps {
		s.do()
		err := s.l.MayRun()
		if s.says == "" {
			assert.NoError(t, err, s.name)
			continue
		}
		require.Error(t, err, s.name)
		assert.Contains(t, err.Error(), s.says, s.name)
	}
}

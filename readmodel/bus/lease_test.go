package bus_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel/bus"
	"github.com/marketd/marketd/readmodel/bus/bustest"
)

// clock is a shared fake clock for leases in one test.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func mustLease(t *testing.T, js jetstream.JetStream, holder string, period time.Duration, clk *clock) *bus.Lease {
	t.Helper()
	opts := bus.LeaseOptions{Holder: holder, Period: period}
	if clk != nil {
		opts.Now = clk.now
	}
	l, err := bus.OpenLease(context.Background(), js, opts)
	require.NoError(t, err)
	return l
}

// TestLeaseOneHolderAtATime drives the lease step by step on a fake
// clock (the bucket's own TTL is long, so only the lease's rules act).
func TestLeaseOneHolderAtATime(t *testing.T) {
	ctx := context.Background()
	url := bustest.MustStartServer(t)
	const period = time.Hour
	tests := []struct {
		name string
		run  func(t *testing.T, a, b, c *bus.Lease, clk *clock)
	}{
		{"first comer holds, others stand by", func(t *testing.T, a, b, c *bus.Lease, clk *clock) {
			a.Step(ctx)
			b.Step(ctx)
			assert.True(t, a.Held())
			assert.False(t, b.Held())
			assert.Equal(t, "a", b.State().Holder)
			require.NoError(t, a.Check(ctx))
			assert.Error(t, b.Check(ctx))
		}},
		{"renewal keeps it across periods", func(t *testing.T, a, b, c *bus.Lease, clk *clock) {
			a.Step(ctx)
			b.Step(ctx)
			for i := 0; i < 8; i++ {
				clk.add(period / 4)
				a.Step(ctx)
				b.Step(ctx)
				require.True(t, a.Held(), "renewal %d", i)
				require.False(t, b.Held(), "renewal %d", i)
			}
			assert.Equal(t, uint64(1), a.Term())
		}},
		{"release hands over at the next look", func(t *testing.T, a, b, c *bus.Lease, clk *clock) {
			a.Step(ctx)
			b.Step(ctx)
			require.NoError(t, a.Release(ctx))
			assert.False(t, a.Held())
			b.Step(ctx)
			assert.True(t, b.Held())
			assert.Equal(t, uint64(1), b.Term())
			a.Step(ctx)
			assert.False(t, a.Held(), "a released lease is not taken again")
		}},
		{"a holder that stops renewing is fenced before a standby takes over", func(t *testing.T, a, b, c *bus.Lease, clk *clock) {
			a.Step(ctx)
			b.Step(ctx) // b sees a's revision
			c.Step(ctx)
			var handover time.Duration
			for step := time.Duration(0); !b.Held() && !c.Held(); step += period / 10 {
				require.LessOrEqual(t, step, 2*period, "nobody took over")
				clk.add(period / 10)
				if b.Step(ctx); b.Held() || c.Held() {
					handover = step + period/10
					break
				}
				c.Step(ctx)
				handover = step + period/10
			}
			assert.LessOrEqual(t, handover, period, "a dead holder is replaced within one lease period")
			assert.False(t, a.Held(), "the old holder stopped before the new one started")
			assert.NotEqual(t, b.Held(), c.Held(), "exactly one standby won")
			assert.Error(t, a.Check(ctx), "the fence reads the new holder")
			t.Logf("takeover %s after the last renewal (period %s)", handover, period)
			a.Step(ctx)
			assert.False(t, a.Held(), "the old holder does not take it back")
		}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			js := bustest.MustConnect(t, url, 1)
			kv, err := js.KeyValue(ctx, bus.LeaseBucket)
			if err == nil {
				require.NoError(t, kv.Purge(ctx, bus.IngestLeaseKey))
			}
			clk := &clock{t: time.Date(2026, 1, 1, 0, i, 0, 0, time.UTC)}
			tt.run(t, mustLease(t, js, "a", period, clk), mustLease(t, js, "b", period, clk), mustLease(t, js, "c", period, clk), clk)
		})
	}
}

// TestLeaseReleaseAfterALostRenewalAnswer: a renewal the server applied
// but whose answer the holder never got (its shutdown cut the request
// off) leaves the key one revision ahead of the holder's; Release still
// deletes it, and leaves alone a key another process took over.
func TestLeaseReleaseAfterALostRenewalAnswer(t *testing.T) {
	ctx := context.Background()
	url := bustest.MustStartServer(t)
	const period = time.Hour
	tests := []struct {
		name       string
		writeAfter string // the key's value written behind the holder's back
		wantHolder string // the key's value after Release ("" deleted)
	}{
		{"its own renewal applied unseen: the key is deleted", "a", ""},
		{"taken over meanwhile: the new holder's key stays", "b", "b"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			js := bustest.MustConnect(t, url, 1)
			clk := &clock{t: time.Date(2026, 2, 1, 0, i, 0, 0, time.UTC)}
			a := mustLease(t, js, "a", period, clk)
			kv, err := js.KeyValue(ctx, bus.LeaseBucket)
			require.NoError(t, err)
			require.NoError(t, kv.Purge(ctx, bus.IngestLeaseKey))
			a.Step(ctx)
			require.True(t, a.Held())
			_, err = kv.Update(ctx, bus.IngestLeaseKey, []byte(tt.writeAfter), a.State().Revision)
			require.NoError(t, err)

			require.NoError(t, a.Release(ctx))
			e, err := kv.Get(ctx, bus.IngestLeaseKey)
			if tt.wantHolder == "" {
				assert.ErrorIs(t, err, jetstream.ErrKeyNotFound, "the released key is gone")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantHolder, string(e.Value()))
		})
	}
}

// TestLeaseTakeoverAfterACrash runs two leases on the real clock; the
// holder stops renewing without releasing (as a killed process does),
// and the standby's takeover is measured from that moment.
func TestLeaseTakeoverAfterACrash(t *testing.T) {
	url := bustest.MustStartServer(t)
	js := bustest.MustConnect(t, url, 1)
	const period = 2 * time.Second
	changes := make(chan bus.LeaseState, 16)
	a := mustLease(t, js, "a", period, nil)
	bl, err := bus.OpenLease(context.Background(), js, bus.LeaseOptions{Holder: "b", Period: period,
		OnChange: func(s bus.LeaseState) { changes <- s }})
	require.NoError(t, err)

	actx, crash := context.WithCancel(context.Background())
	aDone := make(chan struct{})
	go func() { a.Run(actx); close(aDone) }()
	require.Eventually(t, a.Held, 10*time.Second, 10*time.Millisecond)
	bctx, stopB := context.WithCancel(context.Background())
	defer stopB()
	go bl.Run(bctx)
	require.Eventually(t, func() bool { return bl.State().Holder == "a" }, 10*time.Second, 10*time.Millisecond)

	crash()
	<-aDone
	died := time.Now()
	for s := range changes {
		if s.Held {
			break
		}
	}
	took := time.Since(died)
	assert.False(t, a.Held(), "the crashed holder's own clock fenced it")
	t.Logf("standby took over %s after the holder died (lease period %s)", took.Round(time.Millisecond), period)
}

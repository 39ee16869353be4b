package bus_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/bus"
	"github.com/marketd/marketd/readmodel/bus/bustest"
)

// mustLeafJS connects to the region's leaf server and returns its own
// JetStream and the hub domain's as the leaf reaches it.
func mustLeafJS(t *testing.T, r *bustest.Region) (local, hub jetstream.JetStream) {
	t.Helper()
	nc, err := nats.Connect(r.Leaf.ClientURL())
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	local, err = jetstream.New(nc)
	require.NoError(t, err)
	hub, err = jetstream.NewWithDomain(nc, bustest.HubDomain)
	require.NoError(t, err)
	return local, hub
}

func TestRegionMirrorsKeepSequencesAndCompaction(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r := bustest.MustRegion(t)
	hubJS := bustest.MustConnect(t, r.Hub.ClientURL(), 1)
	pub := bus.NewPublisher(hubJS)
	publish := func(msgs ...*readmodel.Message) {
		t.Helper()
		for _, m := range msgs {
			require.NoError(t, pub.Publish(ctx, m))
		}
		_, err := pub.Flush(ctx)
		require.NoError(t, err)
	}
	rates := func(id string) *readmodel.Message {
		return &readmodel.Message{ID: id, Kind: readmodel.KindRates, ObservedAt: time.Unix(1, 0).UTC()}
	}
	sale := func(id string) *readmodel.Message {
		return &readmodel.Message{ID: id, Kind: readmodel.KindSales, CollectionID: "c1", ObservedAt: time.Unix(1, 0).UTC()}
	}
	// r1 is compacted away by r2 on the hub: the state stream has a gap.
	publish(rates("r1"), sale("s1"), rates("r2"), sale("s2"))

	js, hub := mustLeafJS(t, r)
	require.NoError(t, bus.SetUpMirrors(ctx, js, hub, bustest.HubDomain, 1, zerolog.Nop()))

	// Created, the mirrors were waited for: they hold the hub's heads.
	want, err := bus.Heads(ctx, hubJS)
	require.NoError(t, err)
	got, err := bus.Heads(ctx, js)
	require.NoError(t, err)
	assert.Equal(t, want, got, "mirror heads are the hub's sequences")
	st, err := js.Stream(ctx, bus.StateStream)
	require.NoError(t, err)
	cfg := st.CachedInfo().Config
	assert.Equal(t, int64(1), cfg.MaxMsgsPerSubject, "the state mirror stays compacted")
	require.NotNil(t, cfg.Mirror)
	assert.Equal(t, bus.StateStream, cfg.Mirror.Name)
	assert.Empty(t, cfg.Subjects)
	for _, name := range []string{bus.StateStream, bus.SalesStream} {
		hs, err := hubJS.Stream(ctx, name)
		require.NoError(t, err)
		ms, err := js.Stream(ctx, name)
		require.NoError(t, err)
		for seq := uint64(1); seq <= want.State+want.Sales; seq++ {
			hm, herr := hs.GetMsg(ctx, seq)
			mm, merr := ms.GetMsg(ctx, seq)
			if herr != nil {
				assert.Error(t, merr, "%s seq %d: the hub holds none, nor should the mirror", name, seq)
				continue
			}
			require.NoError(t, merr, "%s seq %d", name, seq)
			assert.Equal(t, hm.Header.Get(jetstream.MsgIDHeader), mm.Header.Get(jetstream.MsgIDHeader), "%s seq %d", name, seq)
		}
	}

	// Again: nothing to create, nothing to wait for.
	changes, err := bus.ReconcileMirrors(ctx, js, bustest.HubDomain, bus.StreamOptions{Replicas: 1})
	require.NoError(t, err)
	for _, c := range changes {
		assert.Equal(t, "updated", c.Action, c.Stream)
	}

	// Cut off: the hub moves on, the mirrors stand still and say since when.
	r.Link.Cut()
	require.Eventually(t, func() bool { return r.Leaf.NumLeafNodes() == 0 }, 10*time.Second, 10*time.Millisecond)
	publish(rates("r3"), sale("s3"))
	require.Eventually(t, func() bool {
		actx, acancel := context.WithTimeout(ctx, 500*time.Millisecond)
		defer acancel()
		ms, reachable, err := bus.Mirrors(actx, js, hub)
		return err == nil && !reachable && ms[0].SinceContact > 2*time.Second && ms[0].Head == got.State
	}, 20*time.Second, 100*time.Millisecond, "a cut-off mirror reports its last contact's age")

	// Restored: the mirrors catch up, and say so.
	r.Link.Restore()
	require.NoError(t, bus.WaitMirrors(ctx, js, hub))
	want, err = bus.Heads(ctx, hubJS)
	require.NoError(t, err)
	ms, reachable, err := bus.Mirrors(ctx, js, hub)
	require.NoError(t, err)
	assert.True(t, reachable)
	for i, head := range []uint64{want.State, want.Sales} {
		assert.Equal(t, head, ms[i].Head, ms[i].Stream)
		assert.Equal(t, head, ms[i].HubHead, ms[i].Stream)
		assert.Zero(t, ms[i].Behind, ms[i].Stream)
	}
}

func TestReconcileMirrorsRefusesAStreamThatIsNotTheMirror(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tests := []struct {
		name  string
		setup func(t *testing.T, js jetstream.JetStream)
	}{
		{"the streams themselves", func(t *testing.T, js jetstream.JetStream) {
			require.NoError(t, bus.EnsureStreams(ctx, js, bus.StreamOptions{}))
		}},
		{"a mirror of another domain", func(t *testing.T, js jetstream.JetStream) {
			for _, c := range bus.MirrorConfigs("elsewhere", bus.StreamOptions{}) {
				_, err := js.CreateStream(ctx, c)
				require.NoError(t, err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nc, err := nats.Connect(bustest.MustStartServer(t))
			require.NoError(t, err)
			t.Cleanup(nc.Close)
			js, err := jetstream.New(nc)
			require.NoError(t, err)
			tt.setup(t, js)
			_, err = bus.ReconcileMirrors(ctx, js, bustest.HubDomain, bus.StreamOptions{})
			require.ErrorIs(t, err, bus.ErrNotMirror)
			assert.Contains(t, err.Error(), fmt.Sprintf("domain %s", bustest.HubDomain))
			// SetUpMirrors gives up at once rather than retrying for a minute.
			start := time.Now()
			require.ErrorIs(t, bus.SetUpMirrors(ctx, js, nil, bustest.HubDomain, 1, zerolog.Nop()), bus.ErrNotMirror)
			assert.Less(t, time.Since(start), 5*time.Second)
		})
	}
}

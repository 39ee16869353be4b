package projector_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/bus"
	"github.com/marketd/marketd/readmodel/bus/bustest"
	"github.com/marketd/marketd/readmodel/projector"
	"github.com/marketd/marketd/readmodel/render"
)

// TestTwoServeNodesConverge runs two live projectors (the serve role) and
// one publisher (the ingest role) on one NATS server.
func TestTwoServeNodesConverge(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	e := mustEnv(t)
	e.publish(cycle(10, 1)...) // history before the nodes start

	var nodes []*projector.Projector
	st2, p2 := e.mustNode(t.TempDir())
	start := time.Now()
	for _, p := range []*projector.Projector{e.p, p2} {
		require.NoError(t, p.Open(ctx))
		t.Cleanup(func() { _ = p.Close(context.Background()) })
		nodes = append(nodes, p)
	}

	// Ingest publishes further cycles while the nodes consume.
	var pos readmodel.Position
	for round := 2; round <= 3; round++ {
		pos = e.publish(cycle(10, round)...)
	}
	for _, p := range nodes {
		require.NoError(t, p.WaitFor(ctx, pos))
	}
	t.Logf("converged in %s", time.Since(start))
	assert.Equal(t, digest(t, e.st), digest(t, st2))

	ref, refP := e.mustNode(t.TempDir())
	_, err := refP.ApplyAvailable(ctx)
	require.NoError(t, err)
	assert.Equal(t, digest(t, ref), digest(t, st2), "live nodes equal a replay of the streams")
}

// TestClusterWithOneServerStopped runs two live nodes on a three-server
// cluster (R3 streams) and stops one server mid-stream.
func TestClusterWithOneServerStopped(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	c := bustest.MustCluster(t, 3)
	js := bustest.MustConnect(t, c.URL(), 3)
	pub := bus.NewPublisher(js)
	opts := projector.Options{Now: func() time.Time { return t0 }}

	publish := func(msgs []*readmodel.Message) readmodel.Position {
		for _, m := range msgs {
			if m.ID == "" {
				m.ID = "cluster/" + time.Now().Format(time.RFC3339Nano) + "/" + string(m.Kind) + "/" + m.CollectionID + "/" + string(m.Source)
			}
			if m.ObservedAt.IsZero() {
				m.ObservedAt = t0
			}
		}
		var pos readmodel.Position
		require.Eventually(t, func() bool { // a leader election can fail a flush; re-publish (deduplicated)
			for _, m := range msgs {
				if err := pub.Publish(ctx, m); err != nil {
					return false
				}
			}
			p, err := pub.Flush(ctx)
			pos = p
			return err == nil
		}, 60*time.Second, 100*time.Millisecond)
		return pos
	}

	type node struct {
		st interface {
			Digest(context.Context, time.Time) (string, error)
			Collection(context.Context, string) (render.CollectionView, error)
		}
		p *projector.Projector
	}
	var nodes []node
	for i := 0; i < 2; i++ {
		njs := bustest.MustConnect(t, c.URL(), 3)
		st := mustStore(t, t.TempDir())
		p := projector.New(njs, st, opts, zerolog.New(zerolog.NewTestWriter(t)))
		require.NoError(t, p.Open(ctx))
		t.Cleanup(func() { _ = p.Close(context.Background()) })
		nodes = append(nodes, node{st, p})
	}

	pos := publish(cycle(10, 1))
	for _, n := range nodes {
		require.NoError(t, n.p.WaitFor(ctx, pos))
	}

	c.Stop(0)
	pos = publish(cycle(10, 2))
	for _, n := range nodes {
		require.NoError(t, n.p.WaitFor(ctx, pos), "nodes keep consuming with one server down")
		_, err := n.st.Collection(ctx, "ethereum_0x0003")
		require.NoError(t, err, "serving continues")
	}

	c.Start(0)
	pos = publish(cycle(10, 3))
	var digests []string
	var mu sync.Mutex
	for _, n := range nodes {
		require.NoError(t, n.p.WaitFor(ctx, pos))
		d, err := n.st.Digest(ctx, time.Time{})
		require.NoError(t, err)
		mu.Lock()
		digests = append(digests, d)
		mu.Unlock()
	}
	assert.Equal(t, digests[0], digests[1], "nodes converge after the server returns")

	ref := mustStore(t, t.TempDir())
	_, err := projector.New(js, ref, opts, zerolog.Nop()).ApplyAvailable(ctx)
	require.NoError(t, err)
	assert.Equal(t, digest(t, ref), digests[0])
}

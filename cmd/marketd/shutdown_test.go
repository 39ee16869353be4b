package main

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/config"
	"github.com/marketd/marketd/ingest/sim"
	"github.com/marketd/marketd/readmodel/bus"
)

// shutdownLimit is DESIGN's bound on a clean shutdown (SIGINT/SIGTERM).
const shutdownLimit = 10 * time.Second

// TestNodesStopWithinTheirBudgetWhileNATSIsDown is an operator's trial:
// one `ingest` and one `serve` on their only NATS server, the server
// stopped, then each node stopped. Each stops within 10 s without an
// error (nothing it could still do needs the bus: the lease lapses on
// its own, the connection has nothing to drain), and the serve node's
// store is closed: `marketd digest` opens it afterwards.
func TestNodesStopWithinTheirBudgetWhileNATSIsDown(t *testing.T) {
	emb, err := bus.StartEmbedded(context.Background(), bus.EmbeddedOptions{StoreDir: t.TempDir(), Port: -1})
	require.NoError(t, err)
	t.Cleanup(func() { _ = emb.Close(context.Background()) })
	s := sim.New(sim.Options{Seed: 7, Collections: 10, TokensPerCollection: 10, Anchor: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)})
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(func() { srv.Close(); _ = s.Close(context.Background()) })
	ingestArgs := []string{"ingest", "--node-id", "ingest-1", "--nats", emb.ClientURL(), "--poll-interval", "1h"}
	for _, name := range config.SourceNames {
		ingestArgs = append(ingestArgs, "--source-"+name+"-url", srv.URL+"/"+name)
	}
	ing := MustRunMain(t, ingestArgs...)
	serveDir := t.TempDir()
	srvNode := MustRunMain(t, "serve", "--node-id", "serve-1", "--nats", emb.ClientURL(), "--data-dir", serveDir, "--cursor-key", testCursorKey)

	require.NoError(t, emb.Close(context.Background()))
	for _, m := range []*Main{ing, srvNode} {
		require.Eventually(t, func() bool {
			return strings.Contains(string(get(t, m.Admin+"/readyz").Body), "bus unreachable")
		}, 30*time.Second, 20*time.Millisecond)
	}

	for _, tc := range []struct {
		name string
		m    *Main
	}{
		{"ingest", ing},
		{"serve", srvNode},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			tc.m.cancel() // as SIGTERM does
			tc.m.cancel = nil
			select {
			case err := <-tc.m.done:
				took := time.Since(start)
				t.Logf("%s stopped in %s with NATS down", tc.name, took.Round(time.Millisecond))
				assert.NoError(t, err, "a clean stop\n%s", tc.m.logs)
				assert.Less(t, took, shutdownLimit, "%s", tc.m.logs)
			case <-time.After(30 * time.Second):
				t.Fatalf("%s did not stop within 30 s\n%s", tc.name, tc.m.logs)
			}
		})
	}
	assert.Len(t, strings.TrimSpace(runRole(t, "digest", "--data-dir", serveDir)), 64, "the serve node's store was closed")
}

// TestServeStopsWithinItsBudgetWhileNoClusterServerAnswers is the
// tier's case: a serve node on a three-server cluster whose servers all
// stopped, then one came back alone (no quorum: its JetStream answers
// nothing useful) and went away again. The node reconnected to it, so
// its NATS client began recreating the projector's consumers, which it
// retries while no server answers, holding their stop. The node still
// stops within 10 s, and its store is closed.
func TestServeStopsWithinItsBudgetWhileNoClusterServerAnswers(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	tr := newTier(t)
	dir := t.TempDir()
	m := tr.serve("serve-1", dir)
	tr.caughtUp(m)
	for i := range 3 {
		tr.cluster.Stop(i)
	}
	unreachable := func() bool {
		return strings.Contains(string(get(t, m.Admin+"/readyz").Body), "bus unreachable")
	}
	require.Eventually(t, unreachable, 30*time.Second, 20*time.Millisecond)
	reconnects := func() int { return strings.Count(m.logs.String(), `"message":"reconnected to NATS"`) }
	before := reconnects()
	tr.cluster.Start(0)
	require.Eventually(t, func() bool { return reconnects() > before }, 30*time.Second, 20*time.Millisecond)
	tr.cluster.Stop(0)
	require.Eventually(t, unreachable, 30*time.Second, 20*time.Millisecond)

	start := time.Now()
	m.cancel() // as SIGTERM does
	m.cancel = nil
	select {
	case err := <-m.done:
		took := time.Since(start)
		t.Logf("stopped in %s with no server answering", took.Round(time.Millisecond))
		assert.NoError(t, err, "a clean stop\n%s", m.logs)
		assert.Less(t, took, shutdownLimit, "%s", m.logs)
	case <-time.After(60 * time.Second):
		t.Fatalf("did not stop within 60 s\n%s", m.logs)
	}
	assert.Len(t, strings.TrimSpace(runRole(t, "digest", "--data-dir", dir)), 64, "the store was closed")
}

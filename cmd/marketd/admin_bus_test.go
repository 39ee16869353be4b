package main

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/config"
	"github.com/marketd/marketd/ingest/sim"
	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/bus"
	"github.com/marketd/marketd/readmodel/bus/bustest"
)

// streamHeads is the streams' last sequences.
func streamHeads(t *testing.T, js jetstream.JetStream) readmodel.Position {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	h, err := bus.Heads(ctx, js)
	require.NoError(t, err)
	return h
}

// TestAdminIngestSaysTheBusIsUnreachable is an operator's trial: one
// `ingest` on its only NATS server, the server stopped, then
// POST /admin/ingest. No other ingest exists, so the answer must not
// blame one: it says, in one sentence, that NATS is unreachable and the
// lease's state unknown (503, the admin's code for a failed action),
// whether the server was already gone when the request came or went away
// during the cycle.
func TestAdminIngestSaysTheBusIsUnreachable(t *testing.T) {
	cases := []struct {
		name string
		// lose stops the server: before the request, or while the
		// cycle it started runs (post answers the request; published
		// reports when the cycle's first rows reached the stream).
		lose func(t *testing.T, stop func(), post func() resp, published func() bool) resp
		what string
	}{
		{"stopped before the request", func(t *testing.T, stop func(), post func() resp, _ func() bool) resp {
			stop()
			return post()
		}, "no cycle was run"},
		{"stopped during the cycle", func(t *testing.T, stop func(), post func() resp, published func() bool) resp {
			answer := make(chan resp, 1)
			go func() { answer <- post() }()
			require.Eventually(t, published, 30*time.Second, 10*time.Millisecond)
			stop()
			return <-answer
		}, "the cycle stopped before it was published in full"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			emb, err := bus.StartEmbedded(context.Background(), bus.EmbeddedOptions{StoreDir: t.TempDir(), Port: -1})
			require.NoError(t, err)
			t.Cleanup(func() { _ = emb.Close(context.Background()) })
			s := sim.New(sim.Options{Seed: 7, Collections: 10, TokensPerCollection: 10, Anchor: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)})
			srv := httptest.NewServer(s.Handler())
			t.Cleanup(func() { srv.Close(); _ = s.Close(context.Background()) })
			args := []string{"ingest", "--node-id", "only-ingest", "--nats", emb.ClientURL(), "--poll-interval", "1h", "--ingest-lease", "2s",
				"--source-analytics-timeout", "3s"}
			for _, name := range config.SourceNames {
				args = append(args, "--source-"+name+"-url", srv.URL+"/"+name)
			}
			m := MustRunMain(t, args...)
			stop := func() {
				require.NoError(t, emb.Close(context.Background()))
				require.Eventually(t, func() bool {
					return strings.Contains(string(get(t, m.Admin+"/readyz").Body), "bus unreachable")
				}, 30*time.Second, 20*time.Millisecond)
			}
			// The next cycle has changes to publish, and is held by
			// analytics until its timeout once the other rows are out.
			js := bustest.MustConnect(t, emb.ClientURL(), 1)
			before := streamHeads(t, js)
			require.Equal(t, 200, post(t, srv.URL+"/_sim/tick", "").Status)
			require.Equal(t, 200, post(t, srv.URL+"/_sim/faults", `{"source":"analytics","mode":"timeout"}`).Status)
			published := func() bool { return streamHeads(t, js).State > before.State }
			r := tc.lose(t, stop, func() resp { return post(t, m.Admin+"/admin/ingest", "") }, published)
			require.Equal(t, 503, r.Status, "%s", r.Body)
			e := obj(r.JSON["error"])
			assert.Equal(t, "unavailable", e["code"])
			msg := e["message"].(string)
			t.Logf("POST /admin/ingest: 503 %s", msg)
			assert.Contains(t, msg, "NATS is unreachable")
			assert.Contains(t, msg, "cannot know who holds the ingest lease")
			assert.Contains(t, msg, tc.what)
			for _, untrue := range []string{"another ingest", "held by", "standby", "internal", "upstream_error"} {
				assert.NotContains(t, msg, untrue)
			}
			assert.Equal(t, 1, strings.Count(msg, ". ")+1, "one sentence: %s", msg)
		})
	}
}

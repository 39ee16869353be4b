package node

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/marketd/marketd/config"
	"github.com/marketd/marketd/ingest"
	"github.com/marketd/marketd/ingest/sim"
	"github.com/marketd/marketd/readmodel/bus/bustest"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStartupCycleOutlivesTheAdminDeadline: POST /admin/ingest gives up at
// the admin deadline, but the cycle a node runs to turn ready does not: at
// the large size a first cycle takes longer than the deadline, and a cut
// one left the node unready until the next scheduled cycle.
func TestStartupCycleOutlivesTheAdminDeadline(t *testing.T) {
	ctx := context.Background()
	js := bustest.MustConnect(t, bustest.MustStartServer(t), 1)
	s := sim.New(sim.Options{Collections: 5, TokensPerCollection: 20})
	const delay = 50 * time.Millisecond // per upstream request: a cycle takes several
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(delay)
		s.Handler().ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	cfg := config.Default()
	for _, name := range config.SourceNames {
		cfg.Sources[name] = config.Source{BaseURL: srv.URL + "/" + name, Interval: time.Hour, Timeout: 30 * time.Second}
	}
	in, err := NewIngest(cfg, js, nil, zerolog.Nop(), ingest.Hooks{})
	require.NoError(t, err)
	require.NoError(t, in.Open(ctx))
	t.Cleanup(func() { assert.NoError(t, in.Close(context.Background())) })

	f := &Feed{in: in, js: js, log: zerolog.Nop(), deadline: delay}
	_, err = f.RunIngest(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded, "POST /admin/ingest answers at its deadline")

	cycles := in.Stats().Cycles
	require.NoError(t, f.startupCycle(ctx), "the start-up cycle runs to its end")
	assert.Equal(t, cycles+1, in.Stats().Cycles, "and completes")
}

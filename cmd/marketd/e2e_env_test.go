package main

import (
	"net/url"
	"testing"

	"github.com/marketd/marketd/ingest/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const e2eSeed = "7"

// apiEnv is one running node with a small simulated market, limits raised
// so that tests are not throttled, and a short source timeout so that
// timeout faults resolve quickly.
type apiEnv struct {
	*Main
	edge map[string]string // edge-case name → collection id
}

func newAPIEnv(t *testing.T, extra ...string) *apiEnv {
	t.Helper()
	args := append([]string{"--sim-seed", e2eSeed, "--sim-collections", "40", "--rate-list", "1000000",
		"--rate-item", "1000000", "--source-timeout", "5s", "--cursor-key", testCursorKey}, extra...)
	m := MustRunMain(t, args...)
	return &apiEnv{Main: m, edge: sim.New(sim.Options{Seed: 7, Collections: 40}).EdgeCases()}
}

// id returns the collection id of an edge case.
func (e *apiEnv) id(t *testing.T, name string) string {
	t.Helper()
	id, ok := e.edge[name]
	require.True(t, ok, "edge case %s", name)
	return id
}

// fault sets a simulator fault mode through its control API.
func (e *apiEnv) fault(t *testing.T, source, mode string) {
	t.Helper()
	r := post(t, e.Sim+"/_sim/faults", `{"source":"`+source+`","mode":"`+mode+`"}`)
	require.Equal(t, 200, r.Status, "%s", r.Body)
}

// reset sets every simulator source back to ok.
func (e *apiEnv) reset(t *testing.T) {
	t.Helper()
	r := post(t, e.Sim+"/_sim/faults/reset", "")
	require.Equal(t, 200, r.Status, "%s", r.Body)
}

// tick advances the simulated market one step.
func (e *apiEnv) tick(t *testing.T) {
	t.Helper()
	r := post(t, e.Sim+"/_sim/tick", "")
	require.Equal(t, 200, r.Status, "%s", r.Body)
}

// cycle runs one ingest cycle and returns once the projector applied it.
func (e *apiEnv) cycle(t *testing.T) map[string]any {
	t.Helper()
	r := post(t, e.Admin+"/admin/ingest", "")
	require.Equal(t, 200, r.Status, "%s", r.Body)
	return r.JSON
}

func (e *apiEnv) get(t *testing.T, path string, headers ...string) resp {
	t.Helper()
	return get(t, e.API+path, headers...)
}

// collection returns the path of a collection resource.
func collection(id string, sub ...string) string {
	p := "/v1/collections/" + url.PathEscape(id)
	for _, s := range sub {
		p += "/" + s
	}
	return p
}

// assertError checks SPEC §7's error body and headers.
func assertError(t *testing.T, r resp, status int, code string) {
	t.Helper()
	require.Equal(t, status, r.Status, "%s", r.Body)
	e := obj(r.JSON["error"])
	require.NotNil(t, e, "error body: %s", r.Body)
	require.Equal(t, code, e["code"])
	require.NotEmpty(t, e["message"])
	require.NotContains(t, r.JSON, "data", "no partial success")
	require.Equal(t, "no-store", r.Header.Get("Cache-Control"))
	require.Equal(t, "*", r.Header.Get("Access-Control-Allow-Origin"))
}

// TestSimAnchorSetsTheMarketClock: --sim-anchor is the market's clock at
// tick 0, and each tick moves it one 2-minute step.
func TestSimAnchorSetsTheMarketClock(t *testing.T) {
	m := MustRunMain(t, "--sim-collections", "3", "--sim-anchor", "2030-01-02T03:04:00Z")
	for _, want := range []string{"2030-01-02T03:06:00Z", "2030-01-02T03:08:00Z"} {
		r := post(t, m.Sim+"/_sim/tick", "")
		require.Equal(t, 200, r.Status, "%s", r.Body)
		assert.Equal(t, want, r.JSON["now"])
	}
}

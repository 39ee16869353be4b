package main

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAdminEndToEnd checks the admin listener: health, readiness, a manual
// cycle answered after projection, per-source status through a fault, and
// the Prometheus metrics an operator's dashboards and alerts read (requests
// and their latency, polls and rejected rows, projector lag and position,
// sweeps, the view cache and the LSM tree's size).
func TestAdminEndToEnd(t *testing.T) {
	e := newAPIEnv(t)
	assert.Equal(t, 200, get(t, e.Admin+"/healthz").Status)
	assert.Equal(t, 200, get(t, e.Admin+"/readyz").Status)

	sum := e.cycle(t)
	assert.Contains(t, sum, "sources")
	assert.Contains(t, obj(sum["sources"]), "order-book")
	assert.Contains(t, sum, "position")

	e.fault(t, "order-book", "error")
	e.cycle(t)
	r := get(t, e.Admin+"/admin/sources")
	require.Equal(t, 200, r.Status, "%s", r.Body)
	found := false
	for _, v := range arr(r.JSON["sources"]) {
		s := obj(v)
		switch s["source"] {
		case "order-book":
			found = true
			assert.Equal(t, false, s["healthy"])
			assert.Equal(t, "http_5xx", s["errorClass"])
			assert.NotEmpty(t, s["lastFailure"])
			assert.NotEmpty(t, s["lastSuccess"], "it answered well before the fault")
		case "analytics":
			assert.Equal(t, true, s["healthy"])
		}
	}
	assert.True(t, found, "order-book reported: %s", r.Body)
	e.reset(t)
	e.cycle(t)

	get(t, e.API+"/v1/collections")
	res, err := http.Get(e.Admin + "/metrics")
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	metrics := string(b)
	for _, want := range []string{
		`marketd_http_requests_total{`,
		`route="/v1/collections"`,
		`marketd_http_request_duration_seconds_bucket{`,
		`marketd_ingest_polls_total{outcome="http_5xx",source="order-book"}`,
		`marketd_ingest_rejected_rows_total{reason="unknown_chain"`,
		`marketd_projector_lag_messages{stream="MARKETD_STATE"}`,
		`marketd_projector_applied_sequence{stream="MARKETD_SALES"}`,
		`marketd_projector_sweep_renders_total{view="listings"}`,
		`marketd_projector_sweep_seconds_total `,
		`marketd_views_cache_entries `,
		`marketd_views_lsm_bytes `,
	} {
		assert.True(t, strings.Contains(metrics, want), "metrics contain %s", want)
	}
}

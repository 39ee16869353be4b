package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCLI: version, help with the roles, and a bad flag in one line.
func TestCLI(t *testing.T) {
	tests := []struct {
		name              string
		args              []string
		wantErr           string // substring; "" = no error
		stdout, stderr    []string
		stderrEmpty, help bool
	}{
		{name: "version command", args: []string{"version"}, stdout: []string{"marketd ", "revision ", "go1."}, stderrEmpty: true},
		{name: "--version", args: []string{"--version"}, stdout: []string{"marketd ", "go1."}, stderrEmpty: true},
		{name: "-h lists the roles and the flags", args: []string{"-h"}, wantErr: "help requested", help: true,
			stderr: []string{"Usage: marketd [command]", "no command means all", "\n  all ", "\n  serve ", "\n  ingest ", "\n  sim ", "\n  replay ", "\n  digest ", "\n  version ", "-http-addr", "MARKETD_HTTP_ADDR"}},
		{name: "role -h", args: []string{"serve", "-h"}, wantErr: "help requested", help: true, stderr: []string{"Commands", "-nats"}},
		{name: "bad flag is one line", args: []string{"all", "--no-such-flag"}, wantErr: "flag provided but not defined: -no-such-flag", stderrEmpty: true},
		{name: "flag without value", args: []string{"--http-addr"}, wantErr: "flag needs an argument", stderrEmpty: true},
		{name: "hub domain on ingest", args: []string{"ingest", "--nats", "nats://127.0.0.1:1", "--hub-domain", "hub"}, wantErr: "--hub-domain (MARKETD_HUB_DOMAIN) is for serve", stderrEmpty: true},
		{name: "hub domain on all", args: []string{"--hub-domain", "hub"}, wantErr: "all runs at the hub", stderrEmpty: true},
		{name: "unknown command", args: []string{"frobnicate"}, wantErr: `unknown command "frobnicate"`, stderrEmpty: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			err := run(context.Background(), tc.args, func(string) string { return "" }, &out, &errOut)
			if tc.wantErr == "" {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				assert.NotContains(t, err.Error(), "\n", "one line")
			}
			for _, s := range tc.stdout {
				assert.Contains(t, out.String(), s)
			}
			for _, s := range tc.stderr {
				assert.Contains(t, errOut.String(), s)
			}
			if tc.stderrEmpty {
				assert.Empty(t, errOut.String(), "nothing but the error (main prints it)")
			}
		})
	}
}

// TestNoCommandSaysAll: `marketd` without a command runs all and says so.
func TestNoCommandSaysAll(t *testing.T) {
	var errOut bytes.Buffer
	err := run(context.Background(), []string{"--nats", "nats://127.0.0.1:1", "--data-dir", t.TempDir()},
		func(string) string { return "" }, io.Discard, &errOut)
	require.Error(t, err, "no NATS there: the role fails after starting")
	assert.Contains(t, errOut.String(), `"role":"all"`)
	assert.Contains(t, errOut.String(), "no command given: running all")
}

// TestOperatorSurface runs a node and checks what operators read: log
// times with milliseconds, listeners logged with their URLs, a cycle
// started by POST /admin/ingest logging its outcome (failed sources
// named, duration in took_ms), and the per-source poll duration,
// last-success and build-info metrics.
func TestOperatorSurface(t *testing.T) {
	m := MustRunMain(t, "--sim-collections", "10")
	r := post(t, m.Sim+"/_sim/faults", `{"source":"analytics","mode":"error"}`)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	r = post(t, m.Admin+"/admin/ingest", "")
	require.Equal(t, 200, r.Status, "%s", r.Body)

	timeRE := regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)
	var cycle, serving map[string]any
	listening := map[string]string{}
	for _, line := range m.logs.Lines() {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &rec), line)
		assert.Regexp(t, timeRE, rec["time"], "RFC 3339 with milliseconds, UTC")
		switch rec["message"] {
		case "ingest cycle":
			if rec["trigger"] == "request" {
				if fails, _ := rec["sourcesFailed"].([]any); len(fails) > 0 {
					cycle = rec
				}
			}
		case "serving":
			serving = rec
		case "listening":
			listening[rec["listener"].(string)], _ = rec["url"].(string)
		}
	}
	require.NotNil(t, cycle, "a requested cycle with a failed source is logged\n%s", m.logs)
	assert.Equal(t, "warn", cycle["level"])
	assert.Equal(t, []any{"analytics"}, cycle["sourcesFailed"])
	assert.Contains(t, cycle, "took_ms")
	assert.NotContains(t, cycle, "took")
	require.NotNil(t, serving, "%s", m.logs)
	assert.Equal(t, m.API+"/v1", serving["api"])
	assert.Equal(t, m.Admin, serving["admin"])
	assert.Equal(t, map[string]string{"http": m.API, "admin": m.Admin, "sim": m.Sim}, listening)

	resp, err := http.Get(m.Admin + "/metrics")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	metrics := string(body)
	for _, want := range []string{
		`marketd_build_info{goversion="go1.`,
		`marketd_ingest_poll_duration_seconds_bucket{source="order-book",le="0.01"}`,
		`marketd_ingest_poll_duration_seconds_count{source="analytics"} 2`,
		`marketd_ingest_source_last_success_timestamp_seconds{source="order-book"}`,
	} {
		assert.Contains(t, metrics, want)
	}
	assert.Regexp(t, `marketd_build_info\{[^}]*revision="[^"]+"[^}]*version="[^"]+"\} 1`, metrics)
}

package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/node"
)

// runRole runs one short-lived role (replay, digest) in-process and returns
// its stdout.
func runRole(t *testing.T, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(context.Background(), args, func(string) string { return "" }, &out, &errOut)
	require.NoError(t, err, "marketd %s\n%s", strings.Join(args, " "), errOut.String())
	return out.String()
}

// TestReplayDigestEqualsLive runs `marketd all`, moves the market, stops
// it, then rebuilds a copy of its data dir with `marketd replay` (from the
// embedded store under <data-dir>/nats) and compares `marketd digest` of
// both at the same --at: a replayed node and a live node hold the same views.
func TestReplayDigestEqualsLive(t *testing.T) {
	live := t.TempDir()
	m := MustRunMain(t, "--data-dir", live, "--sim-seed", e2eSeed, "--sim-collections", "30", "--cursor-key", testCursorKey)
	e := &apiEnv{Main: m}
	e.tick(t)
	e.cycle(t)
	m.Stop(t)

	replayed := t.TempDir()
	require.NoError(t, exec.Command("cp", "-a", live+"/.", replayed).Run())
	require.NoError(t, os.RemoveAll(node.ViewsDir(replayed)), "replay rebuilds the views from the streams alone")
	progress := runRole(t, "replay", "--data-dir", replayed)
	assert.Regexp(t, regexp.MustCompile(`\d+ messages`), progress, "replay reports progress")

	at := time.Now().Add(time.Minute).UTC().Format(time.RFC3339)
	a := strings.TrimSpace(runRole(t, "digest", "--data-dir", live, "--at", at))
	b := strings.TrimSpace(runRole(t, "digest", "--data-dir", replayed, "--at", at))
	assert.Regexp(t, `^[0-9a-f]{64}$`, a, "one hex line")
	assert.Equal(t, a, b, "replay == live")
}

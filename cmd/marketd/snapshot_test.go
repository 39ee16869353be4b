package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/config"
	"github.com/marketd/marketd/readmodel/bus"
	"github.com/marketd/marketd/readmodel/bus/bustest"
)

// TestJoiningNodeStartsFromTheViewsSnapshot is a tier's node joining with
// an empty view store: it restores the views snapshot another node
// published (POST /admin/snapshot), applies the streams after it, and ends
// with the views of a node that applied everything, and of one that
// joined with --join replay (which builds them from the streams).
func TestJoiningNodeStartsFromTheViewsSnapshot(t *testing.T) {
	url := bustest.MustStartServer(t)
	a := MustRunMain(t, "--nats", url, "--sim-seed", e2eSeed, "--sim-collections", "30", "--cursor-key", testCursorKey)
	e := &apiEnv{Main: a}
	serve := func(join string) *Main {
		return MustRunMain(t, "serve", "--nats", url, "--join", join, "--poll-interval", "1h", "--cursor-key", testCursorKey)
	}
	caughtUp := func(nodes ...*Main) {
		t.Helper()
		tr := &tier{t: t, js: bustest.MustConnect(t, url, 1)}
		tr.caughtUp(nodes...)
	}

	// A tier without a snapshot: the node builds its views from the
	// streams as they stand (in memory, written once), then applies what
	// follows.
	first := serve("snapshot")
	assert.Contains(t, first.logs.String(), "no views snapshot in the tier")
	assert.Regexp(t, `"in_memory":true.*views built from the streams`, first.logs.String())
	first.Stop(t)

	r := post(t, a.Admin+"/admin/snapshot", "")
	require.Equal(t, 200, r.Status, "%s", r.Body)
	assert.Positive(t, r.JSON["bytes"], "%s", r.Body)
	assert.Positive(t, r.JSON["state"], "the snapshot names the positions it holds: %s", r.Body)
	snapshotState := r.JSON["state"].(float64)

	// The market moves after the snapshot: the joining node applies that.
	e.tick(t)
	e.cycle(t)

	joined := serve("snapshot")
	replayed := serve("replay")
	caughtUp(a, joined, replayed)
	assert.Contains(t, joined.logs.String(), "views restored from the tier's snapshot")
	assert.NotContains(t, replayed.logs.String(), "views restored")
	assert.Contains(t, replayed.logs.String(), "views built from the streams", "a node joining by replay builds its views")
	applied := metric(string(get(t, joined.Admin+"/metrics").Body), `marketd_projector_applied_sequence{stream="`+bus.StateStream+`"}`)
	assert.Greater(t, applied, snapshotState, "the joined node applied the cycle published after the snapshot")

	// A node with views publishes; one without (ingest) says it keeps none.
	r = post(t, joined.Admin+"/admin/snapshot", "")
	assert.Equal(t, 200, r.Status, "%s", r.Body)

	at := time.Now().Add(time.Minute).UTC().Format(time.RFC3339)
	for _, m := range []*Main{a, joined, replayed} {
		m.Stop(t)
	}
	want := strings.TrimSpace(runRole(t, "digest", "--data-dir", a.DataDir, "--at", at))
	assert.Equal(t, want, strings.TrimSpace(runRole(t, "digest", "--data-dir", joined.DataDir, "--at", at)), "joined from the snapshot == live")
	assert.Equal(t, want, strings.TrimSpace(runRole(t, "digest", "--data-dir", replayed.DataDir, "--at", at)), "joined by replay == live")
}

// TestSnapshotIsRefusedWithoutViews: the admin endpoint of a node that
// keeps no views answers 503 with the reason, not a snapshot.
func TestSnapshotIsRefusedWithoutViews(t *testing.T) {
	url := bustest.MustStartServer(t)
	args := []string{"ingest", "--nats", url, "--poll-interval", "1h"}
	for _, name := range config.SourceNames {
		args = append(args, "--source-"+name+"-url", "http://127.0.0.1:1/"+name)
	}
	m := StartMain(t, args...)
	r := post(t, m.Admin+"/admin/snapshot", "")
	assert.Equal(t, 503, r.Status, "%s", r.Body)
	assert.Contains(t, string(r.Body), "keeps no views")
}

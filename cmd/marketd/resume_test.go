package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/config"
)

// cycleLog is the log line of an ingest cycle.
type cycleLog struct {
	Trigger         string `json:"trigger"`
	Published       int    `json:"published"`
	Unchanged       int    `json:"unchanged"`
	StateSeq        uint64 `json:"stateSeq"`
	ResumedRead     *int   `json:"resumedRead"`
	ResumedSubjects int    `json:"resumedSubjects"`
	ResumedMarks    int    `json:"resumedMarks"`
}

// firstCycle returns the log line of m's first ingest cycle.
func firstCycle(t *testing.T, m *Main) cycleLog {
	t.Helper()
	for _, line := range m.logs.Lines() {
		if !strings.Contains(line, `"message":"ingest cycle"`) {
			continue
		}
		var c cycleLog
		require.NoError(t, json.Unmarshal([]byte(line), &c), line)
		return c
	}
	t.Fatalf("no ingest cycle logged\n%s", m.logs)
	return cycleLog{}
}

// TestARestartedNodePublishesOnlyWhatChanged: `marketd all` restarted on
// its data dir over an unchanged market reads the state stream and the
// polls' resume points back before its first cycle (ingest/resume.go), so
// that cycle publishes nothing again: no state subject (the state stream
// grows by the one "polled" message of each poll, not by the whole
// market) and no sale (the sales cursor is the one saved after the
// cycle before the last). The restarted node is ready and serves the same
// views.
func TestARestartedNodePublishesOnlyWhatChanged(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--data-dir", dir, "--sim-seed", e2eSeed, "--sim-collections", "30", "--sim-tokens", "20",
		"--sim-anchor", "2026-11-01T00:00:00Z", "--cursor-key", testCursorKey}
	first := MustRunMain(t, args...)
	before := get(t, first.API+"/v1/collections?limit=10")
	require.Equal(t, 200, before.Status)
	c1 := firstCycle(t, first)
	// A second cycle: the marks saved after it are those of the first.
	r := post(t, first.Admin+"/admin/ingest", "")
	require.Equal(t, 200, r.Status, "%s", r.Body)
	stopped := uint64(obj(r.JSON["position"])["state"].(float64))
	first.Stop(t)

	second := MustRunMain(t, args...)
	c2 := firstCycle(t, second)
	t.Logf("first cycle of the first process: %+v", c1)
	t.Logf("first cycle of the restarted one: %+v", c2)
	require.NotNil(t, c1.ResumedRead, "the first process read the (empty) stream back too")
	assert.Zero(t, *c1.ResumedRead)
	require.NotNil(t, c2.ResumedRead)
	assert.Positive(t, c2.ResumedSubjects)
	require.Greater(t, c1.StateSeq, uint64(150), "the first cycle published the market: 30 collections × documents, stats, analytics, two listing sets, tokens")
	polls := len(config.SourceNames) + 1 // the seven sources and the token poll
	assert.LessOrEqual(t, c2.StateSeq-stopped, uint64(polls), "no state subject published again, only each poll's polled message")
	assert.Positive(t, c2.Unchanged)
	assert.Equal(t, 2, c2.ResumedMarks, "the token watermark and the sales cursor")
	assert.Zero(t, c2.Published, "no sale offered again either")

	after := get(t, second.API+"/v1/collections?limit=10")
	require.Equal(t, 200, after.Status)
	assert.Equal(t, without(before.JSON["data"], "asOf"), without(after.JSON["data"], "asOf"), "the same views (the restarted node's polls are newer)")
}

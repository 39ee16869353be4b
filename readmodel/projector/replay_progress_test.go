package projector_test

import (
	"bytes"
	"context"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel/projector"
)

// TestReplayProgressCountsMessages: on a compacted state stream (most
// sequences below the head are gone) every progress line's applied +
// left equals the messages the replay applies, and the last says 0 left.
func TestReplayProgressCountsMessages(t *testing.T) {
	ctx := context.Background()
	e := mustEnv(t)
	e.run(cycle(6, 1)...)
	e.run(cycle(6, 2)...) // supersedes the first round's state subjects

	var out bytes.Buffer
	res, err := projector.ReplayWithResult(ctx, e.js, t.TempDir(), projector.ReplayOptions{
		Projector: e.opts(), Log: zerolog.Nop(), ProgressEvery: 1, // a line per batch
	}, &out)
	require.NoError(t, err)
	lines := regexp.MustCompile(`replay: (\d+) messages, .*?, (\d+) messages left`).FindAllStringSubmatch(out.String(), -1)
	require.NotEmpty(t, lines, "%s", out.String())
	for _, l := range lines {
		applied, _ := strconv.Atoi(l[1])
		left, _ := strconv.Atoi(l[2])
		assert.Equal(t, res.Messages, applied+left, "line %q", l[0])
	}
	last := lines[len(lines)-1]
	assert.Equal(t, "0", last[2])
	assert.Equal(t, strconv.Itoa(res.Messages), last[1])
}

// TestReplayReportsProgress: a build from the start reports each phase to
// OnProgress (messages while it applies, records while it writes) and to
// its progress lines, with the collections built so far and an estimate
// of the time left; each phase ends with all of its work done, nothing
// left and every collection built.
func TestReplayReportsProgress(t *testing.T) {
	const collections = 7
	tests := []struct {
		name   string
		bulk   int64 // ReplayOptions.BulkLimit
		phases []string
	}{
		{"built in memory and written once", 0, []string{projector.PhaseApplyMemory, projector.PhaseWrite}},
		{"applied in batches", -1, []string{projector.PhaseApply}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			e := mustEnv(t)
			e.run(cycle(collections, 1)...)

			var out bytes.Buffer
			var reports []projector.Progress
			res, err := projector.ReplayWithResult(ctx, e.js, t.TempDir(), projector.ReplayOptions{
				Projector: e.opts(), Log: zerolog.Nop(), ProgressEvery: 1, BulkLimit: tc.bulk,
				OnProgress: func(p projector.Progress) { reports = append(reports, p) },
			}, &out)
			require.NoError(t, err)
			assert.EqualValues(t, collections, res.Collections)

			last := map[string]projector.Progress{}
			var order []string
			for _, p := range reports {
				prev, seen := last[p.Phase]
				if !seen {
					order = append(order, p.Phase)
				}
				assert.GreaterOrEqual(t, p.Done, prev.Done, "done only grows within %s", p.Phase)
				assert.GreaterOrEqual(t, p.Collections, prev.Collections, "collections only grow")
				last[p.Phase] = p
			}
			assert.Equal(t, tc.phases, order)
			for _, ph := range tc.phases {
				end := last[ph]
				assert.Positive(t, end.Done, ph)
				assert.Equal(t, end.Total, end.Done, "%s ends with its work done", ph)
				assert.Zero(t, end.Left, "%s ends with nothing left", ph)
				assert.EqualValues(t, collections, end.Collections, ph)
			}
			assert.EqualValues(t, res.Messages, last[tc.phases[0]].Done, "the apply counts messages")

			lines := regexp.MustCompile(`(?m)^replay: .*?(\d+) collections, (about \S+ left|time left unknown)`).FindAllStringSubmatch(out.String(), -1)
			require.NotEmpty(t, lines, "%s", out.String())
			end := lines[len(lines)-1]
			assert.Equal(t, strconv.Itoa(collections), end[1], "the last line: %s", end[0])
			assert.Equal(t, "about 0s left", end[2], "the last line: %s", end[0])
		})
	}
}

// TestETA: the time left is the time taken scaled by the work left over
// the work done, unknown before anything is done, 0 when nothing is left.
func TestETA(t *testing.T) {
	tests := []struct {
		name       string
		done, left int64
		took, want time.Duration
	}{
		{"a third done", 100, 200, 10 * time.Second, 20 * time.Second},
		{"nothing done yet", 0, 50, time.Second, -1},
		{"nothing left", 10, 0, time.Second, 0},
		{"no time taken", 10, 10, 0, -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, projector.ETA(tc.done, tc.left, tc.took))
		})
	}
}

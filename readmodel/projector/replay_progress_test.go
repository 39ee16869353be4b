package projector_test

import (
	"bytes"
	"context"
	"regexp"
	"strconv"
	"testing"

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

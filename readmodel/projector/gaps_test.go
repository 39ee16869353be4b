package projector_test

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/bus"
	"github.com/marketd/marketd/readmodel/projector"
)

// deleteSeqs removes messages from stream, as a damaged block or an
// operator's purge leaves it: the sequences stay counted, the messages
// are gone.
func deleteSeqs(t *testing.T, js jetstream.JetStream, stream string, seqs ...uint64) {
	t.Helper()
	ctx := context.Background()
	s, err := js.Stream(ctx, stream)
	require.NoError(t, err)
	for _, q := range seqs {
		require.NoError(t, s.DeleteMsg(ctx, q))
	}
}

// fullCycleEnd is the message a full ingest cycle ends with.
func fullCycleEnd() *readmodel.Message {
	m := statusMsg(readmodel.SourceCollectionIndex, "", true, t0)
	m.ID = "full/status/collection-index//0" + readmodel.FullCycleEnd
	return m
}

func TestGapsArePassedOverCountedAndHealedByAFullCycle(t *testing.T) {
	tests := []struct {
		name   string
		damage func(t *testing.T, e *env, pos readmodel.Position) // after pos was published, before it is applied
		stream string
		reason string // of the last gap
		count  uint64 // sequences skipped on stream
	}{
		{
			name: "the state stream's tail is gone",
			damage: func(t *testing.T, e *env, pos readmodel.Position) {
				deleteSeqs(t, e.js, bus.StateStream, pos.State-1, pos.State)
			},
			stream: bus.StateStream, reason: projector.GapMissing, count: 2,
		},
		{
			name: "sales in the middle of the append-only sales stream are gone",
			damage: func(t *testing.T, e *env, pos readmodel.Position) {
				deleteSeqs(t, e.js, bus.SalesStream, pos.Sales-2)
			},
			stream: bus.SalesStream, reason: projector.GapMissing, count: 1,
		},
		{
			name: "an undecodable message",
			damage: func(t *testing.T, e *env, _ readmodel.Position) {
				_, err := e.js.Publish(context.Background(), "marketd.state.collection.collection-index.x", []byte("garbage"))
				require.NoError(t, err)
			},
			stream: bus.StateStream, reason: projector.GapUndecodable, count: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			e := mustEnv(t)
			e.publish(cycle(3, 1)...)
			pos := e.publish(cycle(3, 2)...)
			tt.damage(t, e, pos)

			// A node that reads the damaged streams (a live node's consumer
			// may have fetched the messages before they went).
			st, p := e.mustNode(t.TempDir())
			_, err := p.ApplyAvailable(ctx)
			require.NoError(t, err, "nothing is waited for that is gone")
			g := p.Gaps()
			assert.Equal(t, tt.count, g.Skipped[tt.stream])
			require.NotEmpty(t, g.Ranges)
			last := g.Ranges[len(g.Ranges)-1]
			assert.Equal(t, tt.stream, last.Stream)
			assert.Equal(t, tt.reason, last.Reason)
			assert.Equal(t, tt.count, last.To-last.From+1)
			assert.True(t, g.Incomplete)
			assert.Contains(t, g.Reason(), "bus damaged")
			assert.Contains(t, g.Reason(), tt.stream)
			for _, id := range []string{"ethereum_0x0000", "ethereum_0x0001", "ethereum_0x0002"} {
				_, err := st.Collection(ctx, id)
				assert.NoError(t, err, id)
			}

			e.publish(fullCycleEnd())
			_, err = p.ApplyAvailable(ctx)
			require.NoError(t, err)
			g = p.Gaps()
			assert.False(t, g.Incomplete, "a full cycle applied after the gaps heals them")
			assert.Empty(t, g.Reason())
			assert.False(t, g.HealedAt.IsZero())
			assert.Equal(t, tt.count, g.Skipped[tt.stream], "the count stays")
		})
	}
}

// TestLiveConsumerPassesOverAGoneTail: the background loop used to
// recreate its consumer every few seconds, forever, behind a head it
// could never reach.
func TestLiveConsumerPassesOverAGoneTail(t *testing.T) {
	ctx := context.Background()
	e := mustEnv(t)
	e.run(cycle(2, 1)...)
	pos := e.publish(cycle(2, 2)...)
	deleteSeqs(t, e.js, bus.StateStream, pos.State-1, pos.State)

	require.NoError(t, e.p.Open(ctx))
	t.Cleanup(func() { _ = e.p.Close(context.Background()) })
	require.NoError(t, e.p.WaitFor(ctx, pos), "the position passes the gone tail")
	g := e.p.Gaps()
	assert.Equal(t, uint64(2), g.Skipped[bus.StateStream])
	assert.True(t, g.Incomplete)

	later := e.publish(fullCycleEnd())
	require.NoError(t, e.p.WaitFor(ctx, later))
	assert.False(t, e.p.Gaps().Incomplete)
}

func TestReplayPassesOverGaps(t *testing.T) {
	ctx := context.Background()
	e := mustEnv(t)
	e.run(cycle(4, 1)...)
	pos := e.publish(cycle(4, 2)...)
	deleteSeqs(t, e.js, bus.StateStream, pos.State)
	deleteSeqs(t, e.js, bus.SalesStream, 2)

	var out bytes.Buffer
	dataDir := t.TempDir()
	res, err := projector.ReplayWithResult(ctx, e.js, dataDir, projector.ReplayOptions{Projector: e.opts(), Log: zerolog.Nop()}, &out)
	require.NoError(t, err, "a replay finishes through gaps")
	assert.Equal(t, uint64(1), res.Gaps.Skipped[bus.StateStream])
	assert.Equal(t, uint64(1), res.Gaps.Skipped[bus.SalesStream])
	assert.True(t, res.Gaps.Incomplete)
	assert.Contains(t, out.String(), "passed over MARKETD_SALES 2-2 (missing)")

	// A node serving the replayed views (a rebuild) keeps saying so until
	// a full cycle.
	_, p := e.mustNode(filepath.Join(dataDir, "badger"))
	p.Adopt(res.Gaps)
	assert.True(t, p.Gaps().Incomplete)
	assert.Equal(t, res.Gaps.Ranges, p.Gaps().Ranges)
	e.publish(fullCycleEnd())
	_, err = p.ApplyAvailable(ctx)
	require.NoError(t, err)
	assert.False(t, p.Gaps().Incomplete)
}

// TestLiveConsumerFollowsAStreamThatReissuedSequences: a stream recreated
// under a running node (its server lost its store) is applied again from
// its start over the views, instead of waited on behind a position the
// new stream has not reached.
func TestLiveConsumerFollowsAStreamThatReissuedSequences(t *testing.T) {
	ctx := context.Background()
	e := mustEnv(t)
	e.run(cycle(2, 1)...)
	e.run(cycle(2, 2)...)
	require.NoError(t, e.p.Open(ctx))
	t.Cleanup(func() { _ = e.p.Close(context.Background()) })

	require.NoError(t, e.js.DeleteStream(ctx, bus.StateStream))
	require.Eventually(t, func() bool { // the server removes the old store asynchronously
		if bus.EnsureStreams(ctx, e.js, bus.StreamOptions{}) != nil {
			return false
		}
		s, err := e.js.Stream(ctx, bus.StateStream)
		if err != nil {
			return false
		}
		info, err := s.Info(ctx)
		return err == nil && info.State.LastSeq == 0
	}, 10*time.Second, 50*time.Millisecond)
	e.publish(fullCycleEnd())
	s, err := e.js.Stream(ctx, bus.StateStream)
	require.NoError(t, err)
	info, err := s.Info(ctx)
	require.NoError(t, err)
	head := info.State.LastSeq
	require.Less(t, head, e.p.Applied().State, "the new stream's sequences are below the applied position")

	require.Eventually(t, func() bool { return e.p.Applied().State == head && !e.p.Gaps().Incomplete }, 30*time.Second, 20*time.Millisecond,
		"the re-issued stream is applied from its start, up to the full cycle's end")
	g := e.p.Gaps()
	require.NotEmpty(t, g.Ranges)
	assert.Equal(t, projector.GapReissued, g.Ranges[0].Reason)
	_, err = e.st.Collection(ctx, "ethereum_0x0001")
	assert.NoError(t, err, "the views are kept")
}

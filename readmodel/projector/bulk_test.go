package projector_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/projector"
	"github.com/marketd/marketd/readmodel/store"
)

// diffKeys lists the keys whose values differ between want and got, or
// that only one holds (at most 20 of them, sorted).
func diffKeys(want, got map[string]string) []string {
	var differ []string
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			differ = append(differ, fmt.Sprintf("%q (in both: %t)", k, ok))
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			differ = append(differ, fmt.Sprintf("%q only in the second", k))
		}
	}
	sort.Strings(differ)
	return differ[:min(len(differ), 20)]
}

// TestBulkReplayEqualsBatched: a replay from the start that builds in
// memory and writes the store once leaves the same keys and values (and
// so the same digest) as one that applies the streams in batches into
// Badger, from recorded streams of every kind of message, with a listing
// source failing for one collection and then everywhere. A replay whose
// streams are over the limit applies in batches and says so.
func TestBulkReplayEqualsBatched(t *testing.T) {
	ctx := context.Background()
	e := mustEnv(t)
	gone := t0.Add(-time.Hour)
	e.run(cycle(40, 1)...)
	e.run(statusMsg(readmodel.SourceOrderBook, "ethereum_0x0003", false, gone))
	e.run(cycle(40, 2)[:90]...)
	e.run(statusMsg(readmodel.SourceIndexerMirror, "", false, gone))
	opts := projector.ReplayOptions{Projector: e.opts(), Log: zerolog.Nop()}
	opts.Projector.MaxBatch = 1 // batches, and so versions, independent of timing

	refDir := t.TempDir()
	ropts := opts
	ropts.BulkLimit = -1
	var refOut bytes.Buffer
	ref, err := projector.ReplayWithResult(ctx, e.js, refDir, ropts, &refOut)
	require.NoError(t, err)
	require.False(t, ref.Bulk)
	assert.Contains(t, refOut.String(), "phase apply")
	refSt := mustStore(t, filepath.Join(refDir, "badger"))
	want := mustKeys(t, refSt)
	require.Greater(t, len(want), 500, "a store worth comparing")
	require.Equal(t, digest(t, e.st), digest(t, refSt), "the batched replay equals the live node")

	cases := []struct {
		name       string
		limit      int64
		wantBulk   bool
		wantOut    []string
		wantPhases []string
	}{
		{"bulk by default", 0, true, []string{"phase apply in memory", "phase write", "records (100 %)"}, []string{projector.PhaseApplyMemory, projector.PhaseWrite}},
		{"streams over the limit: batched", 1, false, []string{"applying them in batches", "phase apply"}, []string{projector.PhaseApply}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := opts
			o.BulkLimit = tc.limit
			var phases []string
			o.OnPhase = func(ph string) { phases = append(phases, ph) }
			dataDir := t.TempDir()
			var out bytes.Buffer
			res, err := projector.ReplayWithResult(ctx, e.js, dataDir, o, &out)
			require.NoError(t, err)
			assert.Equal(t, tc.wantBulk, res.Bulk)
			assert.Equal(t, tc.wantPhases, phases)
			assert.Equal(t, ref.Messages, res.Messages)
			for _, s := range tc.wantOut {
				assert.Contains(t, out.String(), s)
			}
			st := mustStore(t, filepath.Join(dataDir, "badger"))
			assert.Empty(t, diffKeys(want, mustKeys(t, st)))
			assert.Equal(t, digest(t, refSt), digest(t, st))
			_, err = os.Stat(filepath.Join(dataDir, "badger.new"))
			assert.True(t, os.IsNotExist(err), "no build left beside the views")
		})
	}
}

// TestBulkReplayRetentionEqualsBatched: with retentions small enough
// that appends of more events than a collection's feed keeps are cut and
// whole blocks of the market's log are dropped, a replay
// that builds in memory leaves the same keys and values as one that
// applies in batches into Badger.
func TestBulkReplayRetentionEqualsBatched(t *testing.T) {
	ctx := context.Background()
	e := mustEnv(t)
	e.run(cycle(40, 1)...)
	e.run(cycle(40, 2)...)
	e.run(cycle(40, 3)...)
	opts := projector.ReplayOptions{Projector: e.opts(), Log: zerolog.Nop(), Store: store.Options{FeedEvents: 4, MarketEvents: 70}}
	opts.Projector.MaxBatch = 1 // batches, and so versions, independent of timing
	keys := map[int64]map[string]string{}
	for _, limit := range []int64{-1, 0} { // batched, then in memory
		o := opts
		o.BulkLimit = limit
		dataDir := t.TempDir()
		res, err := projector.ReplayWithResult(ctx, e.js, dataDir, o, nil)
		require.NoError(t, err)
		require.Equal(t, limit == 0, res.Bulk)
		keys[limit] = mustKeys(t, mustStore(t, filepath.Join(dataDir, "badger")))
	}
	want := keys[-1]
	market, err := store.DecodeFeedHead([]byte(want["e/n"]))
	require.NoError(t, err)
	require.Greater(t, market.First, uint64(64), "the market's log dropped blocks")
	feed, err := store.DecodeFeedHead([]byte(want["e/s/ethereum_0x0000"]))
	require.NoError(t, err)
	require.Greater(t, feed.First, uint64(1), "a collection's feed dropped events")
	assert.Empty(t, diffKeys(want, keys[0]))
}

// TestReplayDiscardsIncompleteBuild: a replay killed before its swap
// leaves badger.new without the marker SwapIn writes first. A node that
// starts meanwhile does not take it, and the next replay removes it and
// builds again, with or without views in place.
func TestReplayDiscardsIncompleteBuild(t *testing.T) {
	ctx := context.Background()
	e := mustEnv(t)
	e.run(cycle(8, 1)...)
	// What a killed replay leaves: a build of the streams as they were,
	// written and flushed but not swapped in.
	partial := func(t *testing.T, build string) {
		t.Helper()
		mem := store.OpenMemory(store.Options{NoSuperseded: true})
		defer mem.Close(ctx)
		_, err := projector.ReplayInto(ctx, e.js, mem, projector.ReplayOptions{Projector: e.opts(), Log: zerolog.Nop()}, nil)
		require.NoError(t, err)
		_, err = store.WriteMemory(ctx, build, mem, store.Options{}, store.BuildOptions{})
		require.NoError(t, err)
	}
	cases := []struct {
		name string
		live bool
	}{
		{"no views in place", false},
		{"views in place", true},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dataDir := t.TempDir()
			live, build := filepath.Join(dataDir, "badger"), filepath.Join(dataDir, "badger.new")
			if tc.live {
				require.NoError(t, mustStore(t, live).Close(ctx))
			}
			partial(t, build)
			e.run(cycle(8, 2+i)...) // the streams move on after the kill

			// A node starting now opens its views, never the build.
			st, err := store.Open(ctx, live, store.Options{})
			require.NoError(t, err)
			pos, err := st.Positions(ctx, "MARKETD_STATE")
			require.NoError(t, err)
			assert.Zero(t, pos[0].Seq, "the unmarked build was not swapped in")
			require.NoError(t, st.Close(ctx))

			_, err = projector.ReplayWithResult(ctx, e.js, dataDir, projector.ReplayOptions{Projector: e.opts(), Log: zerolog.Nop()}, nil)
			require.NoError(t, err)
			got := mustStore(t, live)
			assert.Equal(t, digest(t, e.st), digest(t, got), "built again from the streams")
			require.NoError(t, got.Close(ctx))
			_, err = os.Stat(build)
			assert.True(t, os.IsNotExist(err))
		})
	}
}

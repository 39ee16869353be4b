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

func TestReplayFromStartEqualsLive(t *testing.T) {
	ctx := context.Background()
	e := mustEnv(t)
	e.run(cycle(6, 1)...)
	e.run(cycle(6, 2)...)

	dataDir := t.TempDir()
	// A stale store is already in place: replay replaces it wholesale.
	old := mustStore(t, filepath.Join(dataDir, "badger"))
	require.NoError(t, old.Close(ctx))

	var out bytes.Buffer
	res, err := projector.ReplayWithResult(ctx, e.js, dataDir, projector.ReplayOptions{Projector: e.opts(), Log: zerolog.Nop()}, &out)
	require.NoError(t, err)
	assert.Equal(t, len(cycle(6, 2))+6, res.Messages, "the compacted state stream holds only the latest value per subject, sales keep both rounds")
	assert.Contains(t, out.String(), "messages left")
	assert.Contains(t, out.String(), "rows/s")

	st := mustStore(t, filepath.Join(dataDir, "badger"))
	assert.Equal(t, digest(t, e.st), digest(t, st))
	for _, leftover := range []string{"badger.new", "badger.old"} {
		_, err := os.Stat(filepath.Join(dataDir, leftover))
		assert.True(t, os.IsNotExist(err), leftover)
	}
}

// TestReplayWithListingFailuresEqualsLive: a replay build renders each
// collection once at its end, except where a listing source's failure
// needs the floors rendered first (their last good buyer floor is what a
// node that fails every listing source still shows). Per collection and
// source-wide, with more collections held than one transaction renders,
// the replayed views equal the live node's.
func TestReplayWithListingFailuresEqualsLive(t *testing.T) {
	ctx := context.Background()
	e := mustEnv(t)
	first := cycle(80, 1)
	e.run(first...)
	one := "ethereum_0x0030"   // not among the collections that move on
	gone := t0.Add(-time.Hour) // last good long before: no rows retained
	e.run(statusMsg(readmodel.SourceIndexerMirror, one, false, gone), statusMsg(readmodel.SourceOrderBook, one, false, gone))
	e.run(cycle(80, 2)[:40]...) // some collections move on
	e.run(statusMsg(readmodel.SourceOrderBook, "", false, gone), statusMsg(readmodel.SourceIndexerMirror, "", false, gone))

	for _, id := range []string{one, "ethereum_0x0042"} {
		floor, err := e.st.Floor(ctx, id)
		require.NoError(t, err)
		require.Contains(t, string(floor.Body.Head)+string(floor.Body.Tail), `"stale":true`, "%s: every listing source failed: the floor shows the last good buyer floor", id)
	}

	dataDir := t.TempDir()
	_, err := projector.ReplayWithResult(ctx, e.js, dataDir, projector.ReplayOptions{Projector: e.opts(), Log: zerolog.Nop()}, nil)
	require.NoError(t, err)
	st := mustStore(t, filepath.Join(dataDir, "badger"))
	assert.Equal(t, digest(t, e.st), digest(t, st))
}

func TestReplayRefusesViewsInUse(t *testing.T) {
	ctx := context.Background()
	e := mustEnv(t)
	e.run(cycle(1, 1)...)
	dataDir := t.TempDir()
	running := mustStore(t, filepath.Join(dataDir, "badger")) // a node still serving
	_, err := projector.ReplayWithResult(ctx, e.js, dataDir, projector.ReplayOptions{Projector: e.opts(), Log: zerolog.Nop()}, nil)
	require.Error(t, err)
	d, err := running.Digest(ctx, time.Time{})
	require.NoError(t, err, "the running node's store is untouched")
	assert.NotEmpty(t, d)
}

func TestReplaySinceAppliesOnlyLaterMessagesOnTopOfSnapshot(t *testing.T) {
	ctx := context.Background()
	e := mustEnv(t)
	dataDir := t.TempDir()
	nodeSt, nodeP := e.mustNode(filepath.Join(dataDir, "badger"))
	e.publish(cycle(4, 1)...)
	_, err := nodeP.ApplyAvailable(ctx)
	require.NoError(t, err)
	require.NoError(t, nodeSt.Close(ctx)) // the node stops; its views are the snapshot

	since := time.Now()
	later := cycle(4, 2)
	e.publish(later...)
	e.apply() // the reference node has everything

	cases := []struct {
		name string
		opts projector.ReplayOptions
		want int
	}{
		{"since a time", projector.ReplayOptions{Since: since}, len(later)},
		{"from sequence 1 re-applies idempotently", projector.ReplayOptions{FromSeq: 1}, len(cycle(4, 2)) + 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.Projector, tc.opts.Log = e.opts(), zerolog.Nop()
			res, err := projector.ReplayWithResult(ctx, e.js, dataDir, tc.opts, nil)
			require.NoError(t, err)
			assert.Equal(t, tc.want, res.Messages)
			st := mustStore(t, filepath.Join(dataDir, "badger"))
			assert.Equal(t, digest(t, e.st), digest(t, st))
			require.NoError(t, st.Close(ctx))
		})
	}
}

func TestSettleAlignsNodesStoppedAtDifferentTimes(t *testing.T) {
	ctx := context.Background()
	e := mustEnv(t)
	// The floor's row expires first; the dearest row after the floor has
	// moved to "stays", so a node that swept in between keeps it stored
	// (the API skips it once expired) while a node settled later drops it.
	floor := evmRow(cid, contract, "1", "1", "NATIVE", "floor")
	floor.ExpiresAt = tp(t0.Add(time.Minute))
	dear := evmRow(cid, contract, "3", "3", "NATIVE", "dear")
	dear.ExpiresAt = tp(t0.Add(3 * time.Minute))
	e.run(docMsg(evmDoc(cid, readmodel.Ethereum, contract)),
		listingsMsg(readmodel.SourceOrderBook, cid, floor, evmRow(cid, contract, "2", "2", "NATIVE", "stays"), dear))
	_, err := e.p.Sweep(ctx, t0.Add(2*time.Minute))
	require.NoError(t, err)

	// A second node applies the same messages and stops before any sweep.
	st2, p2 := e.mustNode(t.TempDir())
	_, err = p2.ApplyAvailable(ctx)
	require.NoError(t, err)
	require.NoError(t, p2.Settle(ctx, t0.Add(5*time.Minute)))
	assert.NotEqual(t, digest(t, e.st), digest(t, st2))

	require.NoError(t, projector.New(nil, e.st, e.opts(), zerolog.Nop()).Settle(ctx, t0.Add(5*time.Minute)))
	assert.Equal(t, digest(t, e.st), digest(t, st2))
}

// TestReplayInMemoryEqualsBadger: the projector's apply runs over Badger
// and over memory alike, so recorded streams (every kind of message, a
// listing source failing for one collection and then everywhere) replayed
// into each leave the same keys with the same values.
func TestReplayInMemoryEqualsBadger(t *testing.T) {
	ctx := context.Background()
	e := mustEnv(t)
	gone := t0.Add(-time.Hour)
	e.run(cycle(40, 1)...)
	e.run(statusMsg(readmodel.SourceOrderBook, "ethereum_0x0003", false, gone))
	e.run(cycle(40, 2)[:90]...)
	e.run(statusMsg(readmodel.SourceIndexerMirror, "", false, gone))
	opts := projector.ReplayOptions{Projector: e.opts(), Log: zerolog.Nop()}
	opts.Projector.MaxBatch = 1 // batches, and so versions, independent of timing

	dataDir := t.TempDir()
	batched := opts
	batched.BulkLimit = -1 // through Badger's transactions
	_, err := projector.ReplayWithResult(ctx, e.js, dataDir, batched, nil)
	require.NoError(t, err)
	disk := mustStore(t, filepath.Join(dataDir, "badger"))

	memOpts := opts.Store
	memOpts.NoSuperseded = true // as Replay opens its build
	mem := store.OpenMemory(memOpts)
	t.Cleanup(func() { _ = mem.Close(ctx) })
	res, err := projector.ReplayInto(ctx, e.js, mem, opts, nil)
	require.NoError(t, err)
	require.Positive(t, res.Messages)

	want, got := mustKeys(t, disk), mustKeys(t, mem)
	require.Greater(t, len(want), 500, "a store worth comparing")
	var differ []string
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			differ = append(differ, fmt.Sprintf("%q (in memory: %t)", k, ok))
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			differ = append(differ, fmt.Sprintf("%q only in memory", k))
		}
	}
	sort.Strings(differ)
	assert.Empty(t, differ[:min(len(differ), 20)], "%d keys differ", len(differ))
}

func mustKeys(t *testing.T, st *store.Store) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, st.Each(context.Background(), func(k, v []byte) error {
		out[string(k)] = string(v)
		return nil
	}))
	return out
}

package store

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/render"
)

func mustOpen(t *testing.T) *Store {
	t.Helper()
	s, err := Open(context.Background(), t.TempDir(), Options{MemTableSize: 8 << 20})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

func TestCodecsRoundTripAndRejectGarbage(t *testing.T) {
	after := time.Date(2026, 9, 1, 12, 30, 0, 0, time.UTC)
	royalty := int64(250)
	second := *sampleListing()
	second.TokenID, second.ExpiresAt, second.OrderID = "7", nil, sampleCID+"_7_1795591471000"
	lv := render.ListingsRecord{Version: 7, Rows: []readmodel.ListingRow{*sampleListing(), second}, RoyaltyBps: &royalty,
		StaleSources: []readmodel.Source{readmodel.SourceOrderBook}, AllFailed: true, Listed: 3, BeyondExpires: []int64{99}}
	fv := render.FloorView{Version: 3, Body: render.TimedBody{Head: []byte(`{"x":"`), Tail: []byte(`"}`), Timed: true},
		FallbackAfter: after, Fallback: render.TimedBody{Head: []byte(`{}`)}}
	cv := render.CollectionView{ID: "id", Chain: readmodel.Base, HasContract: true, Version: 9, Detail: []byte(`{}`)}

	gotL, ok := decodeListings(encodeListings(lv))
	require.True(t, ok)
	assert.Equal(t, lv, gotL)
	gotF, ok := decodeFloor(encodeFloor(fv))
	require.True(t, ok)
	assert.Equal(t, fv, gotF)
	gotC, ok := decodeCollection("id", encodeCollection(cv))
	require.True(t, ok)
	assert.Equal(t, cv, gotC)

	garbage := map[string][]byte{
		"empty":     nil,
		"short":     {1, 2, 3},
		"huge len":  append(make([]byte, 8), 0, 0xff, 0xff, 0xff, 0xff, 0x0f),
		"truncated": encodeListings(lv)[:20],
	}
	for name, g := range garbage {
		t.Run(name, func(t *testing.T) {
			assert.NotPanics(t, func() {
				_, ok1 := decodeListings(g)
				_, ok2 := decodeFloor(g)
				_, ok3 := decodeCollection("x", g)
				assert.False(t, ok1 && ok2 && ok3)
			})
		})
	}
}

func TestCommitInvalidatesCache(t *testing.T) {
	ctx := context.Background()
	s := mustOpen(t)
	put := func(detail string) {
		require.NoError(t, s.Update(ctx, func(tx *Tx) error {
			tx.PutCollection(render.CollectionView{ID: "c", Chain: readmodel.Solana, Version: tx.NextVersion(), Detail: []byte(detail)})
			return nil
		}))
	}
	put(`{"v":1}`)
	v, err := s.Collection(ctx, "c")
	require.NoError(t, err)
	assert.Equal(t, `{"v":1}`, string(v.Detail))
	v2, err := s.Collection(ctx, "c") // from cache
	require.NoError(t, err)
	assert.Equal(t, v, v2)
	put(`{"v":2}`)
	v, err = s.Collection(ctx, "c")
	require.NoError(t, err)
	assert.Equal(t, `{"v":2}`, string(v.Detail))

	t.Run("a failed update writes nothing", func(t *testing.T) {
		err := s.Update(ctx, func(tx *Tx) error {
			tx.PutCollection(render.CollectionView{ID: "c", Detail: []byte(`{"v":3}`)})
			return readmodel.Errorf(readmodel.Internal, "boom")
		})
		require.Error(t, err)
		v, err := s.Collection(ctx, "c")
		require.NoError(t, err)
		assert.Equal(t, `{"v":2}`, string(v.Detail))
	})
}

func TestDigestIgnoresVersionsAndBookkeeping(t *testing.T) {
	ctx := context.Background()
	a, b := mustOpen(t), mustOpen(t)
	write := func(s *Store, version uint64, pos uint64) {
		require.NoError(t, s.Update(ctx, func(tx *Tx) error {
			tx.PutCollection(render.CollectionView{ID: "c", Chain: readmodel.Solana, Version: version, Detail: []byte(`{}`)})
			tx.SetPosition("S", StreamPos{Seq: pos, ID: "x"})
			return nil
		}))
	}
	write(a, 1, 10)
	write(b, 5, 99)
	da, err := a.Digest(ctx, time.Time{})
	require.NoError(t, err)
	db, err := b.Digest(ctx, time.Time{})
	require.NoError(t, err)
	assert.Equal(t, da, db)
	assert.Len(t, da, 64)

	require.NoError(t, b.Update(ctx, func(tx *Tx) error {
		tx.PutCollection(render.CollectionView{ID: "c", Chain: readmodel.Solana, Version: 6, Detail: []byte(`{"changed":true}`)})
		return nil
	}))
	db, err = b.Digest(ctx, time.Time{})
	require.NoError(t, err)
	assert.NotEqual(t, da, db, "content changes change the digest")
}

func TestCacheStaysWithinItsByteBound(t *testing.T) {
	c := newCache(1000, 64<<10)
	big := render.CollectionView{ID: "x", Detail: make([]byte, 3000)}
	for i := 0; i < 500; i++ {
		c.put(strconv.Itoa(i), big, c.gen)
		c.putPage("p"+strconv.Itoa(i), "", c.browseGen, render.Page{Items: [][]byte{make([]byte, 1000)}})
		require.LessOrEqual(t, c.bytes, int64(64<<10))
	}
	assert.NotEmpty(t, c.views, "recent entries are kept")
	c.put("too-big", render.CollectionView{Detail: make([]byte, 64<<10)}, c.gen)
	_, _, ok := c.get("too-big")
	assert.False(t, ok, "an entry above a sixteenth of the bound is not cached")
}

// openWithC1 opens a store in dir holding one collection view, c1; the
// caller closes it.
func openWithC1(t *testing.T, dir string) *Store {
	t.Helper()
	ctx := context.Background()
	s, err := Open(ctx, dir, Options{})
	require.NoError(t, err)
	require.NoError(t, s.Update(ctx, func(tx *Tx) error {
		tx.PutCollection(render.CollectionView{ID: "c1", Version: 1, Detail: []byte(`{}`)})
		return nil
	}))
	return s
}

// TestOpenRebuildsAnOlderSchema: a store written with another schema (or
// before schemas were recorded) opens empty, so the projector rebuilds it
// from the streams; one of the current schema keeps its views.
func TestOpenRebuildsAnOlderSchema(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name   string
		schema []byte // nil: no schema key at all
		kept   bool
	}{
		{"current schema keeps its views", []byte(schema), true},
		{"same Schema, other record fields, is emptied", []byte(Schema + "+0"), false},
		{"older schema is emptied", []byte("1"), false},
		{"store from before schemas is emptied", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openWithC1(t, dir)
			if tt.schema == nil {
				require.NoError(t, s.db.Update(func(txn *badger.Txn) error { return txn.Delete(kSchema) }))
			} else {
				require.NoError(t, s.db.Update(func(txn *badger.Txn) error { return txn.Set(kSchema, tt.schema) }))
			}
			require.NoError(t, s.Close(ctx))

			s, err := Open(ctx, dir, Options{})
			require.NoError(t, err)
			defer s.Close(ctx)
			_, err = s.Collection(ctx, "c1")
			if tt.kept {
				assert.NoError(t, err)
			} else {
				assert.Equal(t, readmodel.NotFound, readmodel.ErrorCode(err))
			}
			cur, ok, err := s.get(kSchema)
			require.NoError(t, err)
			assert.True(t, ok)
			assert.Equal(t, schema, string(cur))
		})
	}
}

// mustOpenSmallLog opens a store in a temporary dir with 1 MiB value-log
// files, small memtables and no background GC; it closes at cleanup.
func mustOpenSmallLog(t *testing.T) *Store {
	t.Helper()
	s, err := Open(context.Background(), t.TempDir(), Options{ValueLogFileSize: 1 << 20, MemTableSize: 256 << 10, GCInterval: -1})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

// rewriteViews writes 1,000 collection views of 1 KiB, rounds times over,
// four transactions a round, and returns the body of the last round.
func rewriteViews(t *testing.T, s *Store, rounds int) []byte {
	t.Helper()
	body := make([]byte, 1<<10)
	for round := 0; round < rounds; round++ {
		for i := range body {
			body[i] = byte('a' + (round+i)%26)
		}
		for part := 0; part < 4; part++ {
			require.NoError(t, s.Update(context.Background(), func(tx *Tx) error {
				for c := part * 250; c < (part+1)*250; c++ {
					tx.PutCollection(render.CollectionView{ID: "c" + strconv.Itoa(c), Version: uint64(round + 1), Detail: body})
				}
				return nil
			}))
		}
	}
	return body
}

// TestGarbageCollectionReclaimsRewrittenViews: views are rewritten every
// cycle, and the value log must not keep every old copy forever.
func TestGarbageCollectionReclaimsRewrittenViews(t *testing.T) {
	ctx := context.Background()
	s := mustOpenSmallLog(t)
	vlogBytes := s.valueLogOnDisk
	body := rewriteViews(t, s, 40)
	// Badger learns what is garbage when compaction drops superseded
	// versions; it compacts in the background once level 0 fills up.
	before := vlogBytes()
	rewrote := 0
	require.Eventually(t, func() bool {
		rewrote += s.CollectGarbage(nil)
		return rewrote > 0
	}, 20*time.Second, 50*time.Millisecond, "GC found value-log files that are mostly superseded views")
	for i := 0; i < 20; i++ {
		rewrote += s.CollectGarbage(nil)
	}
	assert.Positive(t, rewrote, "rewrote value-log files")
	assert.Equal(t, int64(rewrote), s.Sizes().GCRewrites)
	assert.Less(t, vlogBytes(), before/2, "most of %d bytes of superseded views reclaimed", before)
	v, err := s.Collection(ctx, "c3")
	require.NoError(t, err)
	assert.Equal(t, body, v.Detail, "live views survive GC")
}

// TestViewsAreFilledWithTheCurrentQuote: the store serves bodies with
// their USD slots filled from its current quote and names its version; a
// new quote reaches views already in the cache.
func TestViewsAreFilledWithTheCurrentQuote(t *testing.T) {
	ctx := context.Background()
	s := mustOpen(t)
	body := render.TemplateUSD([]byte(`{"floor":{"raw":"1500000000000000000","decimal":1.5,"currency":"ETH","usd":null}}`))
	require.NoError(t, s.Update(ctx, func(tx *Tx) error {
		tx.PutCollection(render.CollectionView{ID: "c1", Version: 1, Detail: body})
		tx.PutQuote(readmodel.USDRates{"ETH": 2000}, true)
		return nil
	}))
	tests := []struct {
		name   string
		rates  readmodel.USDRates
		feedOK bool
		want   string
	}{
		{"first quote", readmodel.USDRates{"ETH": 2000}, true, `"usd":3000}`},
		{"new rate reaches the cached view", readmodel.USDRates{"ETH": 3000}, true, `"usd":4500}`},
		{"feed down", readmodel.USDRates{"ETH": 3000}, false, `"usd":null}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.NoError(t, s.Update(ctx, func(tx *Tx) error { tx.PutQuote(tt.rates, tt.feedOK); return nil }))
			v, err := s.Collection(ctx, "c1")
			require.NoError(t, err)
			assert.True(t, strings.HasSuffix(string(v.Detail), tt.want+"}"), "%s", v.Detail)
			assert.Equal(t, render.NewUSDQuote(tt.rates, tt.feedOK).Version, v.USD)
			again, err := s.Collection(ctx, "c1")
			require.NoError(t, err)
			assert.Equal(t, v.Detail, again.Detail, "served from the cache")
		})
	}
}

// TestOpenAfterAKillDuringFileCreation: a process killed between Badger
// creating a memtable or value-log file and sizing it leaves an empty
// file, which Badger alone refuses to open ("Create a new file"); the
// store opens anyway. Badger creates a value-log file at every Open, so
// a node killed while starting hits it (TestCrashSafety did, about one
// run in fifteen).
func TestOpenAfterAKillDuringFileCreation(t *testing.T) {
	for _, name := range []string{"00009.mem", "000009.vlog"} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			require.NoError(t, openWithC1(t, dir).Close(ctx))
			f, err := os.Create(filepath.Join(dir, name)) // what the killed process left
			require.NoError(t, err)
			require.NoError(t, f.Close())

			s, err := Open(ctx, dir, Options{})
			require.NoError(t, err)
			defer s.Close(ctx)
			_, err = s.Collection(ctx, "c1")
			assert.NoError(t, err, "committed views survive")
		})
	}
}

// TestDueWalk: a walk of the listings deadline index with the cursor returns
// every entry at or before now exactly once, in deadline order, in
// batches of the limit, and none after now; an entry a render moves to a
// deadline that is still due but behind the cursor waits for the next
// walk, so a walk always ends.
func TestDueWalk(t *testing.T) {
	s := mustOpen(t)
	ctx := context.Background()
	now := time.UnixMilli(1_800_000_000_000)
	require.NoError(t, s.Update(ctx, func(tx *Tx) error {
		for i := 0; i < 10; i++ {
			// t0..t9 due at now-10s .. now-1s, and u0..u9 after now.
			tx.SetDeadline("t"+strconv.Itoa(i), now.Add(time.Duration(i-10)*time.Second))
			tx.SetDeadline("u"+strconv.Itoa(i), now.Add(time.Duration(i+1)*time.Second))
		}
		return nil
	}))
	walk := func(moveTo time.Time) []string {
		var got []string
		var at DueCursor
		for batch := 0; ; batch++ {
			require.Less(t, batch, 10, "the walk does not end: %v", got)
			due, next, err := s.Due(ctx, now, at, 3)
			require.NoError(t, err)
			if len(due) == 0 {
				return got
			}
			assert.LessOrEqual(t, len(due), 3)
			got, at = append(got, due...), next
			if moveTo.IsZero() {
				continue // a walk that renders nothing
			}
			require.NoError(t, s.Update(ctx, func(tx *Tx) error {
				for _, k := range due {
					tx.SetDeadline(k, moveTo)
				}
				return nil
			}))
		}
	}
	want := []string{"t0", "t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8", "t9"}
	assert.Equal(t, want, walk(time.Time{}), "a walk that moves nothing")
	// Each render moves the entry to the earliest deadline of all: still
	// due, but behind the cursor.
	assert.Equal(t, want, walk(now.Add(-time.Hour)))
	assert.Equal(t, want, walk(now.Add(time.Hour)), "the next walk finds them again, once each")
	assert.Empty(t, walk(now.Add(time.Hour)), "moved past now: nothing due")
}

// TestGCPause: the background GC pauses after each rewrite so rewriting
// takes about GCShare of the time; CollectGarbage (share 1) never pauses.
func TestGCPause(t *testing.T) {
	for _, tc := range []struct {
		name  string
		took  time.Duration
		share float64
		want  time.Duration
	}{
		{"a quarter of a core", 2 * time.Second, 0.25, 6 * time.Second},
		{"half", time.Second, 0.5, time.Second},
		{"unpaced", 3 * time.Second, 1, 0},
		{"more than a core is unpaced", time.Second, 2, 0},
		{"no share given is unpaced", time.Second, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, gcPause(tc.took, tc.share))
		})
	}
}

// TestRegisterAfterReset: a collection is registered once per store (a
// second Register writes nothing), and again after Reset dropped every
// key, so a full re-render still reaches it.
func TestRegisterAfterReset(t *testing.T) {
	ctx := context.Background()
	s := mustOpen(t)
	collections := func() []string {
		var ids []string
		require.NoError(t, s.View(ctx, func(tx *Tx) error {
			var err error
			ids, err = tx.Collections("", 10)
			return err
		}))
		return ids
	}
	register := func(cids ...string) {
		require.NoError(t, s.Update(ctx, func(tx *Tx) error {
			for _, cid := range cids {
				tx.Register(cid)
			}
			return nil
		}))
	}
	register("a", "b", "a")
	register("b")
	assert.Equal(t, []string{"a", "b"}, collections())
	require.NoError(t, s.Reset(ctx))
	assert.Empty(t, collections())
	register("b")
	assert.Equal(t, []string{"b"}, collections(), "registered again after the reset")
}

package store

import (
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/dgraph-io/badger/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHeldFeedBlocksMatchBadger: the same appends to collections' feeds
// and to the market's log, committed into Badger and into a memory store
// (which holds its open blocks, evgather.go), leave the same keys and
// values, as the memory store shows them (Each) and as WriteMemory writes
// them: bases, parts, sealed blocks, and the blocks and parts retention
// drops or leaves, with appends of more events than are kept and a
// transaction that fails.
func TestHeldFeedBlocksMatchBadger(t *testing.T) {
	type step struct {
		c, d int  // events appended to collections c and d in one transaction
		fail bool // the transaction fails after its appends
	}
	cases := []struct {
		name         string
		keep, market int  // Options.FeedEvents, MarketEvents
		written      bool // c's open block was written before as a base of segments (events 1-3), as before parts
		steps        []step
	}{
		{"parts, seals and appends across blocks", 1000, 0, false, []step{
			{c: 3, d: 1}, {c: 1}, {c: 1, d: 70}, {c: 5, fail: true}, {c: 59}, {c: 2, d: 2}, {c: 64}, {c: 130, d: 1}, {c: 1}, {d: 7}}},
		{"retention cuts appends and drops blocks", 10, 100, false, []step{
			{c: 3, d: 12}, {c: 1, d: 1}, {c: 70}, {c: 5, d: 64}, {c: 200, fail: true}, {c: 200}, {c: 2, d: 3}, {d: 63}, {d: 11}}},
		{"an append past the retention rewrites the open block", 70, 90, false, []step{
			{c: 40}, {c: 20}, {c: 71}, {c: 1}}},
		// appendBlocks leaves the parts of an open block that holds 63
		// events when an append past the retention drops it.
		{"an append past the retention drops an open block of 63", 70, 0, false, []step{
			{c: 40, d: 1}, {c: 23, d: 1}, {c: 71}, {c: 1, d: 1}}},
		{"an open block written otherwise goes on and seals as on Badger", 1000, 0, true, []step{
			{c: 2, d: 1}, {c: 1}, {c: 70}, {c: 1}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			opts := Options{MemTableSize: 8 << 20, FeedEvents: tc.keep, MarketEvents: tc.market}
			disk, err := Open(ctx, t.TempDir(), opts)
			require.NoError(t, err)
			t.Cleanup(func() { _ = disk.Close(ctx) })
			mem := OpenMemory(opts)
			t.Cleanup(func() { _ = mem.Close(ctx) })
			errFail := errors.New("failed")
			if tc.written {
				for _, s := range []*Store{disk, mem} {
					require.NoError(t, s.Update(ctx, func(tx *Tx) error {
						tx.set(blockKey("c", 0), appendSegment(newBlock(0, [][]byte{testRec(1), testRec(2)}), [][]byte{testRec(3)}))
						tx.PutFeedHead("c", FeedHead{First: 1, Next: 4})
						return nil
					}))
				}
			}
			for i, st := range tc.steps {
				for _, s := range []*Store{disk, mem} {
					err := s.Update(ctx, func(tx *Tx) error {
						var market []MarketEvent
						for _, a := range []struct {
							cid string
							n   int
						}{{"c", st.c}, {"d", st.d}} {
							if a.n == 0 {
								continue
							}
							h, err := tx.FeedHead(a.cid)
							if err != nil {
								return err
							}
							evs := make([]NewEvent, a.n)
							for j := range evs {
								evs[j] = sampleEvent()
								evs[j].Seq, evs[j].Index = uint64(i+1), j
								market = append(market, MarketEvent{CollectionID: a.cid, Event: evs[j]})
							}
							tx.PutFeedHead(a.cid, tx.AppendEvents(a.cid, h, evs))
						}
						tx.AppendMarket(market)
						if st.fail {
							return errFail
						}
						return nil
					})
					if st.fail {
						require.ErrorIs(t, err, errFail)
					} else {
						require.NoError(t, err)
					}
				}
				require.Equal(t, mustDump(t, disk), mustDump(t, mem), "after step %d", i)
			}
			want := mustDump(t, disk)
			dir := filepath.Join(t.TempDir(), "built")
			_, err = WriteMemory(ctx, dir, mem, opts, BuildOptions{})
			require.NoError(t, err)
			built, err := Open(ctx, dir, opts)
			require.NoError(t, err)
			t.Cleanup(func() { _ = built.Close(ctx) })
			assert.Equal(t, want, mustDump(t, built))
		})
	}
}

// BenchmarkBuildFeeds appends to the feeds of a memory store as a build
// does: transactions that each append a few events to each of 50 of 1,000
// collections and all of them to the market's log, until every feed has
// had 100 events, with the open blocks held (evgather.go) or written as
// parts, then written out (WriteMemory's items). An op is the whole
// build.
func BenchmarkBuildFeeds(b *testing.B) {
	for _, held := range []bool{true, false} {
		name := "parts"
		if held {
			name = "held"
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			ev := sampleEvent()
			b.ReportAllocs()
			for range b.N {
				mem := OpenMemory(Options{})
				if !held {
					mem.gather = nil
				}
				heads := map[string]FeedHead{}
				for round := range 40 {
					for part := range 20 {
						require.NoError(b, mem.Update(ctx, func(tx *Tx) error {
							var market []MarketEvent
							for c := part * 50; c < part*50+50; c++ {
								cid := "ethereum_0x" + strconv.Itoa(100000+c)
								h, ok := heads[cid]
								if !ok {
									h = FeedHead{First: 1, Next: 1}
								}
								evs := make([]NewEvent, 1+(c+round)%4)
								for j := range evs {
									evs[j] = ev
									evs[j].Seq, evs[j].Index = uint64(round*1000+c), j
									market = append(market, MarketEvent{CollectionID: cid, Event: evs[j]})
								}
								heads[cid] = tx.AppendEvents(cid, h, evs)
							}
							tx.AppendMarket(market)
							return nil
						}))
					}
				}
				if held {
					_ = mem.gather.items(true)
				}
			}
		})
	}
}

// TestMarketRecordsAsEncoded: the market log's records are what
// encodeMarketEvent makes of its events, also where AppendMarket reuses
// the records AppendEvents encoded in the transaction: the events of
// several collections interleaved, a collection appended to twice, events
// beyond the feed's retention (not encoded for it) and events of no
// collection's append.
func TestMarketRecordsAsEncoded(t *testing.T) {
	type feedAppend struct {
		cid string
		n   int
	}
	cases := []struct {
		name    string
		keep    int
		appends []feedAppend
		extra   int // market events of collection "x", whose feed is not appended to
	}{
		{"collections interleaved", 1000, []feedAppend{{"c", 5}, {"d", 3}}, 0},
		{"a collection appended to twice", 1000, []feedAppend{{"c", 2}, {"d", 2}, {"c", 3}}, 0},
		{"events beyond the feed's retention", 2, []feedAppend{{"c", 6}, {"d", 1}}, 0},
		{"events of no feed's append", 1000, []feedAppend{{"c", 2}}, 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			s, err := Open(ctx, t.TempDir(), Options{MemTableSize: 8 << 20, FeedEvents: tc.keep})
			require.NoError(t, err)
			t.Cleanup(func() { _ = s.Close(ctx) })
			var market []MarketEvent
			require.NoError(t, s.Update(ctx, func(tx *Tx) error {
				var queued [][]MarketEvent
				for i, a := range tc.appends {
					h, err := tx.FeedHead(a.cid)
					if err != nil {
						return err
					}
					evs := make([]NewEvent, a.n)
					var q []MarketEvent
					for j := range evs {
						evs[j] = sampleEvent()
						evs[j].Seq, evs[j].Index = uint64(i+1), j
						q = append(q, MarketEvent{CollectionID: a.cid, Event: evs[j]})
					}
					tx.PutFeedHead(a.cid, tx.AppendEvents(a.cid, h, evs))
					queued = append(queued, q)
				}
				for j := range tc.extra {
					e := sampleEvent()
					e.Index = j
					market = append(market, MarketEvent{CollectionID: "x", Event: e})
				}
				// Round robin over the appends: the order applied is not the
				// order the feeds were appended in.
				for more := true; more; {
					more = false
					for i := range queued {
						if len(queued[i]) > 0 {
							market = append(market, queued[i][0])
							queued[i], more = queued[i][1:], true
						}
					}
				}
				tx.AppendMarket(market)
				return nil
			}))
			var got [][]byte
			require.NoError(t, s.db.View(func(txn *badger.Txn) error {
				raw, _, err := txnGet(txn, kMarketHead)
				require.NoError(t, err)
				h, err := DecodeFeedHead(raw)
				require.NoError(t, err)
				r := blockReader{txn: txn, fam: pMarket, head: h}
				for seq := h.First; seq < h.Next; seq++ {
					e, err := r.event(seq)
					require.NoError(t, err)
					got = append(got, e.rec)
				}
				return nil
			}))
			require.Len(t, got, len(market))
			for i := range market {
				assert.Equal(t, encodeMarketEvent(nil, &market[i]), got[i], "event %d", i)
			}
		})
	}
}

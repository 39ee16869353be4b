package store

import (
	"context"
	"encoding/binary"
	"encoding/json"
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

// testEvent is the event appendN writes at seq: a sale at odd seqs, an
// addition at even ones, its id "s<seq>-0-<hash>".
func testEvent(seq uint64) NewEvent {
	typ := render.EventListingAdded
	if seq%2 == 1 {
		typ = render.EventSale
	}
	return NewEvent{Type: typ, Stream: 's', Seq: seq, ObservedAt: time.Date(2026, 11, 27, 1, 0, 0, 0, time.UTC)}
}

// testRec is testEvent(seq)'s record in collection "c".
func testRec(seq int) []byte {
	e := testEvent(uint64(seq))
	return encodeEvent(nil, "c", &e)
}

// evID is the eventId of testEvent(seq) in collection cid.
func evID(t *testing.T, cid string, seq uint64) string {
	t.Helper()
	e := testEvent(seq)
	id, _, err := renderEvent(cid, encodeEvent(nil, cid, &e), nil) // testEvent has no sale part
	require.NoError(t, err)
	return id
}

// appendN appends n events (testEvent) to cid's feed.
func appendN(t *testing.T, s *Store, cid string, n int) {
	t.Helper()
	require.NoError(t, s.Update(context.Background(), func(tx *Tx) error {
		h, err := tx.FeedHead(cid)
		if err != nil {
			return err
		}
		var evs []NewEvent
		for i := 0; i < n; i++ {
			evs = append(evs, testEvent(h.Next+uint64(i)))
		}
		tx.PutFeedHead(cid, tx.AppendEvents(cid, h, evs))
		return nil
	}))
}

func TestEvents(t *testing.T) {
	s := mustOpen(t)
	s.opts.FeedEvents = 5
	ctx := context.Background()

	p, err := s.Events(ctx, "c", 0, "", 10, 0)
	require.NoError(t, err)
	assert.Empty(t, p.Items)
	assert.Equal(t, uint64(0), p.Last, "an empty feed read from its start")

	appendN(t, s, "c", 4)
	appendN(t, s, "other", 2)
	p, err = s.Events(ctx, "c", 0, "", 3, 0)
	require.NoError(t, err)
	assert.True(t, p.Full)
	assert.Equal(t, []uint64{1, 2, 3}, seqs(t, p.Items))
	assert.Equal(t, evID(t, "c", 3), p.LastID)

	p, err = s.Events(ctx, "c", 3, evID(t, "c", 3), 3, 0)
	require.NoError(t, err)
	assert.False(t, p.Full, "the head page")
	assert.Equal(t, []uint64{4}, seqs(t, p.Items))

	p, err = s.Events(ctx, "c", 0, "", 10, render.EventTypeBit(render.EventSale))
	require.NoError(t, err)
	assert.Equal(t, []uint64{1, 3}, seqs(t, p.Items))
	assert.Equal(t, uint64(4), p.Last, "the head page resumes after what it filtered out")

	_, err = s.Events(ctx, "c", 3, evID(t, "c", 9), 3, 0)
	assert.Equal(t, readmodel.BadRequest, readmodel.ErrorCode(err), "the event at the position is another")
	_, err = s.Events(ctx, "c", 9, evID(t, "c", 9), 3, 0)
	assert.Equal(t, readmodel.BadRequest, readmodel.ErrorCode(err), "beyond the feed")

	appendN(t, s, "c", 4) // 8 events, 5 kept: 4..8
	require.NoError(t, s.View(ctx, func(tx *Tx) error {
		h, err := tx.FeedHead("c")
		assert.Equal(t, FeedHead{First: 4, Next: 9}, h)
		return err
	}))
	p, err = s.Events(ctx, "c", 0, "", 10, 0)
	require.NoError(t, err)
	assert.Equal(t, []uint64{4, 5, 6, 7, 8}, seqs(t, p.Items))
	_, err = s.Events(ctx, "c", 3, evID(t, "c", 3), 3, 0)
	require.NoError(t, err, "right before the oldest kept: nothing was missed")
	_, err = s.Events(ctx, "c", 2, evID(t, "c", 2), 3, 0)
	assert.Equal(t, readmodel.BadRequest, readmodel.ErrorCode(err))
	assert.Contains(t, readmodel.ErrorMessage(err), `"`+evID(t, "c", 4)+`"`, "names the oldest event kept")

	p, err = s.Events(ctx, "other", 0, "", 10, 0)
	require.NoError(t, err)
	assert.Len(t, p.Items, 2, "feeds are per collection")

	appendN(t, s, "long", 12) // one append longer than the retention: only the last 5 are written
	p, err = s.Events(ctx, "long", 0, "", 10, 0)
	require.NoError(t, err)
	assert.Equal(t, []uint64{8, 9, 10, 11, 12}, seqs(t, p.Items))
	assert.Equal(t, []uint64{8, 9, 10, 11, 12}, storedSeqs(t, s, "long"), "no event beyond the retention is stored")
}

// storedSeqs is the seqs of the events cid's blocks hold, in key order.
func storedSeqs(t *testing.T, s *Store, cid string) []uint64 {
	t.Helper()
	var seqs []uint64
	prefix := key(pEvent, cid, "")
	require.NoError(t, s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			k := binary.BigEndian.Uint64(it.Item().Key()[len(prefix):])
			v, err := it.Item().ValueCopy(nil)
			require.NoError(t, err)
			start, evs, err := decodeBlock(v)
			require.NoError(t, err)
			for i := range evs {
				seqs = append(seqs, k*feedBlock+start+uint64(i)+1)
			}
		}
		return nil
	}))
	return seqs
}

// seqs is seqOf each of items.
func seqs(t *testing.T, items [][]byte) []uint64 {
	t.Helper()
	out := make([]uint64, len(items))
	for i, b := range items {
		out[i] = seqOf(t, b)
	}
	return out
}

// TestAppendWritesItsEventsOnly: an append to the open block writes its
// own events as a part and leaves what the block held as it was; the
// append that fills the block seals it into one segment and deletes the
// parts. (Rewriting the open block on every append was 97 MB/min of the
// soak's 348 MB/min of value log.)
func TestAppendWritesItsEventsOnly(t *testing.T) {
	s := mustOpen(t)
	read := func() map[string][]byte {
		t.Helper()
		kv := map[string][]byte{}
		prefix := blockKey("c", 0)
		require.NoError(t, s.db.View(func(txn *badger.Txn) error {
			it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
			defer it.Close()
			for it.Rewind(); it.Valid(); it.Next() {
				v, err := it.Item().ValueCopy(nil)
				require.NoError(t, err)
				kv[string(it.Item().Key()[len(prefix):])] = v
			}
			return nil
		}))
		return kv
	}
	appendN(t, s, "c", 3)
	base := read()[""]
	require.NotNil(t, base)
	for i := 0; i < 5; i++ {
		appendN(t, s, "c", 1)
	}
	kv := read()
	assert.Equal(t, base, kv[""], "the base is not written again")
	assert.Len(t, kv, 6, "the base and a part per append")
	for last := byte(3); last < 8; last++ {
		start, n, ok := blockShape(kv[string([]byte{last})])
		require.True(t, ok, "part ending at %d", last)
		assert.Equal(t, [2]uint64{uint64(last), 1}, [2]uint64{start, n})
	}
	appendN(t, s, "c", feedBlock-8)
	kv = read()
	require.Len(t, kv, 1, "a sealed block has no parts")
	start, w := binary.Uvarint(kv[""])
	n, _, _, ok := segmentHead(kv[""][w:])
	require.True(t, ok)
	assert.Equal(t, [2]uint64{0, feedBlock}, [2]uint64{start, n}, "sealed: one segment of the whole block")
	assert.Equal(t, feedBlock, len(storedSeqs(t, s, "c")))
}

// TestEventPagesCachedUntilTheFeedMoves: a page read again is the cached
// one, and an append to the feed (not to another collection's) makes the
// head page show the new events at once.
func TestEventPagesCachedUntilTheFeedMoves(t *testing.T) {
	s := mustOpen(t)
	ctx := context.Background()
	appendN(t, s, "c", 2)
	head := func() []uint64 {
		p, err := s.Events(ctx, "c", 1, evID(t, "c", 1), 10, 0)
		require.NoError(t, err)
		return seqs(t, p.Items)
	}
	assert.Equal(t, []uint64{2}, head())
	_, _, cached := s.cache.getEventPage([]byte("e|c|1|"+evID(t, "c", 1)+"|10|0"), "c")
	assert.True(t, cached, "the head page is cached")
	appendN(t, s, "other", 3)
	_, _, cached = s.cache.getEventPage([]byte("e|c|1|"+evID(t, "c", 1)+"|10|0"), "c")
	assert.True(t, cached, "another feed's append keeps it")
	appendN(t, s, "c", 2)
	assert.Equal(t, []uint64{2, 3, 4}, head(), "an append is served at once")
}

// seqOf is the seq of testEvent's JSON b (from its eventId), checking
// the rest of it: the event rendered from its record.
func seqOf(t *testing.T, b []byte) uint64 {
	t.Helper()
	var e struct {
		EventID      string `json:"eventId"`
		Type         string `json:"type"`
		CollectionID string `json:"collectionId"`
		ObservedAt   string `json:"observedAt"`
	}
	require.NoError(t, json.Unmarshal(b, &e), "event %s", b)
	num, _, _ := strings.Cut(strings.TrimPrefix(e.EventID, "s"), "-")
	n, err := strconv.ParseUint(num, 10, 64)
	require.NoError(t, err, "event %s", b)
	require.Equal(t, evID(t, e.CollectionID, n), e.EventID)
	require.Equal(t, [2]string{testEvent(n).Type, "2026-11-27T01:00:00.000Z"}, [2]string{e.Type, e.ObservedAt})
	return n
}

// TestEventWalksAcrossBlocks: a poller that follows the feed's cursor
// after every append sees every event of its types once, in order, across
// block boundaries and while the retention drops the front of a block (a
// cursor the retention overtook is 400 naming the oldest event kept); a
// walk from any block edge resumes right after it; and no block wholly
// below the oldest event kept is stored.
func TestEventWalksAcrossBlocks(t *testing.T) {
	sales := render.EventTypeBit(render.EventSale) // appendN: odd seqs
	cases := []struct {
		name    string
		keep    int
		appends []int
		limit   int
		types   uint8
	}{
		{name: "within one block", keep: 100, appends: []int{10, 20}, limit: 7},
		{name: "appends straddle block edges", keep: 1000, appends: []int{63, 1, 1, 64, 65, 2}, limit: 25},
		{name: "retention drops part of a block", keep: 100, appends: []int{70, 70, 70, 1}, limit: 25},
		{name: "retention at a block edge", keep: feedBlock, appends: []int{feedBlock, feedBlock, 1, feedBlock - 1}, limit: 10},
		{name: "an append longer than the retention", keep: 100, appends: []int{5, 300, 3}, limit: feedBlock},
		{name: "pages of one", keep: 70, appends: []int{130, 1, 60}, limit: 1},
		{name: "pages of a hundred, sales only", keep: 100, appends: []int{70, 70, 70}, limit: 100, types: sales},
		{name: "parts, then an append longer than the retention", keep: 100, appends: []int{3, 2, 2, 300, 2, 2}, limit: 25},
		{name: "parts, then the retention writes their block anew", keep: 5, appends: []int{3, 2, 2, 60, 1, 3}, limit: 4},
		{name: "parts filling a block to its 63rd event, then the retention drops it", keep: 100, appends: []int{1, 62, 200}, limit: 25},
		{name: "parts filling a block to its 63rd event, then the retention writes it anew", keep: 70, appends: []int{1, 62, 70}, limit: 25},
		{name: "parts on parts", keep: 200, appends: []int{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 50, 1, 1, 60}, limit: 7},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := mustOpen(t)
			s.opts.FeedEvents = tc.keep
			ctx := context.Background()
			wanted := func(seq uint64) bool { return tc.types == 0 || seq%2 == 1 }
			// The poller: its cursor and the next seq it must see.
			var after, want uint64 = 0, 1
			afterID := ""
			var next uint64 = 1
			for _, n := range tc.appends {
				appendN(t, s, "c", n)
				next += uint64(n)
				first := next - min(next-1, uint64(tc.keep))
				for {
					p, err := s.Events(ctx, "c", after, afterID, tc.limit, tc.types)
					if after != 0 && after+1 < first {
						require.Equal(t, readmodel.BadRequest, readmodel.ErrorCode(err), "cursor %d is older than %d", after, first)
						assert.Contains(t, readmodel.ErrorMessage(err), `"`+evID(t, "c", first)+`"`, "names the oldest event kept")
						after, afterID, want = 0, "", first
						continue
					}
					require.NoError(t, err)
					if after == 0 {
						want = max(want, first) // a walk from the start begins at the oldest event kept
					}
					for _, b := range p.Items {
						for !wanted(want) {
							want++
						}
						require.Equal(t, want, seqOf(t, b), "after %d", after)
						want++
					}
					if p.Last != 0 {
						after, afterID = p.Last, p.LastID
					}
					if !p.Full {
						require.Equal(t, next-1, p.Last, "the head page resumes after the newest event")
						want = next
						break
					}
				}
			}
			first := next - min(next-1, uint64(tc.keep))
			require.NoError(t, s.View(ctx, func(tx *Tx) error {
				h, err := tx.FeedHead("c")
				assert.Equal(t, FeedHead{First: first, Next: next}, h)
				return err
			}))

			stored := storedSeqs(t, s, "c")
			require.NotEmpty(t, stored)
			assert.Equal(t, blockOf(first), blockOf(stored[0]), "no block wholly below the oldest event kept")
			assert.LessOrEqual(t, stored[0], first)
			for i, seq := range stored {
				require.Equal(t, stored[0]+uint64(i), seq, "stored events are gap-free")
			}
			assert.Equal(t, next-1, stored[len(stored)-1])

			// From every block edge (and the position right before the
			// oldest kept), a walk resumes right after it.
			for pos := first - 1; pos < next; pos++ {
				if r := pos % feedBlock; pos != first-1 && r != 0 && r != 1 && r != feedBlock-1 {
					continue
				}
				id := ""
				if pos >= first {
					id = evID(t, "c", pos)
				}
				cur, curID, want := pos, id, pos+1
				for {
					p, err := s.Events(ctx, "c", cur, curID, tc.limit, tc.types)
					require.NoError(t, err, "from %d", cur)
					for _, b := range p.Items {
						for !wanted(want) {
							want++
						}
						require.Equal(t, want, seqOf(t, b), "walk from %d", pos)
						want++
					}
					cur, curID = p.Last, p.LastID
					if !p.Full {
						break
					}
				}
				for want < next && !wanted(want) {
					want++
				}
				assert.Equal(t, next, want, "the walk from %d reached the newest event", pos)
			}
		})
	}
}

// TestDamagedEventBlocks: a block or a part of one that is garbled,
// truncated, or missing where the feed's head says events are is an
// Internal error the store counts as damage, never a panic, for a read
// and for the append that seals it (one that only adds a part to the
// open block does not read it).
func TestDamagedEventBlocks(t *testing.T) {
	segment := func(n int, raw []byte) []byte { // a block from 0 of one segment of raw
		frame := eventEncoder().EncodeAll(raw, nil)
		v := binary.AppendUvarint([]byte{0}, uint64(n))
		v = binary.AppendUvarint(v, uint64(len(frame)))
		return append(v, frame...)
	}
	cases := []struct {
		name   string
		block  uint64 // of a feed of 70 events in two appends: block 0 sealed, 1 open: a base of 3 events and a part of 3
		part   bool   // the open block's part, not its base
		mangle func(v []byte) []byte
		append bool // the append that seals the damaged block fails too (it is the open one)
	}{
		{name: "empty", block: 1, mangle: func([]byte) []byte { return nil }, append: true},
		{name: "start beyond the block", block: 1, mangle: func(v []byte) []byte { return append([]byte{feedBlock}, v[1:]...) }, append: true},
		{name: "start that leaves too few events", block: 1, mangle: func(v []byte) []byte { return append([]byte{1}, v[1:]...) }, append: true},
		{name: "truncated", block: 1, mangle: func(v []byte) []byte { return v[:len(v)-5] }, append: true},
		{name: "a flipped bit in a frame", block: 0, mangle: func(v []byte) []byte { v[len(v)/2] ^= 0x10; return v }},
		{name: "fewer events than the head says", block: 0, mangle: func(v []byte) []byte { return newBlock(0, [][]byte{testRec(9)}) }},
		{name: "more events claimed than the frame holds", block: 0, mangle: func([]byte) []byte {
			return segment(64, appendSegment(nil, [][]byte{testRec(1)}))
		}},
		{name: "bytes after the last event", block: 0, mangle: func([]byte) []byte {
			return segment(1, append(lp(nil, string(testRec(1))), 'x'))
		}},
		{name: "a record over the bound", block: 0, mangle: func([]byte) []byte {
			raw := binary.AppendUvarint(nil, maxEventBody+1)
			return segment(1, append(raw, make([]byte, maxEventBody+1)...))
		}},
		{name: "an empty record", block: 0, mangle: func([]byte) []byte { return segment(1, []byte{0}) }},
		{name: "a record that does not decode", block: 0, mangle: func([]byte) []byte {
			rec := testRec(1)
			return segment(1, lp(nil, string(rec[:len(rec)-2])))
		}},
		{name: "a record of an unknown type", block: 0, mangle: func([]byte) []byte {
			rec := testRec(1)
			rec[0] = 0x80
			return segment(1, lp(nil, string(rec)))
		}},
		{name: "a frame larger than its events may be", block: 0, mangle: func([]byte) []byte {
			return segment(1, make([]byte, maxSegment(1)+1))
		}},
		{name: "not a frame", block: 0, mangle: func([]byte) []byte { return segment(1, nil)[:3] }},
		{name: "a part garbled", block: 1, part: true, mangle: func(v []byte) []byte { v[len(v)/2] ^= 0x10; return v }, append: true},
		{name: "a part that starts before the base ends", block: 1, part: true, mangle: func(v []byte) []byte {
			return newBlock(2, [][]byte{testRec(67), testRec(68), testRec(69), testRec(70)})
		}, append: true},
		{name: "a part that ends before the head", block: 1, part: true, mangle: func(v []byte) []byte {
			return newBlock(3, [][]byte{testRec(68), testRec(69)})
		}, append: true},
		{name: "a part empty", block: 1, part: true, mangle: func([]byte) []byte { return nil }, append: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := mustOpen(t)
			ctx := context.Background()
			appendN(t, s, "c", 67)
			appendN(t, s, "c", 3)
			k := blockKey("c", tc.block)
			if tc.part {
				k = partKey("c", tc.block, 5)
			}
			require.NoError(t, s.db.Update(func(txn *badger.Txn) error {
				it, err := txn.Get(k)
				require.NoError(t, err)
				v, err := it.ValueCopy(nil)
				require.NoError(t, err)
				return txn.Set(k, tc.mangle(v))
			}))
			for _, after := range []uint64{0, tc.block*feedBlock + 1} { // from the start, and from a cursor in the block
				s.cache.reset()
				var err error
				require.NotPanics(t, func() {
					_, err = s.Events(ctx, "c", after, evID(t, "c", after), 100, 0)
				})
				require.Error(t, err, "a read after %d", after)
				assert.Equal(t, readmodel.Internal, readmodel.ErrorCode(err))
				_, damaged := Damaged(err)
				assert.True(t, damaged, "counted as damage: %v", err)
			}
			appendSeqs := func(from, to int) error {
				return s.Update(ctx, func(tx *Tx) error {
					h, err := tx.FeedHead("c")
					if err != nil {
						return err
					}
					var evs []NewEvent
					for seq := from; seq <= to; seq++ {
						evs = append(evs, testEvent(uint64(seq)))
					}
					tx.PutFeedHead("c", tx.AppendEvents("c", h, evs))
					return nil
				})
			}
			require.NoError(t, appendSeqs(71, 71), "an append that adds a part reads no block")
			err := appendSeqs(72, 2*feedBlock) // fills block 1: seals it
			if tc.append {
				assert.Error(t, err, "the append that seals the damaged open block")
			} else {
				assert.NoError(t, err)
			}
		})
	}

	t.Run("a missing block", func(t *testing.T) {
		s := mustOpen(t)
		appendN(t, s, "c", 70)
		require.NoError(t, s.db.Update(func(txn *badger.Txn) error { return txn.Delete(blockKey("c", 0)) }))
		_, err := s.Events(context.Background(), "c", 0, "", 10, 0)
		assert.Equal(t, readmodel.Internal, readmodel.ErrorCode(err))
		_, damaged := Damaged(err)
		assert.True(t, damaged, "counted as damage: %v", err)
	})
	t.Run("a missing part", func(t *testing.T) {
		s := mustOpen(t)
		appendN(t, s, "c", 67)
		appendN(t, s, "c", 3)
		appendN(t, s, "c", 2)
		require.NoError(t, s.db.Update(func(txn *badger.Txn) error { return txn.Delete(partKey("c", 1, 5)) }))
		_, err := s.Events(context.Background(), "c", feedBlock, evID(t, "c", feedBlock), 10, 0)
		assert.Equal(t, readmodel.Internal, readmodel.ErrorCode(err))
		_, damaged := Damaged(err)
		assert.True(t, damaged, "counted as damage: %v", err)
	})
}

// BenchmarkAppendEvents is a live node's append: one transaction per
// message adding n events (a real event's size) to a collection's feed of
// 1,000.
func BenchmarkAppendEvents(b *testing.B) {
	for _, n := range []int{1, 5} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			s, err := Open(context.Background(), b.TempDir(), Options{MemTableSize: 8 << 20})
			require.NoError(b, err)
			defer s.Close(context.Background())
			evs := make([]NewEvent, n)
			for i := range evs {
				evs[i] = sampleEvent()
				evs[i].Index = i
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				require.NoError(b, s.Update(context.Background(), func(tx *Tx) error {
					h, err := tx.FeedHead("c")
					if err != nil {
						return err
					}
					tx.PutFeedHead("c", tx.AppendEvents("c", h, evs))
					return nil
				}))
			}
		})
	}
}

// TestOpenBlockOfSegmentsGoesOn: an open block written before parts (a
// base of several segments) reads whole, takes parts and seals.
func TestOpenBlockOfSegmentsGoesOn(t *testing.T) {
	s := mustOpen(t)
	ctx := context.Background()
	require.NoError(t, s.Update(ctx, func(tx *Tx) error {
		tx.set(blockKey("c", 0), appendSegment(newBlock(0, [][]byte{testRec(1), testRec(2)}), [][]byte{testRec(3)}))
		tx.PutFeedHead("c", FeedHead{First: 1, Next: 4})
		return nil
	}))
	appendN(t, s, "c", 2)
	assert.Equal(t, []uint64{1, 2, 3, 4, 5}, storedSeqs(t, s, "c"))
	p, err := s.Events(ctx, "c", 0, "", 100, 0)
	require.NoError(t, err)
	assert.Len(t, p.Items, 5)
	appendN(t, s, "c", feedBlock-5)
	assert.Len(t, storedSeqs(t, s, "c"), feedBlock)
	p, err = s.Events(ctx, "c", 0, "", 100, 0)
	require.NoError(t, err)
	assert.Len(t, p.Items, feedBlock)
}

// BenchmarkReadEventsPage is an uncached page of 100 listing events read
// from a feed of 1,000: each event is rendered from its record.
func BenchmarkReadEventsPage(b *testing.B) {
	s, err := Open(context.Background(), b.TempDir(), Options{MemTableSize: 8 << 20})
	require.NoError(b, err)
	defer s.Close(context.Background())
	for k := 0; k < 10; k++ {
		require.NoError(b, s.Update(context.Background(), func(tx *Tx) error {
			h, err := tx.FeedHead(sampleCID)
			if err != nil {
				return err
			}
			evs := make([]NewEvent, 100)
			for i := range evs {
				evs[i] = sampleEvent()
				evs[i].Seq, evs[i].Index = uint64(k), i
			}
			tx.PutFeedHead(sampleCID, tx.AppendEvents(sampleCID, h, evs))
			return nil
		}))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.cache.reset()
		p, err := s.Events(context.Background(), sampleCID, 0, "", 100, 0)
		if err != nil || len(p.Items) != 100 {
			b.Fatal(err, len(p.Items))
		}
	}
}

// TestStateRecordDamage: a collection's state record comes back section
// by section as it was put, one written before a section was appended
// reads that section as empty, and one that is cut, has a byte too many
// or is not a record is damage, never a panic; likewise a feed set.
func TestStateRecordDamage(t *testing.T) {
	set := EncodeFeedSet([]readmodel.ListingRow{*sampleListing(), *sampleListing()}, nil, nil)
	native := sampleCID + "_720065984443128398297674054995370039180168182140779004769228702_1795591471000"
	var full CollectionState
	full[SecDoc] = []byte(`{"id":"c"}`)
	full[SecBook] = EncodeRows(time.Unix(5, 0), []readmodel.ListingRow{*sampleListing()})
	full[SecFeedHead] = EncodeFeedHead(FeedHead{First: 3, Next: 9})
	full[SecFeedSold] = EncodeFeedSold([]uint64{OrderHash(native), 0, 1<<64 - 1})
	full[SecFeedSet] = set
	cases := []struct {
		name string
		st   CollectionState
	}{
		{name: "empty"},
		{name: "full", st: full},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := mustOpen(t)
			ctx := context.Background()
			require.NoError(t, s.Update(ctx, func(tx *Tx) error {
				all := [NumStateSections]bool{}
				for sec := range all {
					all[sec] = true
				}
				tx.PutCollectionState("c", &tc.st, &all)
				return nil
			}))
			require.NoError(t, s.View(ctx, func(tx *Tx) error {
				small, err := tx.CollectionState("c", false)
				require.NoError(t, err)
				listings, err := tx.CollectionState("c", true)
				require.NoError(t, err)
				for sec := range tc.st {
					got := small[sec]
					if ListingSection(StateSection(sec)) {
						got = listings[sec]
						assert.Nil(t, small[sec], "section %d is not the small record's", sec)
					} else {
						assert.Nil(t, listings[sec], "section %d is not the listings record's", sec)
					}
					assert.Equal(t, tc.st[sec], got, "section %d", sec)
				}
				h, err := tx.FeedHead("c")
				require.NoError(t, err)
				want, _ := DecodeFeedHead(tc.st[SecFeedHead])
				assert.Equal(t, want, h, "the head is written apart for the feed's readers")
				return nil
			}))
			rec := encodeState(&tc.st)
			for n := 0; n < len(rec); n++ {
				var got CollectionState
				var err error
				require.NotPanics(t, func() { got, err = decodeState(rec[:n]) })
				if err == nil {
					// Cut at a section's end: a record written before the
					// later sections were appended.
					for sec := range got {
						if got[sec] != nil {
							assert.Equal(t, tc.st[sec], got[sec], "cut at %d", n)
						}
					}
					continue
				}
				_, damaged := Damaged(err)
				assert.True(t, damaged, "cut at %d of %d: %v", n, len(rec), err)
			}
			_, err := decodeState(append([]byte{'{'}, rec[1:]...))
			assert.Error(t, err, "JSON is not a record")
		})
	}
	rows, err := DecodeFeedSet(set, nil, nil)
	require.NoError(t, err)
	assert.Equal(t, []readmodel.ListingRow{*sampleListing(), *sampleListing()}, rows)
	for n := 0; n < len(set); n++ {
		_, err = DecodeFeedSet(set[:n], nil, nil)
		_, damaged := Damaged(err)
		assert.True(t, damaged || n == 0, "a set cut at %d does not decode", n)
	}
	_, err = DecodeFeedSet(EncodeFeedSet([]readmodel.ListingRow{*sampleListing()}, []readmodel.ListingRow{*sampleListing()}, nil), nil, nil)
	_, damaged := Damaged(err)
	assert.True(t, damaged, "a reference to a row that is not there is damage")
}

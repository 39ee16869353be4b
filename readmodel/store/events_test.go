package store

import (
	"context"
	"strconv"
	"testing"

	"github.com/dgraph-io/badger/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/render"
)

// appendN appends n events to cid's feed: sales at odd seqs, additions at
// even ones, with ids e<seq>.
func appendN(t *testing.T, s *Store, cid string, n int) {
	t.Helper()
	require.NoError(t, s.Update(context.Background(), func(tx *Tx) error {
		h, state, err := tx.FeedState(cid)
		if err != nil {
			return err
		}
		var evs []NewEvent
		for i := 0; i < n; i++ {
			seq := h.Next + uint64(i)
			typ := render.EventListingAdded
			if seq%2 == 1 {
				typ = render.EventSale
			}
			evs = append(evs, NewEvent{Type: render.EventTypeBit(typ), ID: "e" + strconv.FormatUint(seq, 10), Body: []byte(`{"seq":` + strconv.FormatUint(seq, 10) + `}`)})
		}
		tx.PutFeedState(cid, tx.AppendEvents(cid, h, evs), append(state, 'x'))
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
	assert.Equal(t, []string{`{"seq":1}`, `{"seq":2}`, `{"seq":3}`}, strs(p.Items))
	assert.Equal(t, "e3", p.LastID)

	p, err = s.Events(ctx, "c", 3, "e3", 3, 0)
	require.NoError(t, err)
	assert.False(t, p.Full, "the head page")
	assert.Equal(t, []string{`{"seq":4}`}, strs(p.Items))

	p, err = s.Events(ctx, "c", 0, "", 10, render.EventTypeBit(render.EventSale))
	require.NoError(t, err)
	assert.Equal(t, []string{`{"seq":1}`, `{"seq":3}`}, strs(p.Items))
	assert.Equal(t, uint64(4), p.Last, "the head page resumes after what it filtered out")

	_, err = s.Events(ctx, "c", 3, "e9", 3, 0)
	assert.Equal(t, readmodel.BadRequest, readmodel.ErrorCode(err), "the event at the position is another")
	_, err = s.Events(ctx, "c", 9, "e9", 3, 0)
	assert.Equal(t, readmodel.BadRequest, readmodel.ErrorCode(err), "beyond the feed")

	appendN(t, s, "c", 4) // 8 events, 5 kept: 4..8
	require.NoError(t, s.View(ctx, func(tx *Tx) error {
		h, state, err := tx.FeedState("c")
		assert.Equal(t, FeedHead{First: 4, Next: 9}, h)
		assert.Equal(t, "xx", string(state))
		return err
	}))
	p, err = s.Events(ctx, "c", 0, "", 10, 0)
	require.NoError(t, err)
	assert.Equal(t, []string{`{"seq":4}`, `{"seq":5}`, `{"seq":6}`, `{"seq":7}`, `{"seq":8}`}, strs(p.Items))
	_, err = s.Events(ctx, "c", 3, "e3", 3, 0)
	require.NoError(t, err, "right before the oldest kept: nothing was missed")
	_, err = s.Events(ctx, "c", 2, "e2", 3, 0)
	assert.Equal(t, readmodel.BadRequest, readmodel.ErrorCode(err))
	assert.Contains(t, readmodel.ErrorMessage(err), `"e4"`, "names the oldest event kept")

	p, err = s.Events(ctx, "other", 0, "", 10, 0)
	require.NoError(t, err)
	assert.Len(t, p.Items, 2, "feeds are per collection")

	appendN(t, s, "long", 12) // one append longer than the retention: only the last 5 are written
	p, err = s.Events(ctx, "long", 0, "", 10, 0)
	require.NoError(t, err)
	assert.Equal(t, []string{`{"seq":8}`, `{"seq":9}`, `{"seq":10}`, `{"seq":11}`, `{"seq":12}`}, strs(p.Items))
	n := 0
	require.NoError(t, s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: key(pEvent, "long", "")})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			n++
		}
		return nil
	}))
	assert.Equal(t, 5, n, "no event beyond the retention is stored")
}

func strs(bs [][]byte) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = string(b)
	}
	return out
}

// TestEventPagesCachedUntilTheFeedMoves: a page read again is the cached
// one, and an append to the feed (not to another collection's) makes the
// head page show the new events at once.
func TestEventPagesCachedUntilTheFeedMoves(t *testing.T) {
	s := mustOpen(t)
	ctx := context.Background()
	appendN(t, s, "c", 2)
	head := func() []string {
		p, err := s.Events(ctx, "c", 1, "e1", 10, 0)
		require.NoError(t, err)
		return strs(p.Items)
	}
	assert.Equal(t, []string{`{"seq":2}`}, head())
	_, _, cached := s.cache.getEventPage([]byte("e|c|1|e1|10|0"), "c")
	assert.True(t, cached, "the head page is cached")
	appendN(t, s, "other", 3)
	_, _, cached = s.cache.getEventPage([]byte("e|c|1|e1|10|0"), "c")
	assert.True(t, cached, "another feed's append keeps it")
	appendN(t, s, "c", 2)
	assert.Equal(t, []string{`{"seq":2}`, `{"seq":3}`, `{"seq":4}`}, head(), "an append is served at once")
}

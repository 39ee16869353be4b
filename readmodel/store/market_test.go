package store

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/render"
)

// marketAt is an event of the market log as a test names it: its
// collection and its testEvent seq.
type marketAt struct {
	cid string
	seq uint64
}

// appendMarket appends the events ats (testEvent) to the market log in one
// transaction, in their order.
func appendMarket(t *testing.T, s *Store, ats ...marketAt) {
	t.Helper()
	require.NoError(t, s.Update(context.Background(), func(tx *Tx) error {
		evs := make([]MarketEvent, len(ats))
		for i, a := range ats {
			evs[i] = MarketEvent{CollectionID: a.cid, Event: testEvent(a.seq)}
		}
		tx.AppendMarket(evs)
		return nil
	}))
}

// marketOf is what a page of the market log holds, each event as the
// marketAt it was appended as (its id checked against it).
func marketOf(t *testing.T, items [][]byte) []marketAt {
	t.Helper()
	out := []marketAt{}
	for _, b := range items {
		var e struct {
			CollectionID string `json:"collectionId"`
		}
		require.NoError(t, json.Unmarshal(b, &e))
		out = append(out, marketAt{e.CollectionID, seqOf(t, b)}) // seqOf checks the id
	}
	return out
}

func TestMarketEvents(t *testing.T) {
	const a, b = "ethereum_0xaa", "solana_Mint"
	s := mustOpen(t)
	s.opts.MarketEvents = 6
	ctx := context.Background()
	read := func(after uint64, afterID string, limit int, f MarketFilter) render.EventPage {
		t.Helper()
		p, err := s.MarketEvents(ctx, after, afterID, limit, f)
		require.NoError(t, err)
		return p
	}

	p := read(0, "", 10, MarketFilter{})
	assert.Empty(t, p.Items)
	assert.Equal(t, uint64(0), p.Last, "an empty log read from its start")

	// The order applied, not the collections' order.
	appendMarket(t, s, marketAt{b, 1}, marketAt{a, 1}, marketAt{b, 2})
	appendMarket(t, s, marketAt{a, 2})
	p = read(0, "", 10, MarketFilter{})
	assert.Equal(t, []marketAt{{b, 1}, {a, 1}, {b, 2}, {a, 2}}, marketOf(t, p.Items))
	assert.False(t, p.Full)
	assert.Equal(t, uint64(4), p.Last)

	p = read(0, "", 2, MarketFilter{})
	assert.True(t, p.Full)
	assert.Equal(t, []marketAt{{b, 1}, {a, 1}}, marketOf(t, p.Items))
	assert.Equal(t, evID(t, a, 1), p.LastID)
	p = read(p.Last, p.LastID, 2, MarketFilter{})
	assert.Equal(t, []marketAt{{b, 2}, {a, 2}}, marketOf(t, p.Items))

	for _, tc := range []struct {
		name string
		f    MarketFilter
		want []marketAt
	}{
		{"chain", MarketFilter{Chain: readmodel.Solana}, []marketAt{{b, 1}, {b, 2}}},
		{"another chain", MarketFilter{Chain: readmodel.Base}, []marketAt{}},
		{"collections", MarketFilter{Collections: []string{a}}, []marketAt{{a, 1}, {a, 2}}},
		{"collections and chain", MarketFilter{Collections: []string{a, b}, Chain: readmodel.Ethereum}, []marketAt{{a, 1}, {a, 2}}},
		{"types", MarketFilter{Types: render.EventTypeBit(render.EventSale)}, []marketAt{{b, 1}, {a, 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := read(0, "", 10, tc.f)
			assert.Equal(t, tc.want, marketOf(t, p.Items))
			assert.Equal(t, uint64(4), p.Last, "the head page resumes after what it filtered out")
			assert.Equal(t, evID(t, a, 2), p.LastID)
		})
	}

	for _, tc := range []struct {
		name    string
		after   uint64
		afterID string
	}{
		{"another event at the position", 2, evID(t, b, 1)},
		{"beyond the log", 5, evID(t, a, 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.MarketEvents(ctx, tc.after, tc.afterID, 10, MarketFilter{})
			assert.Equal(t, readmodel.BadRequest, readmodel.ErrorCode(err))
			assert.Contains(t, readmodel.ErrorMessage(err), "does not resolve")
		})
	}

	// 9 events, 6 kept: 4..9.
	appendMarket(t, s, marketAt{a, 3}, marketAt{a, 4}, marketAt{b, 3}, marketAt{b, 4}, marketAt{a, 5})
	p = read(0, "", 10, MarketFilter{})
	assert.Equal(t, []marketAt{{a, 2}, {a, 3}, {a, 4}, {b, 3}, {b, 4}, {a, 5}}, marketOf(t, p.Items))
	_, err := s.MarketEvents(ctx, 3, evID(t, b, 2), 10, MarketFilter{})
	require.NoError(t, err, "right before the oldest kept: nothing was missed")
	_, err = s.MarketEvents(ctx, 2, evID(t, a, 1), 10, MarketFilter{})
	assert.Equal(t, readmodel.BadRequest, readmodel.ErrorCode(err))
	assert.Contains(t, readmodel.ErrorMessage(err), fmt.Sprintf("%q", evID(t, a, 2)), "names the oldest event kept")

	// A rebuilt store: the position holds another event.
	rebuilt := mustOpen(t)
	appendMarket(t, rebuilt, marketAt{a, 7}, marketAt{a, 8}, marketAt{a, 9})
	_, err = rebuilt.MarketEvents(ctx, 2, evID(t, a, 1), 10, MarketFilter{})
	assert.Equal(t, readmodel.BadRequest, readmodel.ErrorCode(err))
}

// TestMarketEventsScanIsBounded: a filter that matches nothing for more
// than MarketScan events ends its page there, full, and the walk goes on
// from where it stopped.
func TestMarketEventsScanIsBounded(t *testing.T) {
	const a, b = "ethereum_0xaa", "base_0xbb"
	s := mustOpen(t)
	ats := make([]marketAt, 0, MarketScan+50)
	for i := range MarketScan + 50 {
		ats = append(ats, marketAt{a, uint64(i + 1)})
	}
	appendMarket(t, s, ats...)
	appendMarket(t, s, marketAt{b, 1})
	f := MarketFilter{Collections: []string{b}}

	p, err := s.MarketEvents(context.Background(), 0, "", 10, f)
	require.NoError(t, err)
	assert.Empty(t, p.Items)
	assert.True(t, p.Full, "a page that stops scanning never changes")
	assert.Equal(t, uint64(MarketScan), p.Last)
	assert.Equal(t, evID(t, a, MarketScan), p.LastID)

	p, err = s.MarketEvents(context.Background(), p.Last, p.LastID, 10, f)
	require.NoError(t, err)
	assert.Equal(t, []marketAt{{b, 1}}, marketOf(t, p.Items))
	assert.False(t, p.Full)
}

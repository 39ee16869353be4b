package bus_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/bus"
	"github.com/marketd/marketd/readmodel/bus/bustest"
)

// TestStateReadsTheLastMessageOfEverySubject: what ingest reads back at a
// restart is each subject's last message, decoded, never a superseded one
// or a sale, and garbage is counted, not handed over.
func TestStateReadsTheLastMessageOfEverySubject(t *testing.T) {
	ctx := context.Background()
	url := bustest.MustStartServer(t)
	js := bustest.MustConnect(t, url, 1)
	state := bus.NewState(js, 1)
	collect := func(t *testing.T) (map[string]*readmodel.Message, int, int) {
		t.Helper()
		var mu sync.Mutex
		got := map[string]*readmodel.Message{}
		read, skipped, err := state.LastPerSubject(ctx, func(m *readmodel.Message) error {
			mu.Lock()
			defer mu.Unlock()
			got[m.ID] = m
			return nil
		})
		require.NoError(t, err)
		return got, read, skipped
	}

	got, read, _ := collect(t)
	assert.Empty(t, got, "an empty stream")
	assert.Zero(t, read)

	obs := time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)
	pub := bus.NewPublisher(js)
	want := map[string]*readmodel.Message{}
	const colls = 700 // past the reader's buffers
	for cycle := range 2 {
		for i := range colls {
			cid := fmt.Sprintf("c%d", i)
			owners := int64(cycle*1000 + i)
			m := &readmodel.Message{ID: fmt.Sprintf("%d/%s/stats", cycle, cid), Kind: readmodel.KindStats, Source: readmodel.SourceIndexerStats,
				CollectionID: cid, ObservedAt: obs, Stats: &readmodel.CollectionStats{Owners: &owners}}
			require.NoError(t, pub.Publish(ctx, m))
			want[cid] = m
		}
	}
	sale := &readmodel.Message{ID: "sale", Kind: readmodel.KindSales, CollectionID: "c1", ObservedAt: obs,
		Sales: []readmodel.SaleRow{{Chain: readmodel.Ethereum, CollectionID: "c1", PriceRaw: "5", Marketplace: "NATIVE", Tx: "0x1"}}}
	require.NoError(t, pub.Publish(ctx, sale))
	_, err := pub.Flush(ctx)
	require.NoError(t, err)

	got, read, skipped := collect(t)
	assert.Equal(t, colls, read)
	assert.Zero(t, skipped)
	require.Len(t, got, colls)
	for _, m := range want {
		assert.Equal(t, m, got[m.ID], "the last message of %s", m.CollectionID)
	}

	// Garbage on a state subject: passed over and counted.
	_, err = js.Publish(ctx, "marketd.state.garbage", []byte("{not a message"))
	require.NoError(t, err)
	got, read, skipped = collect(t)
	assert.Equal(t, colls+1, read)
	assert.Equal(t, 1, skipped)
	assert.Len(t, got, colls)

	t.Run("fn's error ends the read", func(t *testing.T) {
		boom := errors.New("boom")
		var mu sync.Mutex
		calls := 0
		_, _, err := state.LastPerSubject(ctx, func(*readmodel.Message) error {
			mu.Lock()
			defer mu.Unlock()
			calls++
			return boom
		})
		assert.ErrorIs(t, err, boom)
		assert.Less(t, calls, colls, "not called for every message after the error")
	})
}

// TestStateKeepsMarksForTheNextProcess: the polls' resume points one
// process saves are what the next one (another connection) loads.
func TestStateKeepsMarksForTheNextProcess(t *testing.T) {
	ctx := context.Background()
	url := bustest.MustStartServer(t)
	first := bus.NewState(bustest.MustConnect(t, url, 1), 1)
	marks, err := first.LoadMarks(ctx)
	require.NoError(t, err)
	assert.Empty(t, marks, "none saved yet")

	require.NoError(t, first.SaveMarks(ctx, map[string]string{"sales": "cursor-1", "tokens": "2026-11-26T19:00:00Z"}))
	require.NoError(t, first.SaveMarks(ctx, map[string]string{"sales": "cursor-2", "tokens": "2026-11-26T19:02:00Z"}))
	next := bus.NewState(bustest.MustConnect(t, url, 1), 1)
	marks, err = next.LoadMarks(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"sales": "cursor-2", "tokens": "2026-11-26T19:02:00Z"}, marks, "the last saved")
}

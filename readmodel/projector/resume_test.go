package projector_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/bus"
	"github.com/marketd/marketd/readmodel/projector"
	"github.com/marketd/marketd/readmodel/store"
)

// cycle returns one ingest-like cycle of messages for n collections.
func cycle(n int, round int) []*readmodel.Message {
	var out []*readmodel.Message
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("ethereum_0x%04x", i)
		c := fmt.Sprintf("0x%04x", i)
		d := evmDoc(id, readmodel.Ethereum, c)
		d.VolumeAllTime = f64(float64(i * round))
		d.FloorRaw = fmt.Sprint(1000 + i)
		out = append(out, docMsg(d))
		var rows []readmodel.ListingRow
		for j := 0; j < 5; j++ {
			rows = append(rows, evmRow(id, c, fmt.Sprint(j), fmt.Sprint(1000+j*round+i), "NATIVE", fmt.Sprintf("%s_%d_%d", id, j, round)))
		}
		out = append(out, listingsMsg(readmodel.SourceOrderBook, id, rows...),
			listingsMsg(readmodel.SourceIndexerMirror, id, evmRow(id, c, "9", fmt.Sprint(900+round), "opensea", fmt.Sprintf("ext%d", round))),
			statusMsg(readmodel.SourceOrderBook, id, true, t0),
			&readmodel.Message{Kind: readmodel.KindTokens, CollectionID: id, Bucket: 0, Tokens: []readmodel.TokenDoc{
				{Chain: readmodel.Ethereum, ContractAddress: c, TokenID: "1", OwnerAddress: "0xo"},
				{Chain: readmodel.Ethereum, ContractAddress: c, TokenID: "9", OwnerAddress: "0xo"},
			}},
			&readmodel.Message{Kind: readmodel.KindSales, CollectionID: id, Sales: []readmodel.SaleRow{
				saleRowFor(id, c, fmt.Sprintf("tx%d-%d", i, round), t0.Add(time.Duration(round)*time.Minute)),
			}})
	}
	out = append(out, ratesMsg(readmodel.USDRates{"ETH": float64(3000 + round)}))
	return out
}

func saleRowFor(id, c, tx string, at time.Time) readmodel.SaleRow {
	r := saleRow(tx, at, "77")
	r.CollectionID, r.ContractAddress = id, c
	return r
}

func digest(t testing.TB, st *store.Store) string {
	t.Helper()
	d, err := st.Digest(context.Background(), time.Time{})
	require.NoError(t, err)
	return d
}

func TestResumeAfterRestartAppliesNothingTwice(t *testing.T) {
	ctx := context.Background()
	e := mustEnv(t)
	e.run(cycle(5, 1)...)

	// The clean reference: a second node applying everything at once.
	e.publish(cycle(5, 2)...)
	refSt, refP := e.mustNode(t.TempDir())
	_, err := refP.ApplyAvailable(ctx)
	require.NoError(t, err)

	// The first node restarts: a new projector on the same store resumes.
	dir := e.st.Dir()
	require.NoError(t, e.st.Close(ctx))
	st := mustStore(t, dir)
	p := projector.New(e.js, st, e.opts(), zerolog.Nop())
	n, err := p.ApplyAvailable(ctx)
	require.NoError(t, err)
	assert.Equal(t, len(cycle(5, 2)), n, "only the second cycle is applied after the restart")
	assert.Equal(t, digest(t, refSt), digest(t, st))

	sales, err := st.Sales(ctx, "ethereum_0x0000", "", 10)
	require.NoError(t, err)
	assert.Len(t, sales.Items, 2, "each sale once")

	n, err = p.ApplyAvailable(ctx)
	require.NoError(t, err)
	assert.Zero(t, n)
}

func TestOpenConsumesLiveAndWaitFor(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e := mustEnv(t)
	e.publish(cycle(3, 1)...)
	require.NoError(t, e.p.Open(ctx))
	t.Cleanup(func() { _ = e.p.Close(context.Background()) })

	require.NoError(t, e.p.WaitFor(ctx, readmodel.Position{State: 1}))
	pos := e.publish(cycle(3, 2)...)
	require.NoError(t, e.p.WaitFor(ctx, pos))
	assert.True(t, e.p.CaughtUp())
	assert.True(t, e.p.Applied().Covers(pos))

	refSt, refP := e.mustNode(t.TempDir())
	_, err := refP.ApplyAvailable(ctx)
	require.NoError(t, err)
	assert.Equal(t, digest(t, refSt), digest(t, e.st), "live consumption equals a synchronous apply")

	v, err := e.st.Collection(ctx, "ethereum_0x0001")
	require.NoError(t, err)
	assert.Contains(t, string(v.Detail), `"usd":`)
	require.NoError(t, e.p.Close(ctx))
}

// TestOpenConsumesABacklogBatchByBatch: a node that starts behind a
// stream holding many batches (the first cycle of a large market) applies
// every one of them, in order, while it decodes the next ahead: the views
// equal a synchronous apply of the same streams.
func TestOpenConsumesABacklogBatchByBatch(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	e := mustEnv(t)
	// The state stream keeps the second cycle (2,100 messages, 9 batches),
	// the sales stream both (600).
	msgs := append(cycle(300, 1), cycle(300, 2)...)
	pos := e.publish(msgs...)
	require.NoError(t, e.p.Open(ctx))
	t.Cleanup(func() { _ = e.p.Close(context.Background()) })
	require.NoError(t, e.p.WaitFor(ctx, pos))

	refSt, refP := e.mustNode(t.TempDir())
	_, err := refP.ApplyAvailable(ctx)
	require.NoError(t, err)
	assert.Equal(t, digest(t, refSt), digest(t, e.st), "live consumption of a backlog equals a synchronous apply")
	sales, err := e.st.Sales(ctx, "ethereum_0x0000", "", 10)
	require.NoError(t, err)
	assert.Len(t, sales.Items, 2, "the first batch's sale and the last's")
	require.NoError(t, e.p.Close(ctx))
}

// TestStreamThatReissuedSequencesIsAppliedOverTheViews: a stream that
// lost its tail (or was recreated) re-issues sequences below the applied
// position. Its messages are applied again from its start over the views,
// which are never reset (a damaged stream would leave a partial index),
// and the views are incomplete until a full ingest cycle.
func TestStreamThatReissuedSequencesIsAppliedOverTheViews(t *testing.T) {
	ctx := context.Background()
	e := mustEnv(t)
	e.run(cycle(2, 1)...)
	before := digest(t, e.st)

	// Simulate a stream that lost its tail: recreate the streams, then
	// publish different messages so sequences are re-issued with other ids.
	for _, s := range []string{bus.StateStream, bus.SalesStream} {
		require.NoError(t, e.js.DeleteStream(ctx, s))
	}
	require.Eventually(t, func() bool { // the server removes the old store asynchronously
		return bus.EnsureStreams(ctx, e.js, bus.StreamOptions{}) == nil
	}, 10*time.Second, 50*time.Millisecond)
	e.publish(cycle(1, 3)...)

	dir := e.st.Dir()
	require.NoError(t, e.st.Close(ctx))
	st := mustStore(t, dir)
	p := projector.New(e.js, st, e.opts(), zerolog.Nop())
	_, err := p.ApplyAvailable(ctx)
	require.NoError(t, err)

	assert.NotEqual(t, before, digest(t, st), "the new stream's messages are applied")
	_, err = st.Collection(ctx, "ethereum_0x0001")
	assert.NoError(t, err, "the last good views are kept whole")
	g := p.Gaps()
	require.NotEmpty(t, g.Ranges)
	assert.Equal(t, projector.GapReissued, g.Ranges[0].Reason)
	assert.True(t, g.Incomplete)
	assert.Zero(t, g.Skipped[bus.StateStream], "re-issued sequences had been applied: not counted as skipped")

	e.publish(fullCycleEnd())
	_, err = p.ApplyAvailable(ctx)
	require.NoError(t, err)
	assert.False(t, p.Gaps().Incomplete)
}

package projector_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/projector"
)

// TestYieldBetweenMessages: the projector calls Options.Yield before each
// message it applies and each collection it renders, so that reads served by the same process can go
// first (cmd/marketd passes a pace.Gate's).
func TestYieldBetweenMessages(t *testing.T) {
	e := mustEnv(t)
	var yields atomic.Int64
	o := e.opts()
	o.Yield = func() { yields.Add(1) }
	p := projector.New(e.js, e.st, o, zerolog.Nop())
	msgs := []*readmodel.Message{
		docMsg(readmodel.CollectionDoc{ID: "ethereum_0x1", Chain: "ethereum", FloorRaw: "5"}),
		docMsg(readmodel.CollectionDoc{ID: "ethereum_0x2", Chain: "ethereum", FloorRaw: "6"}),
		docMsg(readmodel.CollectionDoc{ID: "ethereum_0x3", Chain: "ethereum", FloorRaw: "7"}),
	}
	e.publish(msgs...)
	n, err := p.ApplyAvailable(context.Background())
	require.NoError(t, err)
	require.Equal(t, len(msgs), n)
	assert.Equal(t, int64(2*len(msgs)), yields.Load(), "one before each message, one before each collection's render")
}

// TestYieldDuringSweep: the expiry sweep calls Options.Yield before each
// snapshot it re-renders. A sweep runs on the serving node's own cores; at
// 100,000 collections it re-rendered for 23 s of a 160-s read run, and a
// batch of 64 renders without a yield held a one-core node's reads for
// tens of milliseconds.
func TestYieldDuringSweep(t *testing.T) {
	ctx := context.Background()
	e := mustEnv(t)
	var yields atomic.Int64
	o := e.opts()
	o.Yield = func() { yields.Add(1) }
	p := projector.New(e.js, e.st, o, zerolog.Nop())
	const collections = 3
	var msgs []*readmodel.Message
	for i := 0; i < collections; i++ {
		addr := fmt.Sprintf("0xd%03d", i)
		id := "ethereum_" + addr
		r := evmRow(id, addr, "1", "1", "NATIVE", "soon-"+addr)
		r.ExpiresAt = tp(t0.Add(time.Minute))
		msgs = append(msgs, docMsg(evmDoc(id, readmodel.Ethereum, addr)), listingsMsg(readmodel.SourceOrderBook, id, r))
	}
	e.publish(msgs...)
	_, err := p.ApplyAvailable(ctx)
	require.NoError(t, err)

	yields.Store(0)
	n, err := p.Sweep(ctx, t0.Add(2*time.Minute))
	require.NoError(t, err)
	require.Equal(t, collections, n, "every snapshot was due")
	assert.Equal(t, int64(collections), yields.Load(), "one yield before each re-rendered snapshot")
}

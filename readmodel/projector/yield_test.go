package projector_test

import (
	"context"
	"sync/atomic"
	"testing"

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

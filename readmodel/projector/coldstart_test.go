package projector_test

import (
	"context"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/projector"
	"github.com/marketd/marketd/readmodel/store"
)

// openCold opens a projector (ColdIdle idle) on st in the background; it
// closes at cleanup.
func (e *env) openCold(ctx context.Context, st *store.Store, idle time.Duration) *projector.Projector {
	e.t.Helper()
	opts := e.opts()
	opts.ColdIdle, opts.HoldFirstCycle = idle, true
	p := projector.New(e.js, st, opts, zerolog.Nop())
	require.NoError(e.t, p.Open(ctx))
	e.t.Cleanup(func() { _ = p.Close(context.Background()) })
	return p
}

// reference is a node that applied everything in the streams
// synchronously (never cold).
func (e *env) reference(ctx context.Context) *store.Store {
	e.t.Helper()
	st, p := e.mustNode(e.t.TempDir())
	_, err := p.ApplyAvailable(ctx)
	require.NoError(e.t, err)
	return st
}

func collectionMissing(t *testing.T, st *store.Store, id string) bool {
	t.Helper()
	_, err := st.Collection(context.Background(), id)
	return readmodel.ErrorCode(err) == readmodel.NotFound
}

// TestColdStartRendersHeldViewsWhenItEnds: a projector that opens on an
// empty store holds collection renders (tokens and sales are written as
// they come) and renders each collection once when the cold start ends:
// at a full cycle's last message, after an idle wait, or once it has
// applied what the streams held at Open. The views are then those of a
// node that rendered after every message.
func TestColdStartRendersHeldViewsWhenItEnds(t *testing.T) {
	tests := []struct {
		name   string
		before bool          // publish the cycle before Open (a node joining a tier)
		end    bool          // publish a full cycle's last message after it
		idle   time.Duration // Options.ColdIdle
	}{
		{name: "full cycle end", end: true, idle: time.Hour},
		{name: "idle", idle: 300 * time.Millisecond},
		{name: "caught up with the streams at Open", before: true, idle: time.Hour},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			e := mustEnv(t)
			var pos readmodel.Position
			if tc.before {
				pos = e.publish(cycle(3, 1)...)
			}
			p := e.openCold(ctx, e.st, tc.idle)
			if !tc.before {
				pos = e.publish(cycle(3, 1)...)
			}
			require.NoError(t, p.WaitFor(ctx, pos))
			if tc.before {
				assert.True(t, p.CaughtUp())
				assert.False(t, collectionMissing(t, e.st, "ethereum_0x0001"), "a joining node's views are rendered before it counts as caught up")
			} else {
				assert.True(t, collectionMissing(t, e.st, "ethereum_0x0001"), "held while cold")
				tok, err := e.st.Token(ctx, readmodel.Ethereum, "0x0001", "1")
				require.NoError(t, err, "token records are written as they come")
				assert.NotEmpty(t, tok.Body.Head)
			}
			if tc.end {
				require.NoError(t, p.WaitFor(ctx, e.publish(fullCycleEnd())))
				assert.False(t, collectionMissing(t, e.st, "ethereum_0x0001"), "rendered by the time the full cycle counts as applied")
			}
			require.Eventually(t, func() bool { return !collectionMissing(t, e.st, "ethereum_0x0002") }, 10*time.Second, 20*time.Millisecond)
			assert.Equal(t, digest(t, e.reference(ctx)), digest(t, e.st), "a cold start renders what rendering after every message does")

			// After the cold start the projector renders as it applies.
			pos = e.publish(cycle(4, 2)...)
			require.NoError(t, p.WaitFor(ctx, pos))
			assert.False(t, collectionMissing(t, e.st, "ethereum_0x0003"), "a new collection is rendered when applied")
		})
	}
}

// TestColdStartCutShortRerendersEveryCollection: a node stopped (or
// crashed) during its cold start lost the renders it held; the store's
// marker makes the next projector start cold again and end by rendering
// every collection.
func TestColdStartCutShortRerendersEveryCollection(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e := mustEnv(t)
	opts := e.opts()
	opts.ColdIdle, opts.HoldFirstCycle = time.Hour, true
	p := projector.New(e.js, e.st, opts, zerolog.Nop())
	require.NoError(t, p.Open(ctx))
	pos := e.publish(cycle(3, 1)...)
	require.NoError(t, p.WaitFor(ctx, pos))
	require.NoError(t, p.Close(ctx)) // what it held is gone with it
	require.True(t, collectionMissing(t, e.st, "ethereum_0x0000"))

	p2 := e.openCold(ctx, e.st, time.Hour)
	assert.True(t, p2.CaughtUp())
	for _, id := range []string{"ethereum_0x0000", "ethereum_0x0001", "ethereum_0x0002"} {
		assert.False(t, collectionMissing(t, e.st, id), id)
	}
	assert.Equal(t, digest(t, e.reference(ctx)), digest(t, e.st))

	// The marker is gone: a third start is not cold.
	require.NoError(t, p2.Close(ctx))
	p3 := e.openCold(ctx, e.st, time.Hour)
	pos = e.publish(cycle(4, 2)...)
	require.NoError(t, p3.WaitFor(ctx, pos))
	assert.False(t, collectionMissing(t, e.st, "ethereum_0x0003"), "rendered as applied, not held")
}

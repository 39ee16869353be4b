package projector_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel"
)

// TestApplyAvailableAppliesEveryBatch publishes more messages than
// several batches hold, with undecodable ones among them, and checks that
// ApplyAvailable (the path replay drains the streams with, decoding one
// batch ahead) applies each of them exactly once, the last batch
// included, and still does on a second round.
func TestApplyAvailableAppliesEveryBatch(t *testing.T) {
	ctx := context.Background()
	e := mustEnv(t)
	round := func(name string, first, count int) {
		t.Helper()
		for k := first; k < first+count; k++ {
			if k%97 == 0 {
				_, err := e.js.Publish(ctx, fmt.Sprintf("marketd.state.collection.-.garbage%d", k), []byte("not json"))
				require.NoError(t, err)
			}
			e.publish(docMsg(evmDoc(fmt.Sprintf("c%04d", k), readmodel.Ethereum, fmt.Sprintf("0x%04x", k))))
		}
		garbage := (first+count+96)/97 - (first+96)/97
		pos, err := e.pub.Flush(ctx)
		require.NoError(t, err)

		n, err := e.p.ApplyAvailable(ctx)
		require.NoError(t, err)
		assert.Equal(t, count+garbage, n, "%s: every message applied once, skipped ones counted", name)
		assert.Equal(t, pos.State, e.p.Applied().State, "%s: applied up to the head", name)
		for k := first; k < first+count; k++ {
			id := fmt.Sprintf("c%04d", k)
			got, err := e.st.ResolveCollection(ctx, id)
			if assert.NoError(t, err, "%s: %s", name, id) {
				assert.Equal(t, id, got)
			}
		}
	}
	round("first round", 0, 700) // nearly three batches of 256
	round("second round", 700, 300)
}

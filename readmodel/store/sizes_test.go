package store_test

import (
	"context"
	"testing"

	"github.com/marketd/marketd/readmodel/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSizesCountCachedViews(t *testing.T) {
	st, err := store.Open(context.Background(), t.TempDir(), store.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close(context.Background()) })
	before := st.Sizes()
	assert.Zero(t, before.CacheEntries)
	// A browse page read is cached, even when empty.
	_, err = st.Browse(context.Background(), "volume", "", "", 10)
	require.NoError(t, err)
	after := st.Sizes()
	assert.Equal(t, 1, after.CacheEntries)
	assert.GreaterOrEqual(t, after.LSMBytes, int64(0))
}

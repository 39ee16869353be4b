package store

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel"
)

func TestLockDirExcludesStores(t *testing.T) {
	ctx := context.Background()
	opts := Options{MemTableSize: 8 << 20}

	t.Run("missing dir", func(t *testing.T) {
		release, err := LockDir(filepath.Join(t.TempDir(), "absent"))
		require.NoError(t, err)
		release()
	})
	t.Run("open store refuses the lock", func(t *testing.T) {
		dir := t.TempDir()
		s, err := Open(ctx, dir, opts)
		require.NoError(t, err)
		_, err = LockDir(dir)
		require.Error(t, err)
		assert.Equal(t, readmodel.Internal, readmodel.ErrorCode(err))
		require.NoError(t, s.Close(ctx))
		release, err := LockDir(dir)
		require.NoError(t, err, "a closed store leaves the lock free")
		release()
	})
	t.Run("held lock refuses a store until released", func(t *testing.T) {
		dir := t.TempDir()
		s, err := Open(ctx, dir, opts)
		require.NoError(t, err)
		require.NoError(t, s.Close(ctx))
		release, err := LockDir(dir)
		require.NoError(t, err)
		_, err = Open(ctx, dir, opts)
		require.Error(t, err, "no store opens on a locked dir")
		release()
		s, err = Open(ctx, dir, opts)
		require.NoError(t, err)
		require.NoError(t, s.Close(ctx))
	})
}

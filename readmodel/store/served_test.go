package store

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/render"
)

// TestSupersededKeptOnlyWhenServed: a superseded listing snapshot is kept
// readable by version when the store served it (a cursor can name it),
// and not written when nobody read it; snapshots committed before the
// store opened count as served.
func TestSupersededKeptOnlyWhenServed(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(ctx, dir, Options{MemTableSize: 8 << 20})
	require.NoError(t, err)
	put := func(s *Store, cid, token string) uint64 { return mustPutListing(t, s, cid, token) }
	superseded := func(s *Store, cid string, v uint64) bool {
		t.Helper()
		got, ok, err := s.get(key(pOldListings, cid, string(beUint64(v))))
		require.NoError(t, err)
		if ok {
			lv, good := decodeListings(got)
			require.True(t, good)
			assert.Equal(t, v, lv.Version)
		}
		return ok
	}

	read1 := put(s, "read", "1")
	unread1 := put(s, "unread", "1")
	cur, err := s.Listings(ctx, "read", 0)
	require.NoError(t, err)
	require.Equal(t, read1, cur.Version)
	put(s, "read", "2")
	unread2 := put(s, "unread", "2")
	assert.True(t, superseded(s, "read", read1), "a snapshot served is kept when superseded")
	assert.False(t, superseded(s, "unread", unread1), "a snapshot nobody read is not copied")
	old, err := s.Listings(ctx, "read", read1)
	require.NoError(t, err)
	assert.Equal(t, read1, old.Version, "a walk of the served snapshot goes on")
	fallback, err := s.Listings(ctx, "unread", unread1)
	require.NoError(t, err)
	assert.NotEqual(t, unread1, fallback.Version, "an unknown version is the current snapshot")

	require.NoError(t, s.Close(ctx))
	s, err = Open(ctx, dir, Options{MemTableSize: 8 << 20})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close(ctx) })
	put(s, "unread", "3")
	assert.True(t, superseded(s, "unread", unread2), "a snapshot from before the store opened counts as served")
	after := put(s, "unread", "4")
	put(s, "unread", "5")
	assert.False(t, superseded(s, "unread", after), "one written and superseded since, unread, is not")
}

// mustPutListing commits cid's listing snapshot of one listing, of token,
// at a new version, which it returns.
func mustPutListing(t *testing.T, s *Store, cid, token string) uint64 {
	t.Helper()
	var v uint64
	require.NoError(t, s.Update(context.Background(), func(tx *Tx) error {
		v = tx.NextVersion()
		row := *sampleListing()
		row.TokenID = token
		tx.PutListings(cid, render.ListingsRecord{Version: v, Rows: []readmodel.ListingRow{row}, Listed: 1})
		return nil
	}))
	return v
}

func beUint64(v uint64) []byte {
	b := make([]byte, 8)
	for i := 7; i >= 0; i-- {
		b[i] = byte(v)
		v >>= 8
	}
	return b
}

func TestServedListingsNeverForgets(t *testing.T) {
	s := newServedListings(10)
	assert.True(t, s.served("x", 10), "committed before open")
	assert.False(t, s.served("x", 11))
	s.mark("x", 20)
	s.mark("x", 15) // an older version read later keeps the slot's highest
	assert.True(t, s.served("x", 15))
	assert.True(t, s.served("x", 20))
	assert.False(t, s.served("x", 21))
}

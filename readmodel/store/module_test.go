package store

import (
	"context"
	"encoding/hex"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel/render"
)

// TestViewModuleLayout pins a module's key and stored bytes: the floor
// history's record, as the store wrote it before the floor history was a
// module (so a store written then reads the same, without a schema bump).
func TestViewModuleLayout(t *testing.T) {
	h := &render.FloorHistory{}
	at := time.Date(2026, 11, 22, 10, 5, 0, 0, time.UTC)
	h.Observe(at, "1250000000000000000")
	h.Observe(at.Add(time.Minute), "1300000000000000000")
	h.Observe(at.Add(3*time.Hour), "1200000000000000000")
	h.Observe(at.Add(-30*time.Hour), "900")
	const want = "0000000000000007040339303013313235303030303030303030303030303030301331333030303030303030303030303030303030133132303030303030303030303030303030303003e8ef3c00001e010102010203000302d4c4020000010101020303"

	ctx := context.Background()
	s := mustOpen(t)
	require.NoError(t, s.Update(ctx, func(tx *Tx) error { tx.PutViewRecord(render.FloorHistoryView, "c1", 7, h); return nil }))
	b, ok, err := s.get([]byte("h/f/c1"))
	require.NoError(t, err)
	require.True(t, ok, "the floor history's key is h/f/<cid>")
	assert.Equal(t, want, hex.EncodeToString(b))
}

// TestViewModuleServed: what a transaction writes is read back for
// serving, a commit of a new version replaces the cached one, and a
// damaged record is damage, in a transaction and in a read.
func TestViewModuleServed(t *testing.T) {
	ctx := context.Background()
	s := mustOpen(t)
	m := render.FloorHistoryView
	v, err := s.ReadView(ctx, m.Name(), "c1")
	require.NoError(t, err)
	assert.Equal(t, render.ViewValue{}, v, "nothing observed yet")

	h := &render.FloorHistory{}
	h.Observe(time.Unix(1_800_000_000, 0), "5")
	require.NoError(t, s.Update(ctx, func(tx *Tx) error { tx.PutViewRecord(m, "c1", 3, h); return nil }))
	v, err = s.ReadView(ctx, m.Name(), "c1")
	require.NoError(t, err)
	assert.Equal(t, uint64(3), v.Version)
	assert.Equal(t, h.Hours, m.Record(v).Hours)

	h.Observe(time.Unix(1_800_000_060, 0), "4")
	require.NoError(t, s.Update(ctx, func(tx *Tx) error {
		in, err := tx.ViewRecord(m, "c1")
		require.NoError(t, err)
		assert.Equal(t, "5", in.(*render.FloorHistory).Hours[0].Low, "the transaction reads the stored history")
		tx.PutViewRecord(m, "c1", 4, h)
		return nil
	}))
	v, err = s.ReadView(ctx, m.Name(), "c1")
	require.NoError(t, err)
	assert.Equal(t, uint64(4), v.Version, "the cached history is replaced at the commit")
	assert.Equal(t, "4", m.Record(v).Hours[0].Low)

	_, err = s.ReadView(ctx, "no such view", "c1")
	assert.Error(t, err, "an unregistered name")

	for _, bad := range [][]byte{{1, 2, 3}, {0, 0, 0, 0, 0, 0, 0, 5, 0xff}} {
		require.NoError(t, s.Update(ctx, func(tx *Tx) error { tx.set([]byte("h/f/c2"), bad); return nil }))
		_, err = s.ReadView(ctx, m.Name(), "c2")
		_, damaged := Damaged(err)
		assert.True(t, damaged, "a damaged record read for serving: %v", err)
		require.NoError(t, s.View(ctx, func(tx *Tx) error {
			_, err := tx.ViewRecord(m, "c2")
			_, damaged := Damaged(err)
			assert.True(t, damaged, "a damaged record read by a transaction: %v", err)
			return nil
		}))
	}
}

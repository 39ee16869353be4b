package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// record is a key as Badger holds it: value and expiry.
type record struct {
	v   string
	exp uint64
}

func badgerRecords(t *testing.T, s *Store) map[string]record {
	t.Helper()
	out := map[string]record{}
	require.NoError(t, s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{PrefetchValues: true})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			v, err := it.Item().ValueCopy(nil)
			if err != nil {
				return err
			}
			out[string(it.Item().Key())] = record{string(v), it.Item().ExpiresAt()}
		}
		return nil
	}))
	return out
}

// TestWriteMemoryEqualsTransactions: the same writes committed through
// transactions into Badger and into a memory store written out with
// WriteMemory leave the same keys, values and expiries, the schema Open
// records, and a store that opens and takes transactions.
func TestWriteMemoryEqualsTransactions(t *testing.T) {
	ctx := context.Background()
	disk := mustOpen(t)
	mem := OpenMemory(Options{})
	t.Cleanup(func() { _ = mem.Close(ctx) })
	large := make([]byte, 300) // over the value threshold: in the value log
	for i := range large {
		large[i] = byte(i)
	}
	writes := func(txn kvTxn) {
		for i := range 3000 {
			k := fmt.Appendf(nil, "v/c/%05d", i)
			require.NoError(t, txn.set(k, fmt.Appendf(large[:0:0], "%s%d", large, i)))
			require.NoError(t, txn.set(fmt.Appendf(nil, "i/sk/%05d", i), nil))
		}
		require.NoError(t, txn.setTTL([]byte("o/l/kept"), []byte("superseded"), time.Hour))
		require.NoError(t, txn.setTTL([]byte("o/l/gone"), []byte("expired"), -time.Hour))
		require.NoError(t, txn.set([]byte("p/pos"), []byte(`{"seq":7}`)))
	}
	for _, e := range []engine{disk.kv, mem.kv} {
		txn := e.begin(true)
		writes(txn)
		require.NoError(t, txn.commit())
		txn = e.begin(true)
		require.NoError(t, txn.del([]byte("v/c/00007")))
		require.NoError(t, txn.commit())
	}

	dir := filepath.Join(t.TempDir(), "built")
	var calls int
	info, err := WriteMemory(ctx, dir, mem, Options{}, BuildOptions{Progress: func(records, bytes, total int64) { calls++ }})
	require.NoError(t, err)
	assert.EqualValues(t, 2*3000-1+2+1, info.Records, "every live key but the expired one")
	assert.Positive(t, calls)
	built, err := Open(ctx, dir, Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = built.Close(ctx) })

	want, got := badgerRecords(t, disk), badgerRecords(t, built)
	assert.Equal(t, schema, got[string(kSchema)].v)
	for _, r := range []map[string]record{want, got} {
		exp := r["o/l/kept"].exp
		assert.InDelta(t, time.Now().Add(time.Hour).Unix(), int64(exp), 5, "expiry kept")
		r["o/l/kept"] = record{r["o/l/kept"].v, 0}
	}
	assert.Equal(t, want, got)
	dw, err := disk.Digest(ctx, time.Unix(0, 0))
	require.NoError(t, err)
	dg, err := built.Digest(ctx, time.Unix(0, 0))
	require.NoError(t, err)
	assert.Equal(t, dw, dg)

	require.NoError(t, built.Update(ctx, func(tx *Tx) error { tx.set([]byte("v/c/new"), []byte("x")); return nil }), "a built store takes transactions")
	assert.Equal(t, "x", badgerRecords(t, built)["v/c/new"].v)
}

func TestWriteMemoryRefuses(t *testing.T) {
	ctx := context.Background()
	mem := OpenMemory(Options{})
	t.Cleanup(func() { _ = mem.Close(ctx) })
	full := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(full, "x"), nil, 0o644))
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	cases := []struct {
		name string
		ctx  context.Context
		dir  string
		src  *Store
	}{
		{"a Badger source", ctx, filepath.Join(t.TempDir(), "d"), mustOpen(t)},
		{"a directory not empty", ctx, full, mem},
		{"a cancelled context", cancelled, filepath.Join(t.TempDir(), "d"), mem},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := WriteMemory(tc.ctx, tc.dir, tc.src, Options{}, BuildOptions{})
			assert.Error(t, err)
		})
	}
}

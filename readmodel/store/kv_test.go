package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// engines are the engines a Store's transactions run on; each must pass
// TestEngineContract, which is what the projector relies on.
func engines(t *testing.T) map[string]engine {
	return map[string]engine{
		"badger": mustOpen(t).kv,
		"memory": newMemEngine(),
	}
}

func mustCommit(t *testing.T, e engine, fn func(txn kvTxn)) {
	t.Helper()
	txn := e.begin(true)
	defer txn.discard()
	fn(txn)
	require.NoError(t, txn.commit())
}

func scanAll(t *testing.T, txn kvTxn, prefix, seek string, values bool) []string {
	t.Helper()
	var out []string
	var s []byte
	if seek != "" {
		s = []byte(seek)
	}
	require.NoError(t, txn.scan([]byte(prefix), s, values, func(k, v []byte) (bool, error) {
		if values {
			out = append(out, string(k)+"="+string(v))
		} else {
			out = append(out, string(k))
		}
		return true, nil
	}))
	return out
}

func TestEngineContract(t *testing.T) {
	for name, e := range engines(t) {
		t.Run(name, func(t *testing.T) {
			mustCommit(t, e, func(txn kvTxn) {
				for _, k := range []string{"a/1", "a/2", "a/3", "b/1", "ab"} {
					require.NoError(t, txn.set([]byte(k), []byte("v"+k)))
				}
				require.NoError(t, txn.setTTL([]byte("a/gone"), []byte("x"), -time.Hour))
			})

			t.Run("get", func(t *testing.T) {
				txn := e.begin(false)
				defer txn.discard()
				v, ok, err := txn.get([]byte("a/2"))
				require.NoError(t, err)
				assert.True(t, ok)
				assert.Equal(t, "va/2", string(v))
				_, ok, err = txn.get([]byte("a/9"))
				require.NoError(t, err)
				assert.False(t, ok, "absent")
				_, ok, err = txn.get([]byte("a/gone"))
				require.NoError(t, err)
				assert.False(t, ok, "expired")
			})

			t.Run("scan", func(t *testing.T) {
				txn := e.begin(false)
				defer txn.discard()
				cases := []struct {
					name, prefix, seek string
					values             bool
					want               []string
				}{
					{name: "prefix in order", prefix: "a/", want: []string{"a/1", "a/2", "a/3"}},
					{name: "from a seek", prefix: "a/", seek: "a/2", want: []string{"a/2", "a/3"}},
					{name: "seek past the prefix", prefix: "a/", seek: "a/4"},
					{name: "values", prefix: "b/", values: true, want: []string{"b/1=vb/1"}},
					{name: "everything", want: []string{"a/1", "a/2", "a/3", "ab", "b/1", "m/schema"}},
				}
				for _, c := range cases {
					t.Run(c.name, func(t *testing.T) {
						got := scanAll(t, txn, c.prefix, c.seek, c.values)
						if c.prefix == "" {
							got = withoutSchema(got)
							c.want = c.want[:len(c.want)-1]
						}
						assert.Equal(t, c.want, got)
					})
				}
				n := 0
				require.NoError(t, txn.scan([]byte("a/"), nil, false, func(_, _ []byte) (bool, error) { n++; return n < 2, nil }))
				assert.Equal(t, 2, n, "false stops the walk")
				boom := fmt.Errorf("boom")
				assert.ErrorIs(t, txn.scan([]byte("a/"), nil, false, func(_, _ []byte) (bool, error) { return true, boom }), boom)
			})

			t.Run("a transaction sees its own writes, others only once committed", func(t *testing.T) {
				w := e.begin(true)
				require.NoError(t, w.set([]byte("a/4"), []byte("new")))
				require.NoError(t, w.del([]byte("a/1")))
				assert.Equal(t, []string{"a/2", "a/3", "a/4"}, scanAll(t, w, "a/", "", false))

				r := e.begin(false)
				assert.Equal(t, []string{"a/1", "a/2", "a/3"}, scanAll(t, r, "a/", "", false), "not committed yet")
				require.NoError(t, w.commit())
				w.discard()
				assert.Equal(t, []string{"a/1", "a/2", "a/3"}, scanAll(t, r, "a/", "", false), "a reader keeps what it began with")
				r.discard()

				r = e.begin(false)
				defer r.discard()
				assert.Equal(t, []string{"a/2", "a/3", "a/4"}, scanAll(t, r, "a/", "", false))
			})

			t.Run("discard drops the writes", func(t *testing.T) {
				w := e.begin(true)
				require.NoError(t, w.set([]byte("a/5"), []byte("never")))
				w.discard()
				r := e.begin(false)
				defer r.discard()
				_, ok, err := r.get([]byte("a/5"))
				require.NoError(t, err)
				assert.False(t, ok)
			})

			t.Run("a read-only transaction refuses writes", func(t *testing.T) {
				r := e.begin(false)
				defer r.discard()
				assert.Error(t, r.set([]byte("x"), []byte("y")))
			})
		})
	}
}

func withoutSchema(keys []string) []string {
	var out []string
	for _, k := range keys {
		if k != string(kSchema) {
			out = append(out, k)
		}
	}
	return out
}

// TestMemoryStoreMatchesBadger runs the same transactions of the
// projector's side of a store on Badger and in memory and finds the same
// keys and values in both.
func TestMemoryStoreMatchesBadger(t *testing.T) {
	ctx := context.Background()
	disk, mem := mustOpen(t), OpenMemory(Options{})
	t.Cleanup(func() { _ = mem.Close(ctx) })
	for _, s := range []*Store{disk, mem} {
		rewriteViews(t, s, 3)
		require.NoError(t, s.Update(ctx, func(tx *Tx) error {
			tx.SetPosition("MARKETD_STATE", StreamPos{Seq: 12, ID: "m-12"})
			tx.Register("c1")
			tx.Register("c2")
			return nil
		}))
	}
	assert.Equal(t, mustDump(t, disk), mustDump(t, mem))
	for _, s := range []*Store{disk, mem} {
		var ids []string
		require.NoError(t, s.View(ctx, func(tx *Tx) (err error) { ids, err = tx.Collections("", 10); return err }))
		assert.Equal(t, []string{"c1", "c2"}, ids)
	}
}

func mustDump(t *testing.T, s *Store) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, s.Each(context.Background(), func(k, v []byte) error {
		out[string(k)] = string(v)
		return nil
	}))
	require.NotEmpty(t, out)
	return out
}

package store

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/dgraph-io/badger/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel"
)

// TestInputsArePackedWhenLarge: Put stores a large input as an S2 block
// behind packedInput and a small one as its JSON; Get and EachInput read
// both back as written; a damaged block is an Internal error.
func TestInputsArePackedWhenLarge(t *testing.T) {
	ctx := context.Background()
	s := mustOpen(t)
	bucket := make([]string, 100)
	for i := range bucket {
		bucket[i] = fmt.Sprintf("ethereum|0x00cb731e76918a36812a71db38a0b7a618637d3c|%d", i)
	}
	cases := []struct {
		name   string
		v      []string
		packed bool
	}{
		{"a bucket of 100 token keys is packed", bucket, true},
		{"three keys stay JSON", bucket[:3], false},
		{"an empty list stays JSON", []string{}, false},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := fmt.Sprint(i)
			require.NoError(t, s.Update(ctx, func(tx *Tx) error {
				tx.Put(InJob, tc.v, "c", b)
				return nil
			}))
			plain, err := json.Marshal(tc.v)
			require.NoError(t, err)
			raw, ok, err := s.get(inputKey(InJob, []string{"c", b}))
			require.NoError(t, err)
			require.True(t, ok)
			if tc.packed {
				assert.Equal(t, byte(packedInput), raw[0])
				assert.Less(t, len(raw), len(plain)/2)
			} else {
				assert.Equal(t, plain, raw)
			}
			require.NoError(t, s.View(ctx, func(tx *Tx) error {
				got, err := Get[[]string](tx, InJob, "c", b)
				require.NoError(t, err)
				require.NotNil(t, got)
				assert.Equal(t, tc.v, *got)
				return nil
			}))
		})
	}
	t.Run("EachInput reads packed and plain alike", func(t *testing.T) {
		var got []string
		require.NoError(t, s.View(ctx, func(tx *Tx) error {
			return tx.EachInput(InJob, []string{"c"}, func(last string, raw []byte) error {
				var v []string
				require.NoError(t, json.Unmarshal(raw, &v), last)
				got = append(got, fmt.Sprintf("%s:%d", last, len(v)))
				return nil
			})
		}))
		assert.Equal(t, []string{"0:100", "1:3", "2:0"}, got)
	})

	good := packInput([]byte(fmt.Sprintf("%q", bucket)))
	require.Equal(t, byte(packedInput), good[0])
	damaged := map[string][]byte{
		"truncated block": good[:len(good)/2],
		"marker only":     {packedInput},
		"claims 1 TiB":    binary.AppendUvarint([]byte{packedInput}, 1<<40),
	}
	for name, raw := range damaged {
		t.Run(name, func(t *testing.T) {
			require.NoError(t, s.db.Update(func(txn *badger.Txn) error {
				return txn.Set(inputKey(InJob, []string{"bad", name}), raw)
			}))
			err := s.View(ctx, func(tx *Tx) error {
				_, err := Get[[]string](tx, InJob, "bad", name)
				return err
			})
			assert.Equal(t, readmodel.Internal, readmodel.ErrorCode(err))
		})
	}
}

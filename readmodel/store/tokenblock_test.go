package store

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/klauspost/compress/s2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel"
)

// TestTokenBlocks: tokens of one address live in one block per bucket;
// a token found by the read path and by a transaction wherever its
// bucket put it, also after it moved to another bucket (a bucket count
// change) and after its block emptied; deleting removes it from reads.
func TestTokenBlocks(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 11, 22, 21, 0, 0, 0, time.UTC)
	s, err := Open(ctx, t.TempDir(), Options{Now: func() time.Time { return t0 }})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close(ctx) })
	doc := func(id string) readmodel.TokenDoc {
		d := sampleTokenDoc()
		d.TokenID, d.Overlay = id, nil
		return d
	}
	tokenKey := func(id string) string {
		d := doc(id)
		return readmodel.TokenKey(d.Chain, d.ContractAddress, d.TokenID)
	}
	put := func(id string, bucket uint32) {
		require.NoError(t, s.Update(ctx, func(tx *Tx) error {
			tx.PutTokenRecord(tokenKey(id), &TokenRecord{Bucket: bucket, ObservedAt: t0, Doc: doc(id)})
			return nil
		}))
	}
	blocks := func() map[uint32]int {
		out := map[uint32]int{}
		require.NoError(t, s.db.View(func(txn *badger.Txn) error {
			it := txn.NewIterator(badger.IteratorOptions{Prefix: pTokenBlock})
			defer it.Close()
			for it.Rewind(); it.Valid(); it.Next() {
				k := it.Item().Key()
				bucket := uint32(k[len(k)-1]) // buckets below 256 here
				require.NoError(t, it.Item().Value(func(v []byte) error {
					return decodeTokenBlock(v, func(string, string) bool { out[bucket]++; return true })
				}))
			}
			return nil
		}))
		return out
	}
	served := func(id string) (bool, uint32) {
		d := doc(id)
		_, err := s.Token(ctx, d.Chain, d.ContractAddress, d.TokenID)
		if readmodel.ErrorCode(err) == readmodel.NotFound {
			return false, 0
		}
		require.NoError(t, err)
		var bucket uint32
		require.NoError(t, s.View(ctx, func(tx *Tx) error {
			_, b, ok, err := tx.TokenRecordHead(tokenKey(id))
			require.True(t, ok)
			bucket = b
			return err
		}))
		return true, bucket
	}

	for i := range 10 {
		put(strconv.Itoa(i), 0)
	}
	assert.Equal(t, map[uint32]int{0: 10}, blocks(), "ten tokens in one block")

	for _, tc := range []struct {
		name   string
		step   func()
		blocks map[uint32]int
		token  string
		served bool
		bucket uint32
	}{
		{name: "a token moved to another bucket leaves its old block", step: func() { put("3", 1) },
			blocks: map[uint32]int{0: 9, 1: 1}, token: "3", served: true, bucket: 1},
		{name: "a token in a bucket its hash does not name is still found", step: func() { put("4", 7) },
			blocks: map[uint32]int{0: 8, 1: 1, 7: 1}, token: "4", served: true, bucket: 7},
		{name: "a deleted token is gone", step: func() {
			require.NoError(t, s.Update(ctx, func(tx *Tx) error { tx.DeleteTokenRecord(tokenKey("5")); return nil }))
		}, blocks: map[uint32]int{0: 7, 1: 1, 7: 1}, token: "5"},
		{name: "a block emptied by a delete is removed", step: func() {
			require.NoError(t, s.Update(ctx, func(tx *Tx) error { tx.DeleteTokenRecord(tokenKey("4")); return nil }))
		}, blocks: map[uint32]int{0: 7, 1: 1}, token: "4"},
		{name: "the tokens that stayed are served", step: func() {}, blocks: map[uint32]int{0: 7, 1: 1}, token: "9", served: true, bucket: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.step()
			assert.Equal(t, tc.blocks, blocks())
			ok, bucket := served(tc.token)
			assert.Equal(t, tc.served, ok, "served")
			assert.Equal(t, tc.bucket, bucket, "bucket")
		})
	}
}

// TestTokenBlockDamage: a block that does not decode is an error of the
// read (Internal), never a panic or a wrong token.
func TestTokenBlockDamage(t *testing.T) {
	d := sampleTokenDoc()
	recs := map[string]string{d.TokenID: string(EncodeTokenRecord(&TokenRecord{Doc: d}))}
	good := encodeTokenBlock(recs)
	for _, tc := range []struct {
		name  string
		block []byte
	}{
		{name: "empty", block: nil},
		{name: "truncated", block: good[:len(good)/2]},
		{name: "not S2", block: []byte("garbage that is not a block")},
		{name: "count beyond the records", block: encodeRaw([]byte{5, 2, 'a'})},
		{name: "record longer than the block", block: encodeRaw([]byte{1, 2, 'a', 90, 1})},
		{name: "trailing bytes", block: encodeRaw([]byte{0, 1})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := 0
			err := decodeTokenBlock(tc.block, func(string, string) bool { n++; return true })
			assert.ErrorIs(t, err, errCorruptTokenBlock)
		})
	}
	n := 0
	require.NoError(t, decodeTokenBlock(good, func(id, rec string) bool {
		n++
		assert.Equal(t, d.TokenID, id)
		assert.Equal(t, recs[id], rec)
		return true
	}))
	assert.Equal(t, 1, n)
}

func encodeRaw(b []byte) []byte { return s2.Encode(nil, b) }

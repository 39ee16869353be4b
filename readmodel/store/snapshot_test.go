package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/pb"
	"github.com/dgraph-io/ristretto/v2/z"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/render"
)

// dump reads every key of s with a hash of its value, and its expiry.
func dump(t *testing.T, s *Store) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{PrefetchValues: true})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			v, err := it.Item().ValueCopy(nil)
			if err != nil {
				return err
			}
			out[string(it.Item().KeyCopy(nil))] = fmt.Sprintf("%x exp=%d", sha256.Sum256(v), it.Item().ExpiresAt())
		}
		return nil
	}))
	return out
}

// snapshotSource is a store holding views rewritten several times (so
// the value log has garbage), stream positions, a row record, and a
// superseded listing snapshot under its TTL.
func snapshotSource(t *testing.T) *Store {
	t.Helper()
	s := mustOpenSmallLog(t)
	rewriteViews(t, s, 3)
	require.NoError(t, s.Update(context.Background(), func(tx *Tx) error {
		tx.SetPosition("MARKETD_STATE", StreamPos{Seq: 4711, ID: "state-4711"})
		tx.SetPosition("MARKETD_SALES", StreamPos{Seq: 99, ID: "sales-99"})
		putRows(tx, readmodel.SourceOrderBook, "c1", time.Unix(1_800_000_000, 0), []readmodel.ListingRow{{CollectionID: "c1", TokenID: "7", OrderID: "o-1"}})
		tx.setTTL(key(pOldListings, "c1"), []byte("an old snapshot"), time.Hour)
		return nil
	}))
	return s
}

// snapshotOf writes a snapshot of s.
func snapshotOf(t *testing.T, s *Store) []byte {
	t.Helper()
	var b bytes.Buffer
	_, err := s.WriteSnapshot(context.Background(), &b, SnapshotOptions{})
	require.NoError(t, err)
	return b.Bytes()
}

func TestSnapshotRestoresTheSameStore(t *testing.T) {
	ctx := context.Background()
	src := snapshotSource(t)
	var snap bytes.Buffer
	wrote, err := src.WriteSnapshot(ctx, &snap, SnapshotOptions{})
	require.NoError(t, err)
	assert.Equal(t, StreamPos{Seq: 4711, ID: "state-4711"}, wrote.Positions["MARKETD_STATE"])
	assert.Equal(t, StreamPos{Seq: 99, ID: "sales-99"}, wrote.Positions["MARKETD_SALES"])

	dir := filepath.Join(t.TempDir(), "restored")
	got, err := RestoreSnapshot(ctx, dir, bytes.NewReader(snap.Bytes()), Options{})
	require.NoError(t, err)
	assert.Equal(t, wrote.Records, got.Records)
	assert.Equal(t, wrote.Positions, got.Positions)

	dst, err := Open(ctx, dir, Options{})
	require.NoError(t, err)
	defer dst.Close(ctx)
	want := dump(t, src)
	delete(want, string(key(pOldListings, "c1"))) // a superseded snapshot serves this node's cursors only
	assert.Equal(t, want, dump(t, dst))
	srcDigest, err := src.Digest(ctx, time.Unix(1_800_000_000, 0))
	require.NoError(t, err)
	dstDigest, err := dst.Digest(ctx, time.Unix(1_800_000_000, 0))
	require.NoError(t, err)
	assert.Equal(t, srcDigest, dstDigest)
	pos, err := dst.Positions(ctx, "MARKETD_STATE", "MARKETD_SALES")
	require.NoError(t, err)
	assert.Equal(t, []StreamPos{{Seq: 4711, ID: "state-4711"}, {Seq: 99, ID: "sales-99"}}, pos)

	// The restored store takes writes after the restored ones (Badger's
	// timestamps go on from the snapshot's), and reads them back.
	require.NoError(t, dst.Update(ctx, func(tx *Tx) error {
		tx.PutCollection(render.CollectionView{ID: "c1", Version: 9, Detail: []byte(`{"new":true}`)})
		return nil
	}))
	v, err := dst.Collection(ctx, "c1")
	require.NoError(t, err)
	assert.JSONEq(t, `{"new":true}`, string(v.Detail))
}

// TestRestoreRefusesBadSnapshots: a damaged, truncated or foreign
// snapshot is an error, never a panic or a store that is half there and
// said whole.
func TestRestoreRefusesBadSnapshots(t *testing.T) {
	ctx := context.Background()
	good := snapshotOf(t, snapshotSource(t))
	headLen := len(snapshotMagic) + 1 + binary.PutUvarint(make([]byte, binary.MaxVarintLen64), uint64(len(schema))) + len(schema)

	otherSchema := append([]byte(snapshotMagic), snapshotFormat)
	otherSchema = binary.AppendUvarint(otherSchema, 3)
	otherSchema = append(otherSchema, "old"...)
	otherSchema = append(otherSchema, good[headLen:]...)

	flip := func(at int) []byte {
		b := bytes.Clone(good)
		b[at] ^= 0x40
		return b
	}
	cases := []struct {
		name       string
		snap       []byte
		wantSchema bool
	}{
		{"empty", nil, false},
		{"not a snapshot", []byte("{\"hello\":1}"), false},
		{"another schema", otherSchema, true},
		{"cut in the first frame", good[:headLen+40], false},
		{"cut before the trailer", good[:len(good)-5], false},
		{"no checksum", good[:len(good)-4], false},
		{"a garbled frame", flip(headLen + 30), false},
		{"a garbled trailer", flip(len(good) - 1), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := RestoreSnapshot(ctx, filepath.Join(t.TempDir(), "v"), bytes.NewReader(tc.snap), Options{})
			require.Error(t, err)
			assert.Equal(t, tc.wantSchema, errors.Is(err, ErrSnapshotSchema), "%v", err)
			var re *readmodel.Error
			assert.True(t, errors.As(err, &re), "%v is the application's error type", err)
		})
	}
}

func TestRestoreNeedsAnEmptyDirectory(t *testing.T) {
	ctx := context.Background()
	snap := snapshotOf(t, snapshotSource(t))
	dir := t.TempDir()
	s, err := Open(ctx, dir, Options{})
	require.NoError(t, err)
	require.NoError(t, s.Close(ctx))
	_, err = RestoreSnapshot(ctx, dir, bytes.NewReader(snap), Options{})
	assert.ErrorContains(t, err, "not empty")
}

// TestSnapshotWriterErrorIsReturned: a failing writer (the bus gone
// mid-upload) ends the snapshot with that error.
func TestSnapshotWriterErrorIsReturned(t *testing.T) {
	boom := errors.New("boom")
	_, err := snapshotSource(t).WriteSnapshot(context.Background(), failAfter{n: 100, err: boom}, SnapshotOptions{})
	assert.ErrorIs(t, err, boom)
}

type failAfter struct {
	n   int
	err error
}

func (f failAfter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		return 0, f.err
	}
	return len(p), nil
}

var _ io.Writer = failAfter{}

// TestAppendKVMatchesProto pins appendKV to the bytes badger.KVToBuffer
// writes for the same record: the StreamWriter reads them back as a
// pb.KV.
func TestAppendKVMatchesProto(t *testing.T) {
	long := func(n int) []byte { return bytes.Repeat([]byte{0xA5}, n) }
	tests := []struct {
		name string
		k, v []byte
		exp  uint64
	}{
		{"plain", []byte("v/c/x"), []byte("value"), 0},
		{"expiring", []byte("v/l/old"), []byte("rows"), 1_780_000_000},
		{"empty value", []byte("i/sk/12345678"), nil, 0},
		{"two-byte lengths", long(200), long(300), 0},
		{"three-byte value length", []byte("i/tk/a"), long(70_000), 1<<40 + 7},
		{"largest expiry", []byte("k"), []byte("v"), ^uint64(0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := z.NewBuffer(1<<10, "test")
			defer func() { _ = got.Release() }()
			want := z.NewBuffer(1<<10, "test")
			defer func() { _ = want.Release() }()
			appendKV(got, tt.k, tt.v, tt.exp)
			appendKV(got, tt.k, tt.v, tt.exp) // records follow each other
			kv := &pb.KV{Key: tt.k, Value: tt.v, Version: 1, ExpiresAt: tt.exp}
			badger.KVToBuffer(kv, want)
			badger.KVToBuffer(kv, want)
			assert.Equal(t, want.Bytes(), got.Bytes())
			n := 0
			require.NoError(t, got.SliceIterate(func(s []byte) error {
				var back pb.KV
				require.NoError(t, proto.Unmarshal(s, &back))
				assert.Equal(t, tt.k, back.Key)
				assert.Equal(t, len(tt.v), len(back.Value))
				assert.True(t, bytes.Equal(tt.v, back.Value))
				assert.Equal(t, uint64(1), back.Version)
				assert.Equal(t, tt.exp, back.ExpiresAt)
				n++
				return nil
			}))
			assert.Equal(t, 2, n)
		})
	}
}

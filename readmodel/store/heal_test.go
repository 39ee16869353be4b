package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4/y"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/internal/damage"
	"github.com/marketd/marketd/readmodel"
)

// TestDamagedFilesAreSaidNotFatal damages a closed store each way of issue
// 28's storage rows and opens it again: the store says it is damaged
// (store.Damaged, with a reason) at Open, in Verify or on the first read,
// and never panics or answers what it did not store.
func TestDamagedFilesAreSaidNotFatal(t *testing.T) {
	ctx := context.Background()
	streams := make([]string, 200)
	for i := range streams {
		streams[i] = "S" + strconv.Itoa(i)
	}
	for _, c := range damage.Cases {
		t.Run(c.Name, func(t *testing.T) {
			dir := t.TempDir()
			s, err := Open(ctx, dir, Options{MemTableSize: 8 << 20})
			require.NoError(t, err)
			require.NoError(t, s.Update(ctx, func(tx *Tx) error {
				for i, st := range streams { // IDs past the value threshold: values in the value log
					tx.SetPosition(st, StreamPos{Seq: uint64(i + 1), ID: longID(st)})
				}
				return nil
			}))
			require.NoError(t, s.Close(ctx))
			require.NoError(t, c.Do(dir))

			var reason string
			assert.NotPanics(t, func() {
				s, err := Open(ctx, dir, Options{MemTableSize: 8 << 20})
				if err == nil {
					defer s.Close(ctx)
					err = s.Verify()
				}
				if err == nil {
					var pos []StreamPos
					pos, err = s.Positions(ctx, streams...)
					if err == nil {
						for i, p := range pos {
							require.Equal(t, StreamPos{Seq: uint64(i + 1), ID: longID(streams[i])}, p, "a read that succeeds answers what was stored")
						}
					}
				}
				require.Error(t, err, "the damage is noticed at open or on the first read")
				var ok bool
				reason, ok = Damaged(err)
				assert.True(t, ok, "said as damage: %v", err)
				t.Logf("%s: %v", reason, err)
			})
			assert.Contains(t, []string{DamageOpen, DamageRead, DamageDecode, DamagePanic, DamageChecksum}, reason)
		})
	}
}

// longID is an id that puts its position's value past valueThreshold, in
// the value log.
func longID(s string) string { return strings.Repeat(s, valueThreshold/len(s)+1) }

// TestOrphanTableIsNotDamage: a table file the MANIFEST does not name (a
// flush cut short by a kill: created at its size, still zeros) is not
// damage; Badger deletes it at Open, and the store opens with what it had.
func TestOrphanTableIsNotDamage(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(ctx, dir, Options{MemTableSize: 8 << 20})
	require.NoError(t, err)
	want := StreamPos{Seq: 7, ID: strings.Repeat("x", 100)}
	require.NoError(t, s.Update(ctx, func(tx *Tx) error { tx.SetPosition("S", want); return nil }))
	require.NoError(t, s.Close(ctx))
	orphan := filepath.Join(dir, "999999.sst")
	require.NoError(t, os.WriteFile(orphan, make([]byte, 142684), 0o644))

	s, err = Open(ctx, dir, Options{MemTableSize: 8 << 20})
	require.NoError(t, err, "an orphan table is not damage")
	defer s.Close(ctx)
	require.NoError(t, s.Verify())
	pos, err := s.Positions(ctx, "S")
	require.NoError(t, err)
	assert.Equal(t, []StreamPos{want}, pos)
	assert.NoFileExists(t, orphan, "Badger deleted it at Open")
}

// TestDamagedSaysWhatIsDamage: every stored record format's decode failure
// is damage (a node rebuilds its views on it) however its callers wrapped
// it, and errors that say nothing of the files are not.
func TestDamagedSaysWhatIsDamage(t *testing.T) {
	apply := func(err error) error { return readmodel.Wrap(readmodel.Internal, err, "apply") }
	tests := []struct {
		name string
		err  error
		want string // "" not damage
	}{
		{"token record", errCorruptTokenRecord, DamageDecode},
		{"token block, under the projector's wrap", apply(errCorruptTokenBlock), DamageDecode},
		{"listing rows, under the projector's wrap", apply(errCorruptRows), DamageDecode},
		{"listing rows, under fmt's wrap", fmt.Errorf("settle views: %w", apply(errCorruptRows)), DamageDecode},
		{"sale record, under the projector's wrap", apply(errCorruptSale), DamageDecode},
		{"event block, under the projector's wrap", apply(errCorruptBlock()), DamageDecode},
		{"a checksum mismatch", apply(y.ErrChecksumMismatch), DamageRead},
		{"a cancelled context", apply(context.Canceled), ""},
		{"a missing view", readmodel.Errorf(readmodel.NotFound, "collection not found"), ""},
		{"an internal error that is not about the bytes", apply(errors.New("disk full")), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reason, ok := Damaged(tt.err)
			assert.Equal(t, tt.want != "", ok, "%v", tt.err)
			assert.Equal(t, tt.want, reason)
		})
	}
}

package store

import (
	"context"
	"math/rand"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/internal/jsontest"
	"github.com/marketd/marketd/readmodel"
)

// TestRowsRecordRoundTrip: listing rows, random (any string, times with
// nanoseconds, rows of other collections than the first) or as a source
// sends them, decode to what was encoded, through a transaction too.
func TestRowsRecordRoundTrip(t *testing.T) {
	r := rand.New(rand.NewSource(20261125))
	at := time.Date(2026, 11, 25, 10, 0, 0, 123, time.UTC)
	overlay := *sampleTokenDoc().Overlay
	cases := map[string]func() (time.Time, []readmodel.ListingRow){
		"none":    func() (time.Time, []readmodel.ListingRow) { return at, nil },
		"no time": func() (time.Time, []readmodel.ListingRow) { return time.Time{}, []readmodel.ListingRow{overlay} },
		"sample": func() (time.Time, []readmodel.ListingRow) {
			second := overlay
			second.TokenID, second.OrderID, second.ExpiresAt = "86", "0xfeed", nil
			return at, []readmodel.ListingRow{overlay, second}
		},
		"random": func() (time.Time, []readmodel.ListingRow) {
			rows := make([]readmodel.ListingRow, r.Intn(5))
			for i := range rows {
				jsontest.Fill(r, reflect.ValueOf(&rows[i]).Elem())
			}
			var when time.Time
			jsontest.Fill(r, reflect.ValueOf(&when).Elem())
			if len(rows) == 0 {
				rows = nil
			}
			return when, rows
		},
	}
	for name, gen := range cases {
		t.Run(name, func(t *testing.T) {
			for i := 0; i < 300; i++ {
				when, rows := gen()
				b := encodeRows(when, rows)
				gotAt, got, err := decodeRows(b)
				require.NoError(t, err)
				assert.True(t, when.Equal(gotAt), "observation time")
				require.Equal(t, rows, got)
				for n := 0; n < len(b); n++ {
					_, _, err := decodeRows(b[:n])
					require.Error(t, err, "truncated to %d of %d bytes", n, len(b))
				}
				_, _, err = decodeRows(append(append([]byte(nil), b...), 0))
				require.Error(t, err, "a byte too many")
			}
		})
	}

	s := mustOpen(t)
	ctx := context.Background()
	big := make([]readmodel.ListingRow, 40) // packed (over packMin)
	for i := range big {
		big[i] = overlay
		big[i].TokenID = strconv.Itoa(1000 + i)
	}
	require.NoError(t, s.Update(ctx, func(tx *Tx) error {
		var c1, c2 CollectionState
		c1[SecBook] = EncodeRows(at, big)
		c2[SecBook] = EncodeRows(at, nil)
		changed := [NumStateSections]bool{SecBook: true}
		tx.PutCollectionState("c1", &c1, &changed)
		tx.PutCollectionState("c2", &c2, &changed)
		return nil
	}))
	require.NoError(t, s.View(ctx, func(tx *Tx) error {
		st, err := tx.CollectionState("c1", true)
		require.NoError(t, err)
		gotAt, got, err := DecodeRows(st[SecBook])
		require.NoError(t, err)
		assert.True(t, at.Equal(gotAt))
		assert.Equal(t, big, got)
		assert.Nil(t, st[SecMirror], "no mirror rows stored")
		st, err = tx.CollectionState("c2", true)
		require.NoError(t, err)
		require.NotNil(t, st[SecBook], "stored, empty")
		_, got, err = DecodeRows(st[SecBook])
		require.NoError(t, err)
		assert.Empty(t, got)
		return nil
	}))
}

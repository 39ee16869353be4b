package projector

import (
	"encoding/json"
	"math/rand"
	"reflect"
	"strconv"
	"testing"

	gojson "github.com/goccy/go-json"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/internal/jsontest"
	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/store"
)

// TestStoredInputsDecodeAsStd: every record the projector stores is
// written and read by goccy/go-json (store's Put and jsonGet, the applied
// positions); on random values of each type it writes the bytes
// encoding/json writes, and the two read them to the same values. (Token
// records, listing rows and feed states are binary:
// TestTokenRecordRoundTrip, TestRowsRecordRoundTrip, TestFeedStateRecord.)
func TestStoredInputsDecodeAsStd(t *testing.T) {
	types := []any{statusInput{}, lastGood{}, job{},
		readmodel.Analytics{}, readmodel.CollectionDoc{}, readmodel.CollectionStats{}, readmodel.USDRates{}, store.StreamPos{}}
	r := rand.New(rand.NewSource(20261123))
	for _, typ := range types {
		rt := reflect.TypeOf(typ)
		t.Run(rt.String(), func(t *testing.T) {
			for i := 0; i < 500; i++ {
				v := reflect.New(rt)
				jsontest.Fill(r, v.Elem())
				b, err := json.Marshal(v.Interface())
				require.NoError(t, err)
				gb, err := gojson.Marshal(v.Interface())
				require.NoError(t, err)
				require.Equal(t, string(b), string(gb))
				want, got := reflect.New(rt), reflect.New(rt)
				require.NoError(t, json.Unmarshal(b, want.Interface()))
				require.NoError(t, gojson.Unmarshal(b, got.Interface()), "%s", b)
				require.Equal(t, want.Interface(), got.Interface(), "%s", b)
			}
		})
	}
}

// TestFeedStateKeepsUndecodedRows: a feed state read for a sale (its
// listing set left undecoded) and written back with the sale's orderId
// holds what a full decode would have written: the same set, its bytes
// as they were read.
func TestFeedStateKeepsUndecodedRows(t *testing.T) {
	r := rand.New(rand.NewSource(20261125))
	for i := 0; i < 500; i++ {
		var full feedState
		jsontest.Fill(r, reflect.ValueOf(&full).Elem())
		if len(full.Rows) == 0 {
			full.Rows = nil
		}
		stored := (&feedMemo{st: full, rowsOK: true}).encode()

		m := &feedMemo{st: feedState{Sold: stored.Sold}, raw: stored.Set, rowsOK: len(stored.Set) == 0}
		m.st.Sold = append(m.st.Sold, store.OrderHash("sold-"+strconv.Itoa(i)))
		got := m.encode()
		require.Equal(t, stored.Set, got.Set, "the set is written back as read")
		require.Equal(t, append(append([]uint64(nil), full.Sold...), store.OrderHash("sold-"+strconv.Itoa(i))), got.Sold)

		require.NoError(t, m.listingSet())
		require.Equal(t, full.Rows, m.st.Rows)
	}
}

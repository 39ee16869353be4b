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
// positions, the feed state); on random values of each type it writes the
// bytes encoding/json writes, and the two read them to the same values.
// (Token records and listing rows are binary: TestTokenRecordRoundTrip,
// TestRowsRecordRoundTrip.)
func TestStoredInputsDecodeAsStd(t *testing.T) {
	types := []any{statusInput{}, lastGood{}, job{}, feedState{},
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
		var st feedState
		jsontest.Fill(r, reflect.ValueOf(&st).Elem())
		b, err := gojson.Marshal(&st)
		require.NoError(t, err)

		var sf storedFeed
		require.NoError(t, gojson.Unmarshal(b, &sf))
		m := &feedMemo{st: feedState{Sold: sf.Sold}, raw: sf.Rows, rowsOK: len(sf.Rows) == 0}
		m.st.Sold = append(m.st.Sold, "sold-"+strconv.Itoa(i))
		got, err := m.encode()
		require.NoError(t, err)

		var full feedState // what a full decode holds
		require.NoError(t, json.Unmarshal(b, &full))
		want := full
		want.Sold = append(append([]string(nil), full.Sold...), "sold-"+strconv.Itoa(i))
		var back feedState
		require.NoError(t, json.Unmarshal(got, &back), "%s", got)
		require.Equal(t, want, back)
		if len(sf.Rows) > 0 {
			require.Contains(t, string(got), `{"rows":`+string(sf.Rows)+`,"sold":`, "the set is written back as read")
		}

		require.NoError(t, m.listingSet())
		require.Equal(t, full.Rows, m.st.Rows)
	}
}

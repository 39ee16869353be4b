package projector

import (
	"encoding/json"
	"math/rand"
	"reflect"
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
// records, listing rows and the feed's set are binary:
// TestTokenRecordRoundTrip, TestRowsRecordRoundTrip, TestStateRecord.)
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

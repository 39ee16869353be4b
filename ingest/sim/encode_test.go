package sim

import (
	"bytes"
	"encoding/json"
	"math/rand"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/ingest/source"
	"github.com/marketd/marketd/internal/jsontest"
	"github.com/marketd/marketd/readmodel/normalize"
)

// TestWriteJSONMatchesStd: writeJSON's library writes exactly the bytes
// encoding/json writes for every answer the simulator serves, on random
// values (every field set or absent, strings with escapes, HTML
// characters and invalid UTF-8, floats across the exponent range).
func TestWriteJSONMatchesStd(t *testing.T) {
	r := rand.New(rand.NewSource(20261123))
	answers := []any{
		source.Page[normalize.RawCollection]{},
		source.Page[source.Group[normalize.RawListing]]{},
		source.Page[source.Group[normalize.RawToken]]{},
		source.Page[normalize.RawStats]{},
		source.Page[normalize.RawAnalytics]{},
		source.Page[normalize.RawSale]{},
		map[string]float64{},
		map[string]string{},
	}
	for _, a := range answers {
		rt := reflect.TypeOf(a)
		t.Run(rt.String(), func(t *testing.T) {
			for i := 0; i < 1000; i++ {
				v := reflect.New(rt)
				jsontest.Fill(r, v.Elem())
				want, err := json.Marshal(v.Interface())
				require.NoError(t, err)
				rec := httptest.NewRecorder()
				writeJSON(rec, 200, v.Interface())
				require.True(t, bytes.Equal(want, rec.Body.Bytes()), "answer %d:\nencoding/json %s\nwriteJSON     %s", i, want, rec.Body.Bytes())
			}
		})
	}
}

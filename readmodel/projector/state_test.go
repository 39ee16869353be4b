package projector

import (
	"encoding/json"
	"math/rand"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/internal/jsontest"
	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/store"
)

// randomState is a collection state with every section filled at random;
// its feed set takes rows of both sources and rows of its own.
func randomState(r *rand.Rand) *collState {
	s := &collState{cid: "c", listingsRead: true}
	var doc readmodel.CollectionDoc
	var stats readmodel.CollectionStats
	var an readmodel.Analytics
	for _, v := range []any{&doc, &stats, &an} {
		jsontest.Fill(r, reflect.ValueOf(v).Elem())
	}
	s.setDoc(&doc)
	s.setStats(&stats)
	s.setAnalytics(&an)
	s.setLastGood(&lastGood{Raw: "12", At: time.UnixMilli(r.Int63n(1 << 40)).UTC()})
	s.setHistory([]byte{1, 2, 3})
	s.setTokenAddrs([]string{"ethereum|0xabc"})
	s.have[store.SecFeedSet] = true // a fresh state: nothing stored to decode
	var rows [2][]readmodel.ListingRow
	for i := range rows {
		jsontest.Fill(r, reflect.ValueOf(&rows[i]).Elem())
		s.rows[i] = &rowsInput{ObservedAt: time.UnixMilli(r.Int63n(1 << 40)).UTC(), Rows: rows[i]}
		s.touch(rowsSections[i])
	}
	var own []readmodel.ListingRow
	jsontest.Fill(r, reflect.ValueOf(&own).Elem())
	set := append(append(append([]readmodel.ListingRow(nil), rows[1]...), own...), rows[0]...)
	if len(set) == 0 {
		set = nil
	}
	s.setSet(set)
	s.setSold([]uint64{store.OrderHash("a"), store.OrderHash("b")})
	return s
}

// viaJSON is v as JSON gives it back (the random strings are not all
// UTF-8).
func viaJSON[T any](t *testing.T, v *T) *T {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	out := new(T)
	require.NoError(t, json.Unmarshal(b, out))
	return out
}

// reload is s as a later transaction reads it back from enc.
func reload(t *testing.T, enc store.CollectionState) *collState {
	t.Helper()
	return &collState{cid: "c", stored: enc, listingsRead: true}
}

// TestStateRecord: a collection state comes back section by section as
// it was written, its feed set whole though it is stored as references
// to the sources' rows; a state read for a sale (only the sold orderIds
// decoded) is written back with every other section as it was read.
func TestStateRecord(t *testing.T) {
	r := rand.New(rand.NewSource(20261128))
	for i := 0; i < 300; i++ {
		s := randomState(r)
		enc, err := s.encode()
		require.NoError(t, err)

		got := reload(t, enc)
		doc, err := got.Doc()
		require.NoError(t, err)
		assert.Equal(t, viaJSON(t, s.doc), doc)
		stats, err := got.Stats()
		require.NoError(t, err)
		assert.Equal(t, viaJSON(t, s.stats), stats)
		an, err := got.Analytics()
		require.NoError(t, err)
		assert.Equal(t, viaJSON(t, s.analytics), an)
		lg, err := got.LastGood()
		require.NoError(t, err)
		assert.Equal(t, s.lastGood, lg)
		assert.Equal(t, s.history, got.History())
		addrs, err := got.TokenAddrs()
		require.NoError(t, err)
		assert.Equal(t, s.tokenAddrs, addrs)
		for _, src := range []readmodel.Source{readmodel.SourceOrderBook, readmodel.SourceIndexerMirror} {
			in, err := got.Rows(src)
			require.NoError(t, err)
			want := s.rows[listingSource(src)]
			if len(want.Rows) == 0 {
				want = &rowsInput{ObservedAt: want.ObservedAt}
			}
			assert.Equal(t, want, in, "%s rows", src)
		}
		set, err := got.Set()
		require.NoError(t, err)
		assert.Equal(t, s.set, set, "the feed set")

		// A sale: only the sold hashes change.
		sale := reload(t, enc)
		_, sold, err := sale.Feed()
		require.NoError(t, err)
		sale.setSold(append(sold, store.OrderHash("c")))
		enc2, err := sale.encode()
		require.NoError(t, err)
		for sec := range enc {
			if store.StateSection(sec) == store.SecFeedSold {
				continue
			}
			assert.Equal(t, enc[sec], enc2[sec], "section %d is written back as read", sec)
		}
		_, sold2, err := reload(t, enc2).Feed()
		require.NoError(t, err)
		assert.Equal(t, append(append([]uint64(nil), s.sold...), store.OrderHash("c")), sold2)

		// New order-book rows: the set still decodes to what it was,
		// though the rows it referred to are gone.
		moved := reload(t, enc)
		require.NoError(t, moved.setRows(readmodel.SourceOrderBook, &rowsInput{ObservedAt: time.Unix(1, 0).UTC()}))
		enc3, err := moved.encode()
		require.NoError(t, err)
		set3, err := reload(t, enc3).Set()
		require.NoError(t, err)
		assert.Equal(t, s.set, set3, "the feed set after its rows changed")
	}
}

// TestFeedSetKeepsRowsOnce: a feed set of the sources' own rows takes a
// few bytes a row, not a row's.
func TestFeedSetKeepsRowsOnce(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	book := make([]readmodel.ListingRow, 100)
	for i := range book {
		jsontest.Fill(r, reflect.ValueOf(&book[i]).Elem())
	}
	whole := store.EncodeRows(time.Time{}, book)
	refs := store.EncodeFeedSet(book, book, nil)
	assert.Less(t, len(refs), len(whole)/10, "%d bytes of references against %d of rows", len(refs), len(whole))
	got, err := store.DecodeFeedSet(refs, book, nil)
	require.NoError(t, err)
	assert.Equal(t, book, got)
}

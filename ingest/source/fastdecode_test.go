package source_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/ingest/sim"
	"github.com/marketd/marketd/ingest/source"
	"github.com/marketd/marketd/readmodel/normalize"
)

// fastMatchesStd checks, for each page shape ingest decodes, that whatever
// the fast decoder accepts encoding/json accepts too, as the same value.
func fastMatchesStd(t *testing.T, body []byte) (accepted int) {
	t.Helper()
	check := func(name string, fast, std any) {
		if !source.FastDecode(body, fast) {
			return
		}
		accepted++
		require.NoError(t, json.Unmarshal(body, std), "%s: the fast decoder accepted what encoding/json rejects: %q", name, body)
		assert.Equal(t, std, fast, "%s: %q", name, body)
	}
	check("listings", new(source.Page[source.Group[normalize.RawListing]]), new(source.Page[source.Group[normalize.RawListing]]))
	check("tokens", new(source.Page[source.Group[normalize.RawToken]]), new(source.Page[source.Group[normalize.RawToken]]))
	check("collections", new(source.Page[normalize.RawCollection]), new(source.Page[normalize.RawCollection]))
	check("stats", new(source.Page[normalize.RawStats]), new(source.Page[normalize.RawStats]))
	check("analytics", new(source.Page[normalize.RawAnalytics]), new(source.Page[normalize.RawAnalytics]))
	check("sales", new(source.Page[normalize.RawSale]), new(source.Page[normalize.RawSale]))
	return accepted
}

// simPages returns one big page of every endpoint of a simulator with
// every kind of upstream edge case in it.
func simPages(t testing.TB) [][]byte {
	s := sim.New(sim.Options{Seed: 7, Collections: 40, TokensPerCollection: 30, Anchor: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)})
	srv := httptest.NewServer(s.Handler())
	defer func() {
		_ = s.Close(context.Background())
		srv.Close()
	}()
	var out [][]byte
	for _, p := range []string{"/order-book/listings", "/indexer-mirror/listings", "/indexer-mirror/tokens", "/collection-index/collections", "/indexer-stats/stats", "/analytics/analytics", "/sales/sales"} {
		resp, err := http.Get(srv.URL + p + "?limit=5000")
		require.NoError(t, err)
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", p, b)
		out = append(out, b)
	}
	return out
}

// TestFastDecodeMatchesStd: the simulator's pages, which carry every
// upstream quirk it knows (mixed-case addresses, numeric and string
// prices, bad rows), decode the same with both decoders, and the fast one
// accepts every page of the right shape without a bad row.
func TestFastDecodeMatchesStd(t *testing.T) {
	for _, body := range simPages(t) {
		require.Positive(t, fastMatchesStd(t, body), "no shape accepted %.200s", body)
	}
}

// FuzzFastDecodeMatchesStd: on any body the fast decoder never panics and
// accepts only what encoding/json accepts, as the same value.
func FuzzFastDecodeMatchesStd(f *testing.F) {
	for _, b := range simPages(f) {
		if len(b) > 4096 { // a prefix of each keeps the corpus small
			b = append(bytes.Clone(b[:4096]), "]}"...)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"items":[{"collectionId":"c","rows":[{"price":1e400}]}]}`))
	f.Add([]byte(`{"items":[{"chain":"ethereum","price":"0x10","tokenId":"\ud800"}],"nextCursor":"1"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		fastMatchesStd(t, body)
	})
}

// TestDecodedPagesOwnTheirBytes: what the page decoders return keeps no
// reference into the body: a body overwritten after decoding leaves the
// decoded page as it was. Lazy groups are the exception, by design: their
// raw rows point into the body (TestLazyGroupsAliasThePlainBody), which
// walk keeps until the page is handled (TestWalkKeepsTheBodyUntilHandled).
func TestDecodedPagesOwnTheirBytes(t *testing.T) {
	shapes := []struct {
		name   string
		decode func(body []byte) (any, error)
	}{
		{"listings", func(b []byte) (any, error) { return source.DecodeGrouped[normalize.RawListing](b) }},
		{"tokens", func(b []byte) (any, error) { return source.DecodeGrouped[normalize.RawToken](b) }},
		{"collections", func(b []byte) (any, error) { return decodeFlat[normalize.RawCollection](b) }},
		{"stats", func(b []byte) (any, error) { return decodeFlat[normalize.RawStats](b) }},
		{"analytics", func(b []byte) (any, error) { return decodeFlat[normalize.RawAnalytics](b) }},
		{"sales", func(b []byte) (any, error) { return decodeFlat[normalize.RawSale](b) }},
	}
	pages := simPages(t)
	for _, s := range shapes {
		t.Run(s.name, func(t *testing.T) {
			decoded := 0
			for _, body := range pages {
				want, err := s.decode(bytes.Clone(body))
				if err != nil {
					continue // another endpoint's shape
				}
				buf := bytes.Clone(body)
				got, err := s.decode(buf)
				require.NoError(t, err)
				for i := range buf {
					buf[i] = 'x'
				}
				assert.Equal(t, want, got)
				decoded++
			}
			assert.Positive(t, decoded, "no page decoded as %s", s.name)
		})
	}
}

// decodeFlat is DecodeFlat with its results in one value.
func decodeFlat[R any](body []byte) (any, error) {
	p, rejects, err := source.DecodeFlat[R](body)
	return struct {
		Page    *source.Page[R]
		Rejects []error
	}{p, rejects}, err
}

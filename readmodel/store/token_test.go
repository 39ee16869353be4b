package store

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/render"
)

// evmToken is an EVM token record with two native rows in its
// collection's order book (the cheaper one expiring first) and an overlay
// that outlives both.
func evmToken(t0 time.Time) (string, *TokenRecord, []readmodel.ListingRow) {
	d := sampleTokenDoc()
	exp1, exp2, exp3 := t0.Add(time.Minute), t0.Add(2*time.Minute), t0.Add(3*time.Minute)
	d.Overlay.ExpiresAt = &exp3
	n1 := *d.Overlay
	n1.Marketplace, n1.PriceRaw, n1.ExpiresAt, n1.OrderID = readmodel.MarketplaceNative, "1000000000000000000", &exp1, "a"
	n2 := n1
	n2.PriceRaw, n2.ExpiresAt, n2.OrderID = "2000000000000000000", &exp2, "b"
	k := readmodel.TokenKey(d.Chain, d.ContractAddress, d.TokenID)
	return k, &TokenRecord{Bucket: 1, Version: 7, ObservedAt: t0, Doc: d}, []readmodel.ListingRow{n2, n1}
}

// putEVMToken writes token k's record and its collection's order book,
// observed at the record's time.
func putEVMToken(tx *Tx, k string, rec *TokenRecord, book []readmodel.ListingRow) {
	tx.PutTokenRecord(k, rec)
	putRows(tx, readmodel.SourceOrderBook, rec.Doc.CollectionID, rec.ObservedAt, book)
}

// TestTokenRenderedOnRead: a token's view is rendered from its record as
// of the store's clock: the cheapest native row still live, then the
// next, then the overlay, then none, each with a new version; a record
// written again is served at once (the cached view is dropped), and a
// deleted one is NotFound.
func TestTokenRenderedOnRead(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 11, 22, 21, 0, 0, 0, time.UTC)
	var clock atomic.Int64
	clock.Store(t0.UnixNano())
	s, err := Open(ctx, t.TempDir(), Options{Now: func() time.Time { return time.Unix(0, clock.Load()).UTC() }})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close(ctx) })
	k, rec, book := evmToken(t0)
	require.NoError(t, s.Update(ctx, func(tx *Tx) error { putEVMToken(tx, k, rec, book); return nil }))
	d := &rec.Doc
	read := func() render.TokenView {
		v, err := s.Token(ctx, d.Chain, d.ContractAddress, d.TokenID)
		require.NoError(t, err)
		return v
	}
	want := func(at time.Time, native *readmodel.ListingRow) []byte {
		v := render.TokenJSON(render.TokenInputs{Doc: d, Native: native, ObservedAt: t0, LiveAt: at})
		return filledTimed(render.TimedBody{Head: render.TemplateUSD(v.Body.Head), Tail: render.TemplateUSD(v.Body.Tail), Timed: v.Body.Timed}, s.USD()).Head
	}
	versions := map[uint64]bool{}
	for _, tc := range []struct {
		name   string
		at     time.Time
		native *readmodel.ListingRow
	}{
		{"the cheapest native row", t0, &book[1]},
		{"the cheaper one expired: the other", t0.Add(90 * time.Second), &book[0]},
		{"both expired: the overlay", t0.Add(150 * time.Second), nil},
		{"everything expired", t0.Add(time.Hour), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock.Store(tc.at.UnixNano())
			v := read()
			assert.Equal(t, string(want(tc.at, tc.native)), string(v.Body.Head))
			assert.False(t, versions[v.Version], "a new version for each rendering")
			versions[v.Version] = true
			assert.Equal(t, v, read(), "the same view from the cache")
		})
	}
	clock.Store(t0.UnixNano())
	repriced := slices.Clone(book)
	repriced[1].PriceRaw, repriced[1].OrderID = "500000000000000000", "c"
	putBook := func(rows []readmodel.ListingRow) {
		require.NoError(t, s.Update(ctx, func(tx *Tx) error {
			putRows(tx, readmodel.SourceOrderBook, d.CollectionID, t0, rows)
			return nil
		}))
	}
	putBook(repriced)
	v := read()
	assert.Equal(t, string(want(t0, &repriced[1])), string(v.Body.Head), "the order book written again is served at once")
	assert.False(t, versions[v.Version], "a new version for another native row")
	versions[v.Version] = true
	putBook(nil)
	assert.Equal(t, string(want(t0, nil)), string(read().Body.Head), "no native row left: the overlay")
	rec2 := *rec
	rec2.Doc.Name, rec2.Version = "renamed", 8
	require.NoError(t, s.Update(ctx, func(tx *Tx) error { tx.PutTokenRecord(k, &rec2); return nil }))
	assert.Contains(t, string(read().Body.Head), `"name":"renamed"`)
	require.NoError(t, s.Update(ctx, func(tx *Tx) error { tx.DeleteTokenRecord(k); return nil }))
	_, err = s.Token(ctx, d.Chain, d.ContractAddress, d.TokenID)
	assert.Equal(t, readmodel.NotFound, readmodel.ErrorCode(err))
}

// TestDigestRendersTokens: the digest hashes token views rendered as of
// its time, not their records' versions: equal records written with other
// versions digest alike, and a listing that expired between two times
// changes the digest.
func TestDigestRendersTokens(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 11, 22, 21, 0, 0, 0, time.UTC)
	a, b := mustOpen(t), mustOpen(t)
	k, rec, book := evmToken(t0)
	other := *rec
	other.Version = 99
	require.NoError(t, a.Update(ctx, func(tx *Tx) error { putEVMToken(tx, k, rec, book); return nil }))
	require.NoError(t, b.Update(ctx, func(tx *Tx) error { putEVMToken(tx, k, &other, book); return nil }))
	da, err := a.Digest(ctx, t0)
	require.NoError(t, err)
	db, err := b.Digest(ctx, t0)
	require.NoError(t, err)
	assert.Equal(t, da, db)
	later, err := a.Digest(ctx, t0.Add(90*time.Second))
	require.NoError(t, err)
	assert.NotEqual(t, da, later)
	require.NoError(t, b.Update(ctx, func(tx *Tx) error {
		putRows(tx, readmodel.SourceOrderBook, rec.Doc.CollectionID, t0, book[:1]) // the cheaper row gone
		return nil
	}))
	dbook, err := b.Digest(ctx, t0)
	require.NoError(t, err)
	assert.NotEqual(t, db, dbook, "the digest renders the order book's rows")
}

// TestTokensVersion: TokensVersion moves with every commit that writes or
// deletes a token record and with a new USD quote (both change token
// bodies), and holds across commits that change neither.
func TestTokensVersion(t *testing.T) {
	ctx := context.Background()
	s := mustOpen(t)
	k, rec, book := evmToken(time.Date(2026, 11, 22, 21, 0, 0, 0, time.UTC))
	for _, tc := range []struct {
		name  string
		fn    func(tx *Tx)
		moves bool
	}{
		{"a token written", func(tx *Tx) { tx.PutTokenRecord(k, rec) }, true},
		{"an order book written (its tokens show its rows)", func(tx *Tx) {
			putRows(tx, readmodel.SourceOrderBook, rec.Doc.CollectionID, rec.ObservedAt, book)
		}, true},
		{"another source's rows written", func(tx *Tx) {
			putRows(tx, readmodel.SourceIndexerMirror, rec.Doc.CollectionID, rec.ObservedAt, book)
		}, false},
		{"another view written", func(tx *Tx) { tx.Register("polygon_x") }, false},
		{"a position moved", func(tx *Tx) { tx.SetPosition("MARKETD_STATE", StreamPos{Seq: 9}) }, false},
		{"a new USD quote", func(tx *Tx) { tx.PutQuote(readmodel.USDRates{"ETH": 3000}, true) }, true},
		{"the same quote again", func(tx *Tx) { tx.PutQuote(readmodel.USDRates{"ETH": 3000}, true) }, false},
		{"a token deleted", func(tx *Tx) { tx.DeleteTokenRecord(k) }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := s.TokensVersion()
			require.NoError(t, s.Update(ctx, func(tx *Tx) error { tc.fn(tx); return nil }))
			if tc.moves {
				assert.NotEqual(t, before, s.TokensVersion())
			} else {
				assert.Equal(t, before, s.TokensVersion())
			}
		})
	}
}

// TestTokenListingChargesRoyalty: a token's listing carries fees and
// buyerPrice with its collection's royaltyBps, read from the collection's
// document when the view is rendered: unknown (no document, or none in
// it) gives a royalty fee of null bps and a null buyerPrice; a commit that
// changes the royalty (RoyaltyChanged) re-renders the view at once, with
// another version, and the digest follows.
func TestTokenListingChargesRoyalty(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 11, 22, 21, 0, 0, 0, time.UTC)
	s, err := Open(ctx, t.TempDir(), Options{Now: func() time.Time { return t0 }})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close(ctx) })
	k, rec, book := evmToken(t0)
	d := &rec.Doc
	require.NoError(t, s.Update(ctx, func(tx *Tx) error { putEVMToken(tx, k, rec, book); return nil }))
	bps := func(v int64) *int64 { return &v }
	versions := map[uint64]bool{}
	digests := map[string]bool{}
	for _, tc := range []struct {
		name    string
		royalty *int64 // nil: the document has none
		fees    string // the listing's fees and buyerPrice, USD slots filled
	}{
		{"no document", nil, `"fees":[{"kind":"platform","bps":200,"amount":{"raw":"20000000000000000","decimal":0.02,"currency":"ETH","usd":null}},{"kind":"royalty","bps":null,"amount":null}],"buyerPrice":null`},
		{"royalty 500", bps(500), `"fees":[{"kind":"platform","bps":200,"amount":{"raw":"20000000000000000","decimal":0.02,"currency":"ETH","usd":null}},{"kind":"royalty","bps":500,"amount":{"raw":"50000000000000000","decimal":0.05,"currency":"ETH","usd":null}}],"buyerPrice":{"raw":"1070000000000000000","decimal":1.07,"currency":"ETH","usd":null}`},
		{"royalty 250", bps(250), `"fees":[{"kind":"platform","bps":200,"amount":{"raw":"20000000000000000","decimal":0.02,"currency":"ETH","usd":null}},{"kind":"royalty","bps":250,"amount":{"raw":"25000000000000000","decimal":0.025,"currency":"ETH","usd":null}}],"buyerPrice":{"raw":"1045000000000000000","decimal":1.045,"currency":"ETH","usd":null}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name != "no document" {
				before := s.TokensVersion()
				require.NoError(t, s.Update(ctx, func(tx *Tx) error {
					doc, err := EncodeJSON(readmodel.CollectionDoc{ID: d.CollectionID, Chain: d.Chain, RoyaltyBps: tc.royalty})
					if err != nil {
						return err
					}
					putSection(tx, d.CollectionID, SecDoc, doc)
					tx.RoyaltyChanged(d.CollectionID)
					return nil
				}))
				assert.NotEqual(t, before, s.TokensVersion())
			}
			v, err := s.Token(ctx, d.Chain, d.ContractAddress, d.TokenID)
			require.NoError(t, err)
			assert.Contains(t, string(v.Body.Head), tc.fees)
			assert.False(t, versions[v.Version], "a new version for each royalty")
			versions[v.Version] = true
			dg, err := s.Digest(ctx, t0)
			require.NoError(t, err)
			assert.False(t, digests[dg], "the digest renders tokens with the royalty")
			digests[dg] = true
		})
	}
}

// TestNativeSets: a token's view chooses its native listing among its
// collection's order-book rows that are EVM, native and live when the book
// was observed, in the book's order (a dearer second listing kept).
func TestNativeSets(t *testing.T) {
	t0 := time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)
	row := func(chain readmodel.Chain, token, raw, market, order string, exp *time.Time) readmodel.ListingRow {
		return readmodel.ListingRow{Chain: chain, ContractAddress: "0xc0", TokenID: token, CollectionID: "c",
			PriceRaw: raw, Seller: "0xs" + token, Marketplace: market, Status: readmodel.StatusActive, Timestamp: t0.Add(-time.Hour), OrderID: order, ExpiresAt: exp}
	}
	gone, later := t0.Add(-time.Second), t0.Add(time.Second)
	key := func(chain readmodel.Chain, id string) string { return readmodel.TokenKey(chain, "0xc0", id) }
	tests := []struct {
		name string
		rows []readmodel.ListingRow
		want map[string][]string // token key: order ids
	}{
		{"none", nil, nil},
		{"native rows, a dearer duplicate kept in order", []readmodel.ListingRow{
			row(readmodel.Ethereum, "1", "100", "NATIVE", "a1", nil), row(readmodel.Ethereum, "2", "200", "NATIVE", "a2", &later),
			row(readmodel.Ethereum, "1", "150", "NATIVE", "b1", nil),
		}, map[string][]string{key(readmodel.Ethereum, "1"): {"a1", "b1"}, key(readmodel.Ethereum, "2"): {"a2"}}},
		{"expired at the observation, not native, not EVM: left out", []readmodel.ListingRow{
			row(readmodel.Base, "1", "100", "NATIVE", "a1", &gone), row(readmodel.Base, "2", "200", "opensea", "x2", nil),
			row(readmodel.Solana, "3", "300", "NATIVE", "s3", nil), row(readmodel.Base, "4", "400", "NATIVE", "a4", nil),
		}, map[string][]string{key(readmodel.Base, "4"): {"a4"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got map[string][]string
			for k, rows := range nativeSets(t0, tt.rows) {
				if got == nil {
					got = map[string][]string{}
				}
				for _, r := range rows {
					got[k] = append(got[k], r.OrderID)
				}
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

// putSection sets one section of collection cid's state record, keeping
// the others, as the projector does when a message changes it.
func putSection(tx *Tx, cid string, sec StateSection, b []byte) {
	st, err := tx.CollectionState(cid, ListingSection(sec))
	if err != nil {
		panic(err)
	}
	st[sec] = b
	var changed [NumStateSections]bool
	changed[sec] = true
	tx.PutCollectionState(cid, &st, &changed)
}

// putRows stores source src's rows of collection cid.
func putRows(tx *Tx, src readmodel.Source, cid string, at time.Time, rows []readmodel.ListingRow) {
	sec := SecMirror
	if src == readmodel.SourceOrderBook {
		sec = SecBook
	}
	putSection(tx, cid, sec, EncodeRows(at, rows))
}

package store

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/render"
)

const (
	evmCID = "base_0x00f72a1c55fc16cee9bd5f89fd13976866c46f99"
	solCID = "solana_9htjlqrhecpsenzzby9f4kzjlb7nuovjucna4nyvsh22"
)

// oldSaleItem is a sale's item as the API served it before sales were
// records (schema 15): the projector rendered it with USD slots
// (render.SaleItem, MarshalItem, TemplateUSD) and the page read filled
// them from the quote.
func oldSaleItem(t testing.TB, s *readmodel.SaleRow, q *render.USDQuote) string {
	t.Helper()
	it, ok := render.SaleItem(s, nil)
	require.True(t, ok, "the projector stores only sales whose price renders")
	return string(filled(render.TemplateUSD(render.MarshalItem(it)), q))
}

// saleCases is a varied set of sale rows: both chain families, every
// orderId form, null fields, odd prices and odd times.
func saleCases() []struct {
	name string
	cid  string
	row  readmodel.SaleRow
} {
	at := time.Date(2026, 10, 29, 15, 2, 34, 0, time.UTC)
	evm := readmodel.SaleRow{
		Chain: readmodel.Base, ContractAddress: "0x00f72a1c55fc16cee9bd5f89fd13976866c46f99",
		TokenID: "6744884665847938487519310405077777746628566419664", CollectionID: evmCID,
		PriceRaw: "5248850000899475666", Seller: "0xe0b030543b1ecd30cd9891f9f8e4b964af99a5ed",
		Buyer: "0xf5eea6cae4a052000fef00e5ac00fd085e3dcbf7", Marketplace: "NATIVE", Status: readmodel.StatusSold,
		Timestamp: at, Tx: "0xe5bd256c69f35e163c1cd421b799db6601ddfd85ba90260f491a64b3bd68bee6",
		OrderID: evmCID + "_6744884665847938487519310405077777746628566419664_1710844261000",
	}
	sol := readmodel.SaleRow{
		Chain: readmodel.Solana, Mint: "Gg1CnKq8Lqn3iFACZY7NtmDyBXf3DnEZUKGHyAPRD8vf", CollectionID: solCID,
		PriceRaw: "31964656357", Seller: "Eaf4sXgAemnz8YP4JEWoZvgejhNAr7QGCZozvhgMYg9u",
		Buyer: "BNYFH3krkmwUBRegwQJVNYY9juRdzfa71Q7W7jpHLUdH", Marketplace: "NATIVE", Status: readmodel.StatusSold,
		Timestamp: at.Add(-time.Hour), OrderID: "Gg1CnKq8Lqn3iFACZY7NtmDyBXf3DnEZUKGHyAPRD8vf_1775642651000",
		Tx: "Jhce7rzsqCx3Z9V7bdFhXPmXXUs8JHysMLxdza47wheYGgx8kUK544TmyHpvGgSZS2trhoZZfvMdU9zTL2vu9Un",
	}
	n := 0
	with := func(r readmodel.SaleRow, f func(r *readmodel.SaleRow)) readmodel.SaleRow {
		n++ // a sale of its own (SaleKey): the tx differs
		if isHex(r.Tx) {
			r.Tx = fmt.Sprintf("%s%02x", r.Tx[:len(r.Tx)-2], n)
		} else if r.Tx != "" {
			r.Tx = r.Tx[:len(r.Tx)-1] + string("123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"[n%58])
		}
		f(&r)
		return r
	}
	return []struct {
		name string
		cid  string
		row  readmodel.SaleRow
	}{
		{"evm native", evmCID, evm},
		{"evm external", evmCID, with(evm, func(r *readmodel.SaleRow) { r.Marketplace, r.OrderID = "opensea", "opensea-1r1i0gwx2j" })},
		{"evm external, other order id", evmCID, with(evm, func(r *readmodel.SaleRow) { r.Marketplace, r.OrderID = "blur", "0xABCDEF" })},
		{"evm order id is only its prefix", evmCID, with(evm, func(r *readmodel.SaleRow) { r.OrderID = evmCID + "_" + r.TokenID + "_" })},
		{"evm nulls", evmCID, with(evm, func(r *readmodel.SaleRow) { r.Seller, r.Buyer, r.OrderID, r.Tx, r.TokenID = "", "", "", "", "" })},
		{"evm no status", evmCID, with(evm, func(r *readmodel.SaleRow) { r.Status = "" })},
		{"evm filled status", evmCID, with(evm, func(r *readmodel.SaleRow) { r.Status = readmodel.StatusFilled })},
		{"evm small token id", evmCID, with(evm, func(r *readmodel.SaleRow) { r.TokenID = "7" })},
		{"evm token id with leading zero", evmCID, with(evm, func(r *readmodel.SaleRow) { r.TokenID = "0123456" })},
		{"evm mixed-case address", evmCID, with(evm, func(r *readmodel.SaleRow) {
			r.ContractAddress, r.Seller = "0x00F72a1c55fc16cee9bd5f89fd13976866c46f99", "0xE0b0"
		})},
		{"evm other collection id", evmCID, with(evm, func(r *readmodel.SaleRow) { r.CollectionID = "base_0xother" })},
		{"evm mint set", evmCID, with(evm, func(r *readmodel.SaleRow) { r.Mint = "stray" })},
		{"price zero", evmCID, with(evm, func(r *readmodel.SaleRow) { r.PriceRaw = "0" })},
		{"price one wei", evmCID, with(evm, func(r *readmodel.SaleRow) { r.PriceRaw = "1" })},
		{"price with leading zeros", evmCID, with(evm, func(r *readmodel.SaleRow) { r.PriceRaw = "000123" })},
		{"price huge", evmCID, with(evm, func(r *readmodel.SaleRow) { r.PriceRaw = strings.Repeat("9", 70) })},
		{"price of an odd length", evmCID, with(evm, func(r *readmodel.SaleRow) { r.PriceRaw = "12345678901" })},
		{"time with nanoseconds", evmCID, with(evm, func(r *readmodel.SaleRow) { r.Timestamp = at.Add(123456789) })},
		{"time in another zone", evmCID, with(evm, func(r *readmodel.SaleRow) { r.Timestamp = at.In(time.FixedZone("x", 3600)) })},
		{"time zero", evmCID, with(evm, func(r *readmodel.SaleRow) { r.Timestamp = time.Time{} })},
		{"time before 1970", evmCID, with(evm, func(r *readmodel.SaleRow) { r.Timestamp = time.Date(1969, 7, 20, 20, 17, 0, 5, time.UTC) })},
		{"time beyond the key's nanoseconds", evmCID, with(evm, func(r *readmodel.SaleRow) { r.Timestamp = time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC) })},
		{"ethereum", "ethereum_0xabc", with(evm, func(r *readmodel.SaleRow) {
			r.Chain, r.ContractAddress, r.CollectionID, r.OrderID = readmodel.Ethereum, "0xabc", "ethereum_0xabc", "ethereum_0xabc_"+r.TokenID+"_99"
		})},
		{"polygon", "polygon_0xabc", with(evm, func(r *readmodel.SaleRow) {
			r.Chain, r.ContractAddress, r.CollectionID = readmodel.Polygon, "0xabc", "polygon_0xabc"
		})},
		{"apechain", "apechain_0xabc", with(evm, func(r *readmodel.SaleRow) { r.Chain, r.CollectionID = readmodel.ApeChain, "apechain_0xabc" })},
		{"collection id without a chain", "nochain", with(evm, func(r *readmodel.SaleRow) { r.CollectionID = "nochain" })},
		{"solana native", solCID, sol},
		{"solana external", solCID, with(sol, func(r *readmodel.SaleRow) { r.Marketplace, r.OrderID = "tensor", "tensor-2m33n81e89" })},
		{"solana nulls", solCID, with(sol, func(r *readmodel.SaleRow) { r.Seller, r.Buyer, r.OrderID, r.Tx = "", "", "", "" })},
		{"solana with contract address", solCID, with(sol, func(r *readmodel.SaleRow) { r.ContractAddress = "9htjLQRhecpsenzzby9f4kzjlb7nuovjucna4nyvsh22" })},
		{"solana price under one", solCID, with(sol, func(r *readmodel.SaleRow) { r.PriceRaw = "145438816" })},
		{"unicode and quotes", solCID, with(sol, func(r *readmodel.SaleRow) { r.Marketplace, r.OrderID = `mé"x`, "a\\b\u2028" })},
	}
}

// TestSaleRecordsServeTheOldBytes: a sales page rendered from records is
// byte for byte what the rendered items served (the old path), under no
// quote and under one, for a varied set of sales; records decode back to
// their rows and are far smaller than the items were.
func TestSaleRecordsServeTheOldBytes(t *testing.T) {
	ctx := context.Background()
	s := mustOpen(t)
	cases := saleCases()
	byCID := map[string][]readmodel.SaleRow{}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			suf := saleSuffix(&c.row)
			rec := encodeSale(c.cid, suf, &c.row)
			got, err := decodeSale(c.cid, suf, rec)
			require.NoError(t, err)
			assert.True(t, got.Timestamp.Equal(c.row.Timestamp), "timestamp")
			want := c.row
			want.Timestamp = got.Timestamp
			assert.Equal(t, want, got, "the row comes back")
			item, err := renderSale(c.cid, suf, rec, nil)
			require.NoError(t, err)
			assert.Equal(t, oldSaleItem(t, &c.row, nil), string(item))
			added := false
			require.NoError(t, s.Update(ctx, func(tx *Tx) error {
				var err error
				_, added, err = tx.AddSale(c.cid, &c.row)
				return err
			}))
			require.True(t, added)
			byCID[c.cid] = append(byCID[c.cid], c.row)
		})
	}
	for _, q := range []struct {
		name   string
		rates  readmodel.USDRates
		feedOK bool
	}{
		{"no quote", nil, false},
		{"rates", readmodel.USDRates{"ETH": 3012.57, "SOL": 187.3, "MATIC": 0.41, "APE": 1.1}, true},
		{"odd rates", readmodel.USDRates{"ETH": 1e-9, "SOL": 1e22}, true},
		{"no feed", readmodel.USDRates{"ETH": 3012.57}, false},
	} {
		t.Run(q.name, func(t *testing.T) {
			if q.rates != nil {
				require.NoError(t, s.Update(ctx, func(tx *Tx) error { tx.PutQuote(q.rates, q.feedOK); return nil }))
			}
			for cid, rows := range byCID {
				want := map[string]bool{}
				for i := range rows {
					want[oldSaleItem(t, &rows[i], s.USD())] = true
				}
				page, err := s.Sales(ctx, cid, "", 100)
				require.NoError(t, err)
				require.Len(t, page.Items, len(rows), cid)
				for _, it := range page.Items {
					assert.True(t, want[string(it)], "served item is an old item: %s", it)
				}
			}
		})
	}
}

// TestSaleRecordCoversEveryField: every field of a sale row survives its
// record (a field added to SaleRow but not to its Fields fails here).
func TestSaleRecordCoversEveryField(t *testing.T) {
	base := saleCases()[0].row
	rv := reflect.ValueOf(&base).Elem()
	for i := 0; i < rv.NumField(); i++ {
		name := rv.Type().Field(i).Name
		t.Run(name, func(t *testing.T) {
			row := base
			f := reflect.ValueOf(&row).Elem().Field(i)
			switch f.Kind() {
			case reflect.String:
				f.SetString("changed-" + name)
			case reflect.Struct:
				f.Set(reflect.ValueOf(time.Date(2001, 2, 3, 4, 5, 6, 7, time.UTC)))
			default:
				t.Fatalf("field %s: unhandled kind %s", name, f.Kind())
			}
			suf := saleSuffix(&row)
			got, err := decodeSale(evmCID, suf, encodeSale(evmCID, suf, &row))
			require.NoError(t, err)
			assert.Equal(t, row, got)
		})
	}
}

// TestSaleRecordSize: a typical sale's record is well under the 334
// bytes its compressed item and header took (schema 15).
func TestSaleRecordSize(t *testing.T) {
	for _, c := range saleCases()[:2] {
		rec := encodeSale(c.cid, saleSuffix(&c.row), &c.row)
		t.Logf("%s: %d bytes (item %d)", c.name, len(rec), len(oldSaleItem(t, &c.row, nil)))
		assert.Less(t, len(rec), 150, c.name)
	}
}

// TestDamagedSaleRecordIsAnError: a damaged record is an Internal error
// Damaged recognises, from decoding and from a page read, never a panic.
func TestDamagedSaleRecordIsAnError(t *testing.T) {
	c := saleCases()[0]
	suf := saleSuffix(&c.row)
	rec := encodeSale(c.cid, suf, &c.row)
	bad := map[string][]byte{
		"empty":            nil,
		"trailing byte":    append(append([]byte(nil), rec...), 0),
		"bad order form":   append(append([]byte(nil), rec[:len(rec)-35]...), 9),
		"bad time tag":     []byte{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 9},
		"huge length":      []byte{0xff, 0xff, 0xff, 0xff, 0x0f},
		"overlong uvarint": []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
	}
	for i := 1; i < len(rec); i++ {
		bad[fmt.Sprintf("truncated to %d", i)] = rec[:i]
	}
	for name, v := range bad {
		t.Run(name, func(t *testing.T) {
			_, err := renderSale(c.cid, suf, v, nil)
			require.Error(t, err)
			_, damaged := Damaged(err)
			assert.True(t, damaged, "Damaged recognises %v", err)
			assert.Equal(t, readmodel.Internal, readmodel.ErrorCode(err))
		})
	}
	t.Run("a short key", func(t *testing.T) {
		_, err := decodeSale(c.cid, suf[:15], rec)
		assert.ErrorIs(t, err, errCorruptSale)
	})
	t.Run("key time on a zero-time key", func(t *testing.T) {
		zero := saleSuffix(&readmodel.SaleRow{})
		_, err := decodeSale(c.cid, zero, rec)
		assert.ErrorIs(t, err, errCorruptSale)
	})
	t.Run("every byte flipped", func(t *testing.T) {
		for i := range rec {
			for _, x := range []byte{0x01, 0x80, 0xff} {
				v := append([]byte(nil), rec...)
				v[i] ^= x
				assert.NotPanics(t, func() { _, _ = renderSale(c.cid, suf, v, nil) })
			}
		}
	})
	t.Run("page read", func(t *testing.T) {
		ctx := context.Background()
		s := mustOpen(t)
		require.NoError(t, s.Update(ctx, func(tx *Tx) error { _, _, err := tx.AddSale(c.cid, &c.row); return err }))
		require.NoError(t, s.db.Update(func(txn *badger.Txn) error { return txn.Set(append(salesPrefix(c.cid), suf...), rec[:10]) }))
		_, err := s.Sales(ctx, c.cid, "", 10)
		require.Error(t, err)
		reason, damaged := Damaged(err)
		assert.True(t, damaged)
		assert.Equal(t, DamageDecode, reason)
	})
}

// TestSalesPageVersionAndCache: a cached sales page is served without
// reading or rendering again; its version changes when a sale is added
// and when a stored record changes; the dedupe entry is empty and still
// dedupes.
func TestSalesPageVersionAndCache(t *testing.T) {
	ctx := context.Background()
	s := mustOpen(t)
	cases := saleCases()
	a, b := cases[0].row, cases[1].row
	b.Tx = "0x01"
	add := func(r *readmodel.SaleRow) bool {
		var added bool
		require.NoError(t, s.Update(ctx, func(tx *Tx) error {
			var err error
			_, added, err = tx.AddSale(evmCID, r)
			return err
		}))
		return added
	}
	require.True(t, add(&a))
	reads := 0
	s.beforePageRead = func(*pageFlight) { reads++ }
	p1, err := s.Sales(ctx, evmCID, "", 10)
	require.NoError(t, err)
	p2, err := s.Sales(ctx, evmCID, "", 10)
	require.NoError(t, err)
	assert.Equal(t, 1, reads, "the second read is served from the page cache")
	assert.Equal(t, p1, p2)

	again := a
	again.Timestamp = a.Timestamp.Add(time.Hour) // SaleKey excludes the time
	assert.False(t, add(&again), "the same sale is deduped")
	require.True(t, add(&b))
	p3, err := s.Sales(ctx, evmCID, "", 10)
	require.NoError(t, err)
	assert.Equal(t, 2, reads, "an added sale invalidates the page")
	require.Len(t, p3.Items, 2)
	assert.NotEqual(t, p1.Version, p3.Version)

	dk := append(saleDedupePrefix(evmCID), saleSuffix(&a)[8:]...)
	v, ok, err := s.get(dk)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Empty(t, v, "the dedupe entry has no value")

	changed := a
	changed.Buyer = "0x02"
	suf := saleSuffix(&a)
	require.NoError(t, s.db.Update(func(txn *badger.Txn) error {
		return txn.Set(append(salesPrefix(evmCID), suf...), encodeSale(evmCID, suf, &changed))
	}))
	p4, err := s.Sales(ctx, evmCID, "", 11) // another page: not cached
	require.NoError(t, err)
	p5, err := s.readPage(salesPrefix(evmCID), nil, 10, evmCID)
	require.NoError(t, err)
	assert.Equal(t, p4.Items, p5.Items)
	assert.NotEqual(t, p3.Version, p5.Version, "a changed record changes the version")
	assert.Contains(t, string(p5.Items[0])+string(p5.Items[1]), `"buyer":"0x02"`)
}

// TestSalesDigest: two stores that added the same sales hold the same
// digest however the sales were grouped; a differing sale differs.
func TestSalesDigest(t *testing.T) {
	ctx := context.Background()
	at := time.Unix(1800000000, 0)
	fill := func(s *Store, rows []readmodel.SaleRow, perTx int) {
		for i := 0; i < len(rows); i += perTx {
			require.NoError(t, s.Update(ctx, func(tx *Tx) error {
				for j := i; j < min(i+perTx, len(rows)); j++ {
					if _, _, err := tx.AddSale(rows[j].CollectionID, &rows[j]); err != nil {
						return err
					}
				}
				return nil
			}))
		}
	}
	var rows []readmodel.SaleRow
	for _, c := range saleCases() {
		r := c.row
		r.CollectionID = c.cid
		rows = append(rows, r)
	}
	a, b, c := mustOpen(t), mustOpen(t), mustOpen(t)
	fill(a, rows, 1)
	fill(b, rows, len(rows))
	changed := append([]readmodel.SaleRow(nil), rows...)
	changed[3].PriceRaw += "1"
	fill(c, changed, 5)
	da, err := a.Digest(ctx, at)
	require.NoError(t, err)
	db, err := b.Digest(ctx, at)
	require.NoError(t, err)
	dc, err := c.Digest(ctx, at)
	require.NoError(t, err)
	assert.Equal(t, da, db)
	assert.NotEqual(t, da, dc)
}

package projector_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/render"
)

func TestResolveCollection(t *testing.T) {
	e := mustEnv(t)
	e.run(
		docMsg(readmodel.CollectionDoc{ID: "ethereum_0xabc", Chain: readmodel.Ethereum, ContractAddress: "0xabc", Slug: "Cool-Cats"}),
		docMsg(readmodel.CollectionDoc{ID: "base_0xabc", Chain: readmodel.Base, ContractAddress: "0xabc", Slug: "base-cats"}),
		docMsg(readmodel.CollectionDoc{ID: "solana_mintabc", Chain: readmodel.Solana, ContractAddress: "MintABC", Slug: "sol-cats"}),
		docMsg(readmodel.CollectionDoc{ID: "polygon_0xdef", Chain: readmodel.Polygon, ContractAddress: "0xdef", Slug: "ethereum_0xabc"}),
	)
	cases := []struct {
		name, id, want string
	}{
		{"document id", "ethereum_0xabc", "ethereum_0xabc"},
		{"document id any case", "ETHEREUM_0xABC", "ethereum_0xabc"},
		{"EVM address on two chains: earlier chain in the enumeration", "0xabc", "ethereum_0xabc"},
		{"EVM address case-insensitive", "0xABC", "ethereum_0xabc"},
		{"slug exact", "Cool-Cats", "ethereum_0xabc"},
		{"slug lowercased when no exact match", "BASE-CATS", "base_0xabc"},
		{"solana mint exact case", "MintABC", "solana_mintabc"},
		{"document id beats another collection's slug", "ethereum_0xabc", "ethereum_0xabc"},
		{"unknown", "nope", ""},
		{"empty", "", ""},
		{"over 200 characters", strings.Repeat("a", 201), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := e.st.ResolveCollection(context.Background(), tc.id)
			if tc.want == "" {
				assert.Equal(t, readmodel.NotFound, readmodel.ErrorCode(err))
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
	t.Run("solana mint is not case-folded", func(t *testing.T) {
		e.run(docMsg(readmodel.CollectionDoc{ID: "solana_other", Chain: readmodel.Solana, ContractAddress: "mintabc"}))
		got, err := e.st.ResolveCollection(context.Background(), "MintABC")
		require.NoError(t, err)
		assert.Equal(t, "solana_mintabc", got)
		_, err = e.st.ResolveCollection(context.Background(), "MINTABC")
		assert.Equal(t, readmodel.NotFound, readmodel.ErrorCode(err), "a wrongly-cased mint never folds onto another mint")
	})
	t.Run("a re-pointed slug follows the new document", func(t *testing.T) {
		e.run(docMsg(readmodel.CollectionDoc{ID: "ethereum_0xabc", Chain: readmodel.Ethereum, ContractAddress: "0xabc", Slug: "renamed"}))
		_, err := e.st.ResolveCollection(context.Background(), "Cool-Cats")
		assert.Equal(t, readmodel.NotFound, readmodel.ErrorCode(err))
		got, err := e.st.ResolveCollection(context.Background(), "renamed")
		require.NoError(t, err)
		assert.Equal(t, "ethereum_0xabc", got)
	})
}

func saleRow(tx string, at time.Time, raw string) readmodel.SaleRow {
	return readmodel.SaleRow{Chain: readmodel.Ethereum, ContractAddress: contract, TokenID: "1", CollectionID: cid, PriceRaw: raw,
		Seller: "0xs", Buyer: "0xb", Marketplace: "NATIVE", Status: readmodel.StatusSold, Timestamp: at, OrderID: "o-" + tx, Tx: tx}
}

func salesMsg(rows ...readmodel.SaleRow) *readmodel.Message {
	return &readmodel.Message{Kind: readmodel.KindSales, Source: readmodel.SourceSales, CollectionID: cid, Sales: rows}
}

func txs(t testing.TB, p render.Page) []string {
	var out []string
	for _, it := range p.Items {
		out = append(out, jsonMap(t, it)["tx"].(string))
	}
	return out
}

func TestSales(t *testing.T) {
	ctx := context.Background()
	e := mustEnv(t)
	e.run(docMsg(evmDoc(cid, readmodel.Ethereum, contract)),
		salesMsg(saleRow("a", t0.Add(1*time.Minute), "10"), saleRow("b", t0.Add(3*time.Minute), "10"), saleRow("bad", t0.Add(4*time.Minute), "x")),
		salesMsg(saleRow("c", t0.Add(2*time.Minute), "10"), saleRow("a", t0.Add(1*time.Minute), "10")))

	t.Run("newest first, duplicates stored once, uninterpretable dropped", func(t *testing.T) {
		p, err := e.st.Sales(ctx, cid, "", 10)
		require.NoError(t, err)
		assert.Equal(t, []string{"b", "c", "a"}, txs(t, p))
		assert.False(t, p.HasMore)
		assert.Empty(t, p.Next)
	})
	t.Run("keyset walk is not shifted by new sales", func(t *testing.T) {
		p1, err := e.st.Sales(ctx, cid, "", 1)
		require.NoError(t, err)
		require.True(t, p1.HasMore)
		assert.Equal(t, []string{"b"}, txs(t, p1))
		e.run(salesMsg(saleRow("new", t0.Add(10*time.Minute), "10")))
		p2, err := e.st.Sales(ctx, cid, p1.Next, 5)
		require.NoError(t, err)
		assert.Equal(t, []string{"c", "a"}, txs(t, p2))
		assert.False(t, p2.HasMore)
		p0, err := e.st.Sales(ctx, cid, "", 1)
		require.NoError(t, err)
		assert.Equal(t, []string{"new"}, txs(t, p0), "the cached first page was invalidated")
	})
	for _, bad := range []string{"zz", "00", "null", strings.Repeat("0", 34)} {
		t.Run("bad position "+bad, func(t *testing.T) {
			_, err := e.st.Sales(ctx, cid, bad, 5)
			assert.Equal(t, readmodel.BadRequest, readmodel.ErrorCode(err))
		})
	}
	t.Run("other collection has no sales", func(t *testing.T) {
		p, err := e.st.Sales(ctx, "other", "", 5)
		require.NoError(t, err)
		assert.Empty(t, p.Items)
	})
}

// TestSalesDedupe checks that a sale (SaleKey) is indexed once wherever
// its copy arrives: the store reads a dedupe key only for collections
// that had sales committed before the transaction, and checks the first
// sales of a collection against those of the same transaction.
func TestSalesDedupe(t *testing.T) {
	ctx := context.Background()
	other := func(r readmodel.SaleRow) readmodel.SaleRow { r.CollectionID = cid + "x"; return r }
	a, b := saleRow("a", t0.Add(time.Minute), "10"), saleRow("b", t0.Add(2*time.Minute), "10")
	// A copy of a reported again with another time: same SaleKey, but it
	// would sort under a key of its own if it were indexed again.
	a2 := a
	a2.Timestamp = t0.Add(3 * time.Minute)
	cases := []struct {
		name  string
		steps [][]*readmodel.Message // each step is applied in one call
		want  []string
	}{
		{"twice in one message", [][]*readmodel.Message{{salesMsg(a, b, a2)}}, []string{"b", "a"}},
		{"in two messages of one batch", [][]*readmodel.Message{{salesMsg(a), salesMsg(b, a2)}}, []string{"b", "a"}},
		{"in a later transaction", [][]*readmodel.Message{{salesMsg(a)}, {salesMsg(a2, b)}, {salesMsg(b)}}, []string{"b", "a"}},
		{"another collection's sales first", [][]*readmodel.Message{
			{&readmodel.Message{Kind: readmodel.KindSales, Source: readmodel.SourceSales, CollectionID: cid + "x", Sales: []readmodel.SaleRow{other(a)}}},
			{salesMsg(a, a2)}, {salesMsg(a2)}}, []string{"a"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := mustEnv(t)
			e.run(docMsg(evmDoc(cid, readmodel.Ethereum, contract)))
			for _, step := range tc.steps {
				e.run(step...)
			}
			p, err := e.st.Sales(ctx, cid, "", 10)
			require.NoError(t, err)
			assert.Equal(t, tc.want, txs(t, p))
		})
	}
}

func TestBrowse(t *testing.T) {
	ctx := context.Background()
	e := mustEnv(t)
	mk := func(id string, c readmodel.Chain, vol float64, floor string, native bool, created time.Time) *readmodel.Message {
		d := evmDoc(id, c, "0x"+id)
		d.VolumeAllTime, d.FloorRaw, d.NativeLaunched, d.CreatedAt = f64(vol), floor, native, created
		return docMsg(d)
	}
	e.run(
		mk("a", readmodel.Ethereum, 100, "3000000000000000000", false, t0.Add(1*time.Hour)),
		mk("b", readmodel.Ethereum, 500, "1000000000000000000", false, t0.Add(2*time.Hour)),
		mk("c", readmodel.Base, 50, "", true, t0.Add(3*time.Hour)),
		mk("d", readmodel.Base, 900, "2000000000000000000", false, t0),
		docMsg(readmodel.CollectionDoc{ID: "nochain", Name: "No chain"}),
	)
	ids := func(p render.Page) []string {
		var out []string
		for _, it := range p.Items {
			out = append(out, jsonMap(t, it)["id"].(string))
		}
		return out
	}
	cases := []struct {
		name  string
		sort  readmodel.Sort
		chain readmodel.Chain
		want  []string
	}{
		{"volume, all chains, native first", readmodel.SortVolume, "", []string{"c", "d", "b", "a", "nochain"}},
		{"volume, ethereum", readmodel.SortVolume, readmodel.Ethereum, []string{"b", "a"}},
		{"floor, descending, nulls last", readmodel.SortFloor, "", []string{"c", "a", "d", "b", "nochain"}},
		{"recent, base", readmodel.SortRecent, readmodel.Base, []string{"c", "d"}},
		{"no collections on a chain", readmodel.SortVolume, readmodel.Robinhood, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			after := ""
			for i := 0; i < 10; i++ {
				p, err := e.st.Browse(ctx, tc.sort, tc.chain, after, 2)
				require.NoError(t, err)
				got = append(got, ids(p)...)
				if !p.HasMore {
					break
				}
				after = p.Next
			}
			assert.Equal(t, tc.want, got)
		})
	}
	t.Run("summary shape", func(t *testing.T) {
		p, err := e.st.Browse(ctx, readmodel.SortVolume, readmodel.Ethereum, "", 1)
		require.NoError(t, err)
		require.Len(t, p.Items, 1)
		assert.Regexp(t, `^\{"id":"b","chain":"ethereum","contractAddress":"0xb","name":"Name b","slug":"slug-b","image":null,"banner":null,"description":null,"tokenStandard":null,"royaltyBps":500,"stats":\{"floor":\{"raw":"1000000000000000000","decimal":1,"currency":"ETH","usd":null\},"volumeAllTime":500,"supply":null,"owners":null\}\}$`, string(render.AppendUSD(nil, p.Items[0], nil)))
	})
	t.Run("a summary edit in place changes the page version", func(t *testing.T) {
		before, err := e.st.Browse(ctx, readmodel.SortVolume, readmodel.Ethereum, "", 5)
		require.NoError(t, err)
		d := evmDoc("b", readmodel.Ethereum, "0xb")
		d.VolumeAllTime, d.FloorRaw, d.CreatedAt, d.Name = f64(500), "1000000000000000000", t0.Add(2*time.Hour), "Renamed"
		e.run(docMsg(d))
		after, err := e.st.Browse(ctx, readmodel.SortVolume, readmodel.Ethereum, "", 5)
		require.NoError(t, err)
		assert.Equal(t, ids(before), ids(after), "same order")
		assert.NotEqual(t, before.Version, after.Version)
		assert.Equal(t, "Renamed", jsonMap(t, after.Items[0])["name"], "the page shows the edited summary")
		all, err := e.st.Browse(ctx, readmodel.SortRecent, "", "", 5)
		require.NoError(t, err)
		require.Contains(t, ids(all), "b")
		assert.Equal(t, "Renamed", jsonMap(t, all.Items[slices.Index(ids(all), "b")])["name"], "and so does every other order")
	})
	t.Run("an updated document moves", func(t *testing.T) {
		e.run(mk("a", readmodel.Ethereum, 1000, "", false, t0))
		p, err := e.st.Browse(ctx, readmodel.SortVolume, readmodel.Ethereum, "", 5)
		require.NoError(t, err)
		assert.Equal(t, []string{"a", "b"}, ids(p))
	})
	for i, bad := range []string{"xyz", "ff", fmt.Sprintf("%x", []byte{2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 'a'})} {
		t.Run(fmt.Sprint("bad position ", i), func(t *testing.T) {
			_, err := e.st.Browse(ctx, readmodel.SortVolume, "", bad, 5)
			assert.Equal(t, readmodel.BadRequest, readmodel.ErrorCode(err))
		})
	}
}

package store

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/render"
)

// benchStore opens a store in a temporary directory, closed at cleanup.
func benchStore(b *testing.B) *Store {
	s, err := Open(context.Background(), b.TempDir(), Options{MemTableSize: 8 << 20})
	require.NoError(b, err)
	b.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

// BenchmarkReadToken and BenchmarkReadListings measure a cached view read,
// what the API does per request (key, lookup, no Badger).
func BenchmarkReadToken(b *testing.B) {
	ctx, s := context.Background(), benchStore(b)
	const addr = "0x8c995e126d179f00d3423c40045c2e2d614cd083"
	require.NoError(b, s.Update(ctx, func(tx *Tx) error {
		tx.PutTokenRecord(readmodel.TokenKey(readmodel.Polygon, addr, "85"), &TokenRecord{Doc: readmodel.TokenDoc{Chain: readmodel.Polygon, ContractAddress: addr, TokenID: "85"}})
		return nil
	}))
	_, err := s.Token(ctx, readmodel.Polygon, addr, "85") // into the cache
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Token(ctx, readmodel.Polygon, addr, "85"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadListings(b *testing.B) {
	ctx, s := context.Background(), benchStore(b)
	const id = "polygon_0x8c995e126d179f00d3423c40045c2e2d614cd083"
	require.NoError(b, s.Update(ctx, func(tx *Tx) error {
		tx.PutListings(id, render.ListingsRecord{Version: 1, Rows: []readmodel.ListingRow{*sampleListing()}, Listed: 1})
		return nil
	}))
	_, err := s.Listings(ctx, id, 0)
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Listings(ctx, id, 0); err != nil {
			b.Fatal(err)
		}
	}
}

// benchSales returns n sales of collection cid shaped like the medium
// market's: two in three native (order ids that repeat the collection and
// token), the rest external, with long token ids, addresses and hashes.
func benchSales(cid string, n int) []readmodel.SaleRow {
	rows := make([]readmodel.SaleRow, n)
	_, addr, _ := strings.Cut(cid, "_")
	at := time.Date(2026, 6, 13, 5, 43, 24, 0, time.UTC)
	for i := range rows {
		r := readmodel.SaleRow{
			Chain: readmodel.Base, ContractAddress: addr, CollectionID: cid,
			TokenID:     fmt.Sprintf("%d%040d", i+1, i*7919),
			PriceRaw:    fmt.Sprintf("%d%018d", i%9+1, i*104729),
			Seller:      fmt.Sprintf("0x%040x", i*31+1),
			Buyer:       fmt.Sprintf("0x%040x", i*37+2),
			Marketplace: "NATIVE", Status: readmodel.StatusSold,
			Timestamp: at.Add(-time.Duration(i) * time.Minute),
			Tx:        fmt.Sprintf("0x%064x", i*41+3),
		}
		switch i % 3 {
		case 0:
			r.OrderID = fmt.Sprintf("%s_%s_%d", cid, r.TokenID, 1710844261000+i)
		case 1:
			r.Marketplace, r.OrderID = "opensea", fmt.Sprintf("opensea-%x", i*7777)
		}
		rows[i] = r
	}
	return rows
}

// benchAddSale adds sale r of cid as the projector does.
func benchAddSale(tx *Tx, cid string, r *readmodel.SaleRow) error {
	_, _, err := tx.AddSale(cid, r)
	return err
}

// BenchmarkReadSalesPage measures reading a page of 100 sales: uncached
// (what a page cache miss does: iterate Badger and render every item)
// and cached (what the API does per request between a collection's new
// sales).
func BenchmarkReadSalesPage(b *testing.B) {
	ctx, s := context.Background(), benchStore(b)
	const id = "base_0x00f72a1c55fc16cee9bd5f89fd13976866c46f99"
	rows := benchSales(id, 150)
	require.NoError(b, s.Update(ctx, func(tx *Tx) error {
		tx.PutQuote(readmodel.USDRates{"ETH": 3012.57}, true)
		for i := range rows {
			if err := benchAddSale(tx, id, &rows[i]); err != nil {
				return err
			}
		}
		return nil
	}))
	b.Run("uncached", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s.cache.invalidate(nil, false, false, false, []string{id})
			p, err := s.Sales(ctx, id, "", 100)
			if err != nil || len(p.Items) != 100 {
				b.Fatal(err, len(p.Items))
			}
		}
	})
	b.Run("cached", func(b *testing.B) {
		_, err := s.Sales(ctx, id, "", 100)
		require.NoError(b, err)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.Sales(ctx, id, "", 100); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkReadBrowsePage measures reading a page of 100 collection
// summaries of 1,000: uncached (a page cache miss: iterate the order's
// entries and read each summary) and cached.
func BenchmarkReadBrowsePage(b *testing.B) {
	ctx, s := context.Background(), benchStore(b)
	require.NoError(b, s.Update(ctx, func(tx *Tx) error {
		for i := 0; i < 1000; i++ {
			id := fmt.Sprintf("base_0x%040x", i)
			item := fmt.Sprintf(`{"id":%q,"chain":"base","contractAddress":"0x%040x","name":"Tiny Moths %d","slug":"tiny-moths-%d","image":"https://img.sim.marketd.test/c/%d.png","banner":"https://img.sim.marketd.test/b/%d.png","description":"A simulated collection of 100 tokens on base.","tokenStandard":"ERC721","royaltyBps":621,"stats":{"floor":{"raw":"1651000000709810103","decimal":1.65100000070981,"currency":"ETH","usd":null},"volumeAllTime":9998.5,"supply":100,"owners":51}}`, id, i, i, i, i, i)
			var entries []BrowseEntry
			for _, sort := range []readmodel.Sort{readmodel.SortVolume, readmodel.SortFloor, readmodel.SortRecent} {
				for _, chain := range []readmodel.Chain{"", readmodel.Base} {
					entries = append(entries, BrowseEntry{Sort: sort, Chain: chain, Present: true, Value: float64(i)})
				}
			}
			tx.SetBrowse(id, entries, []byte(item))
		}
		return nil
	}))
	b.Run("uncached", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s.cache.invalidate(nil, false, true, false, nil)
			p, err := s.Browse(ctx, readmodel.SortVolume, "", "", 100)
			if err != nil || len(p.Items) != 100 {
				b.Fatal(err, len(p.Items))
			}
		}
	})
	b.Run("cached", func(b *testing.B) {
		_, err := s.Browse(ctx, readmodel.SortVolume, "", "", 100)
		require.NoError(b, err)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.Browse(ctx, readmodel.SortVolume, "", "", 100); err != nil {
				b.Fatal(err)
			}
		}
	})
}

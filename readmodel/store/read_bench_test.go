package store

import (
	"context"
	"testing"

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
		tx.PutListings(id, render.ListingsView{Version: 1, Items: [][]byte{[]byte(`{}`)}, ExpiresAt: []int64{0}})
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

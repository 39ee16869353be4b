package ingest

import (
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/marketd/marketd/readmodel"
)

// mutate sets every settable field of v (a struct) in turn to a non-zero
// value and reports whether hash noticed each change.
func everyFieldCounts(t *testing.T, base any, hash func(v any) [16]byte) {
	t.Helper()
	rv := reflect.ValueOf(base).Elem()
	before := hash(base)
	for i := 0; i < rv.NumField(); i++ {
		f := rv.Field(i)
		name := rv.Type().Field(i).Name
		saved := reflect.New(f.Type()).Elem()
		saved.Set(f)
		switch f.Kind() {
		case reflect.String:
			f.SetString("changed")
		case reflect.Bool:
			f.SetBool(!f.Bool())
		case reflect.Pointer:
			switch f.Type().Elem() {
			case reflect.TypeOf(time.Time{}):
				ts := time.Unix(99, 0)
				f.Set(reflect.ValueOf(&ts))
			case reflect.TypeOf(int64(0)):
				n := int64(7)
				f.Set(reflect.ValueOf(&n))
			case reflect.TypeOf(readmodel.ListingRow{}):
				f.Set(reflect.ValueOf(&readmodel.ListingRow{PriceRaw: "1"}))
			default:
				t.Fatalf("field %s: unhandled pointer type", name)
			}
		case reflect.Struct:
			f.Set(reflect.ValueOf(time.Unix(42, 0)))
		default:
			t.Fatalf("field %s: unhandled kind %s", name, f.Kind())
		}
		assert.NotEqual(t, before, hash(base), "field %s must change the hash", name)
		f.Set(saved)
	}
	assert.Equal(t, before, hash(base))
}

func TestBulkHashesCoverEveryField(t *testing.T) {
	poll := time.Unix(1000, 0)
	t.Run("listing", func(t *testing.T) {
		r := &readmodel.ListingRow{}
		everyFieldCounts(t, r, func(v any) [16]byte { return hashListings([]readmodel.ListingRow{*v.(*readmodel.ListingRow)}, poll) })
	})
	t.Run("token", func(t *testing.T) {
		d := &readmodel.TokenDoc{}
		everyFieldCounts(t, d, func(v any) [16]byte { return hashTokens([]readmodel.TokenDoc{*v.(*readmodel.TokenDoc)}, 1, poll) })
	})
	t.Run("bucket count", func(t *testing.T) {
		docs := []readmodel.TokenDoc{{TokenID: "1"}}
		assert.NotEqual(t, hashTokens(docs, 1, poll), hashTokens(docs, 2, poll), "a new bucket count republishes the bucket")
	})
	t.Run("poll-time timestamp does not count", func(t *testing.T) {
		a := []readmodel.ListingRow{{PriceRaw: "1", Timestamp: poll}}
		b := []readmodel.ListingRow{{PriceRaw: "1", Timestamp: poll.Add(time.Minute)}}
		assert.Equal(t, hashListings(a, poll), hashListings(b, poll.Add(time.Minute)))
	})
}

// TestBulkHashesAcrossFlushes checks the streamed digest on pages longer
// than the hasher's buffer: a change in any row, before or after a flush,
// changes it, and equal pages hash equal on a reused hasher.
func TestBulkHashesAcrossFlushes(t *testing.T) {
	poll := time.Unix(1000, 0)
	rows := make([]readmodel.ListingRow, 300) // about 20 flushes
	for i := range rows {
		rows[i] = readmodel.ListingRow{TokenID: strconv.Itoa(i), PriceRaw: "1000000", Seller: "0xseller", Marketplace: "sim", OrderID: "order-" + strconv.Itoa(i)}
	}
	base := hashListings(rows, poll)
	for _, i := range []int{0, 1, 150, 298, 299} {
		t.Run("row "+strconv.Itoa(i), func(t *testing.T) {
			changed := append([]readmodel.ListingRow(nil), rows...)
			changed[i].PriceRaw = "1000001"
			assert.NotEqual(t, base, hashListings(changed, poll))
			assert.Equal(t, base, hashListings(rows, poll), "a reused hasher starts clean")
		})
	}
	t.Run("a row moved across a flush", func(t *testing.T) {
		// The same bytes split differently must not collide with a page
		// whose rows differ: fields are terminated, rows too.
		short := append([]readmodel.ListingRow(nil), rows[:299]...)
		assert.NotEqual(t, base, hashListings(short, poll))
	})
	docs := make([]readmodel.TokenDoc, 300)
	for i := range docs {
		docs[i] = readmodel.TokenDoc{TokenID: strconv.Itoa(i), Name: "Token " + strconv.Itoa(i), OwnerAddress: "0xowner"}
	}
	tb := hashTokens(docs, 1, poll)
	docs[250].OwnerAddress = "0xother"
	assert.NotEqual(t, tb, hashTokens(docs, 1, poll), "a token after the first flush counts")
}

// BenchmarkHashListings hashes one collection's page of 30 listings (the
// simulator's mean), the change check ingest runs on every collection
// every cycle.
func BenchmarkHashListings(b *testing.B) {
	poll := time.Unix(1000, 0)
	rows := make([]readmodel.ListingRow, 30)
	for i := range rows {
		rows[i] = readmodel.ListingRow{Chain: "ethereum", ContractAddress: "0x95dc0e0763d8cf0b8084d07991dcc1176e286a11", TokenID: strconv.Itoa(i),
			PriceRaw: "16614000000730570453", Seller: "0x8e8f0500b74c8f81342a3503e51a926983ffaa7d", Marketplace: "sim", Status: "active", OrderID: "order-" + strconv.Itoa(i)}
	}
	b.ReportAllocs()
	for b.Loop() {
		hashListings(rows, poll)
	}
}

// BenchmarkHashTokens hashes one bucket of 100 tokens, half with an
// overlay listing.
func BenchmarkHashTokens(b *testing.B) {
	poll := time.Unix(1000, 0)
	docs := make([]readmodel.TokenDoc, 100)
	rank := int64(7)
	for i := range docs {
		docs[i] = readmodel.TokenDoc{Chain: "ethereum", ContractAddress: "0x95dc0e0763d8cf0b8084d07991dcc1176e286a11", TokenID: strconv.Itoa(i),
			CollectionID: "ethereum_0x95dc0e0763d8cf0b8084d07991dcc1176e286a11", Name: "Token " + strconv.Itoa(i), RarityRank: &rank,
			OwnerAddress: "0x8e8f0500b74c8f81342a3503e51a926983ffaa7d", LastSaleRaw: "16614000000730570453"}
		if i%2 == 0 {
			docs[i].Overlay = &readmodel.ListingRow{Chain: "ethereum", ContractAddress: docs[i].ContractAddress, TokenID: docs[i].TokenID,
				PriceRaw: "16614000000730570453", Seller: docs[i].OwnerAddress, Marketplace: "sim", Status: "active", Timestamp: poll, OrderID: "order-" + strconv.Itoa(i)}
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		hashTokens(docs, 4, poll)
	}
}

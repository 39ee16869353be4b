package ingest

import (
	"reflect"
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

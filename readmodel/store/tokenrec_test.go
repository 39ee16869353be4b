package store

import (
	"encoding/hex"
	"math/rand"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/internal/jsontest"
	"github.com/marketd/marketd/readmodel"
)

// sampleTokenDoc is a document as the simulator's mirror sends it: its
// overlay listing repeats the document's chain, address, token id,
// collection and owner.
func sampleTokenDoc() readmodel.TokenDoc {
	exp := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	rank := int64(17)
	cid := "abstract_0x00d4c4f92c531aff8ebfa8ea4ebc50b7dd467876"
	addr := "0x00d4c4f92c531aff8ebfa8ea4ebc50b7dd467876"
	owner := "0xd2e5126673172d95522b3ad6c878ed883e7cac28"
	return readmodel.TokenDoc{
		Chain: readmodel.Abstract, ContractAddress: addr, TokenID: "1", CollectionID: cid,
		Name: "Tiny Apes #1", Image: "https://img.sim.marketd.test/60/0.png", RarityRank: &rank,
		OwnerAddress: owner,
		Overlay: &readmodel.ListingRow{
			Chain: readmodel.Abstract, ContractAddress: addr, TokenID: "1", CollectionID: cid,
			PriceRaw: "27567678000519850896", Seller: owner, Marketplace: "opensea", Status: readmodel.StatusActive,
			ExpiresAt: &exp, Timestamp: time.Date(2026, 11, 22, 20, 40, 17, 0, time.UTC), OrderID: "0xabc",
		},
		LastSaleRaw: "12000000000000000000",
	}
}

// TestTokenRecordRoundTrip: a record decodes to exactly the document and
// observation time it was built from, for random documents (every field,
// strings of any bytes, zero and nil times and pointers) and for the
// common shape whose overlay repeats the document; its header carries the
// bucket and the xxhash of the document's encoding.
func TestTokenRecordRoundTrip(t *testing.T) {
	r := rand.New(rand.NewSource(20261123))
	cases := map[string]func() (readmodel.TokenDoc, time.Time){
		"simulator shape": func() (readmodel.TokenDoc, time.Time) {
			return sampleTokenDoc(), time.Date(2026, 11, 22, 21, 9, 46, 597801287, time.UTC)
		},
		"no overlay": func() (readmodel.TokenDoc, time.Time) {
			d := sampleTokenDoc()
			d.Overlay, d.RarityRank = nil, nil
			return d, time.Unix(0, 1).UTC()
		},
		"zero times": func() (readmodel.TokenDoc, time.Time) {
			d := sampleTokenDoc()
			d.Overlay.Timestamp = time.Time{}
			d.Overlay.ExpiresAt = new(time.Time)
			return d, time.Time{}
		},
		"before 1970": func() (readmodel.TokenDoc, time.Time) {
			d := sampleTokenDoc()
			d.Overlay.Timestamp = time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC)
			return d, time.Date(1969, 12, 31, 23, 59, 59, 999999999, time.UTC)
		},
		"random": func() (readmodel.TokenDoc, time.Time) {
			var d readmodel.TokenDoc
			var at time.Time
			jsontest.Fill(r, reflect.ValueOf(&d).Elem())
			jsontest.Fill(r, reflect.ValueOf(&at).Elem())
			return d, at
		},
	}
	for name, gen := range cases {
		t.Run(name, func(t *testing.T) {
			for i := 0; i < 2000; i++ {
				doc, at := gen()
				in := &TokenRecord{Bucket: r.Uint32(), Version: r.Uint64(), ObservedAt: at, Doc: doc}
				rec := EncodeTokenRecord(in)
				h, b, ok := tokenRecordHead(rec)
				require.True(t, ok)
				assert.Equal(t, in.Bucket, b)
				assert.Equal(t, in.Hash, h)
				assert.Equal(t, xxhash.Sum64(appendTokenDoc(nil, &doc)), h)
				assert.Equal(t, h, TokenDocHash(&doc))
				got, err := DecodeTokenRecord(rec)
				require.NoError(t, err)
				assert.Equal(t, string(appendTokenDoc(nil, &doc)), got.doc, "a decoded record keeps its document's encoding")
				got.doc = ""
				require.Equal(t, in, got)
				// A record hashed first (the projector's path) and one
				// re-encoded from a decoded record write the same bytes.
				hashed := &TokenRecord{Bucket: in.Bucket, Version: in.Version, ObservedAt: at, Doc: doc}
				assert.Equal(t, h, hashed.HashDoc())
				assert.Equal(t, rec, EncodeTokenRecord(hashed))
				again, err := DecodeTokenRecord(rec)
				require.NoError(t, err)
				assert.Equal(t, rec, EncodeTokenRecord(again))
			}
		})
	}
}

// TestTokenRecordHash: the hash changes with every field of the document
// (each one is a reason to re-render the view) and not with the
// observation time or the bucket.
func TestTokenRecordHash(t *testing.T) {
	base := sampleTokenDoc()
	at := time.Date(2026, 11, 22, 21, 0, 0, 0, time.UTC)
	want := TokenDocHash(&base)
	same := &TokenRecord{Bucket: 2, Version: 3, ObservedAt: at.Add(time.Hour), Doc: base}
	EncodeTokenRecord(same)
	assert.Equal(t, want, same.Hash, "observation time, bucket and version are not the document")

	other := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	rank := int64(18)
	changes := map[string]func(d *readmodel.TokenDoc){
		"chain":                func(d *readmodel.TokenDoc) { d.Chain = readmodel.Ink },
		"name":                 func(d *readmodel.TokenDoc) { d.Name += "!" },
		"image":                func(d *readmodel.TokenDoc) { d.Image = "" },
		"rarity":               func(d *readmodel.TokenDoc) { d.RarityRank = &rank },
		"rarity absent":        func(d *readmodel.TokenDoc) { d.RarityRank = nil },
		"owner":                func(d *readmodel.TokenDoc) { d.OwnerAddress = "0x01" },
		"custody":              func(d *readmodel.TokenDoc) { d.InCustody = true },
		"custody label":        func(d *readmodel.TokenDoc) { d.CustodyLabel = "escrow" },
		"overlay gone":         func(d *readmodel.TokenDoc) { d.Overlay = nil },
		"overlay price":        func(d *readmodel.TokenDoc) { d.Overlay.PriceRaw = "1" },
		"overlay seller":       func(d *readmodel.TokenDoc) { d.Overlay.Seller = "0x02" },
		"overlay mint":         func(d *readmodel.TokenDoc) { d.Overlay.Mint = "1" },
		"overlay token":        func(d *readmodel.TokenDoc) { d.Overlay.TokenID = "" },
		"overlay status":       func(d *readmodel.TokenDoc) { d.Overlay.Status = readmodel.StatusCancelled },
		"overlay expiry":       func(d *readmodel.TokenDoc) { d.Overlay.ExpiresAt = &other },
		"overlay expiry none":  func(d *readmodel.TokenDoc) { d.Overlay.ExpiresAt = nil },
		"overlay expiry zero":  func(d *readmodel.TokenDoc) { d.Overlay.ExpiresAt = new(time.Time) },
		"overlay timestamp ns": func(d *readmodel.TokenDoc) { d.Overlay.Timestamp = d.Overlay.Timestamp.Add(1) },
		"overlay order":        func(d *readmodel.TokenDoc) { d.Overlay.OrderID = "0xabd" },
		"overlay tx":           func(d *readmodel.TokenDoc) { d.Overlay.Tx = "0x03" },
		"overlay buyer total":  func(d *readmodel.TokenDoc) { d.Overlay.BuyerTotalRaw = "5" },
		"last sale":            func(d *readmodel.TokenDoc) { d.LastSaleRaw = "" },
	}
	for name, change := range changes {
		t.Run(name, func(t *testing.T) {
			d := sampleTokenDoc()
			change(&d)
			assert.NotEqual(t, want, TokenDocHash(&d))
		})
	}
}

// TestTokenRecordCorrupt: a damaged record is an error, never a panic or
// a wrong document: every truncation of a record fails, and so does a
// record with bytes after its end.
func TestTokenRecordCorrupt(t *testing.T) {
	doc := sampleTokenDoc()
	rec := EncodeTokenRecord(&TokenRecord{Bucket: 3, ObservedAt: time.Date(2026, 11, 22, 21, 0, 0, 0, time.UTC), Doc: doc})
	for n := 0; n < len(rec); n++ {
		_, err := DecodeTokenRecord(rec[:n])
		assert.ErrorIs(t, err, errCorruptTokenRecord, "truncated to %d of %d bytes", n, len(rec))
	}
	_, err := DecodeTokenRecord(append(append([]byte(nil), rec...), 0))
	assert.ErrorIs(t, err, errCorruptTokenRecord, "trailing byte")
	_, _, ok := tokenRecordHead(rec[:tokenRecordHeader-1])
	assert.False(t, ok, "a record shorter than its header")
}

// FuzzTokenRecord: decoding arbitrary bytes never panics, and whatever
// decodes re-encodes to a record that decodes to the same value.
func FuzzTokenRecord(f *testing.F) {
	doc := sampleTokenDoc()
	f.Add(EncodeTokenRecord(&TokenRecord{Bucket: 3, ObservedAt: time.Date(2026, 11, 22, 21, 0, 0, 0, time.UTC), Doc: doc}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, rec []byte) {
		got, err := DecodeTokenRecord(rec)
		if err != nil {
			return
		}
		back, err := DecodeTokenRecord(EncodeTokenRecord(got))
		require.NoError(t, err)
		require.Equal(t, got, back)
	})
}

// BenchmarkTokenRecord encodes and decodes one token record with an
// overlay listing: the projector writes one per token it applies, and a
// token read that misses the cache decodes one.
func BenchmarkTokenRecord(b *testing.B) {
	d := sampleTokenDoc()
	observed := time.Unix(1_790_000_000, 0).UTC()
	r := &TokenRecord{Bucket: 3, ObservedAt: observed, Doc: d}
	rec := EncodeTokenRecord(r)
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			EncodeTokenRecord(r)
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := DecodeTokenRecord(rec); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestTokenRecordBytes pins the record layout: a change to the encoding
// rules must come with a store.Schema bump (a change to readmodel.TokenDoc's
// or ListingRow's Fields moves the recorded schema by itself, and changes
// these bytes: re-pin them).
func TestTokenRecordBytes(t *testing.T) {
	d := sampleTokenDoc()
	const want = "2161627374726163745200d4c4f92c531aff8ebfa8ea4ebc50b7dd4678760531cd0161627374726163745f3078303064346334663932633533316166663865626661386561346562633530623764643436373837363154696e792041706573202331950168747470733a2f2f696d672e73696d2e6d61726b6574642e746573742f36302f302e706e67012252d2e5126673172d95522b3ad6c878ed883e7cac280000010000000100531b384c4e000513550860001d6f70656e736561196163746976650280b8f0b00d0002e2cc9ab00d001530786162630000530c000000000000000000"
	assert.Equal(t, want, hex.EncodeToString(appendTokenDoc(nil, &d)))
}

// TestRecordStrings: every string a record holds decodes to itself,
// hex and decimal ones packed to about half their length, and those that
// would not decode back byte for byte (upper-case hex, odd digits, leading
// zeros) stored as they are.
func TestRecordStrings(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    string
		size int // encoded bytes, the length prefix included
	}{
		{name: "empty", s: "", size: 1},
		{name: "evm address", s: "0x00d4c4f92c531aff8ebfa8ea4ebc50b7dd467876", size: 21},
		{name: "order id", s: "0x" + strings.Repeat("ab", 32), size: 34},
		{name: "upper-case hex", s: "0xABCD", size: 7},
		{name: "odd hex", s: "0xabc", size: 6},
		{name: "bare 0x", s: "0x", size: 3},
		{name: "long token id", s: "10735706587867931589157570218827616196150644915857155268470983456425", size: 36},
		{name: "odd digits", s: "12345", size: 4},
		{name: "leading zero", s: "01234", size: 6},
		{name: "short number", s: "123", size: 4},
		{name: "zero", s: "0", size: 2},
		{name: "base58 mint", s: "7xKXtg2CW87d97TXJSDpbD5jBkheTqA83TZRuJosgAsU", size: 46},
		{name: "text", s: "Neon Frogs #62", size: 15},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := appendStr(nil, tc.s, "\x00")
			assert.Len(t, b, tc.size)
			r := recReader{s: string(b)}
			assert.Equal(t, tc.s, r.str("\x00"))
			assert.False(t, r.bad)
			assert.Equal(t, len(b), r.i, "read to its end")
		})
	}
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{name: "decimal with a leading zero", b: []byte{4<<2 | strDecimal + 1, 1, 23}},
		{name: "decimal pair over 99", b: []byte{4<<2 | strDecimal + 1, 12, 100}},
		{name: "last odd digit over 9", b: []byte{3<<2 | strDecimal + 1, 12, 10}},
		{name: "unknown form", b: []byte{1<<2 | 3 + 1, 'a'}},
		{name: "empty hex", b: []byte{strHex + 1}},
		{name: "longer than the record", b: []byte{9<<2 | strHex + 1, 1, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := recReader{s: string(tc.b)}
			r.str("")
			assert.True(t, r.bad)
		})
	}
}

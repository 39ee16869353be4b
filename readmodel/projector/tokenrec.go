package projector

import (
	"encoding/binary"
	"errors"
	"math"
	"sync"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/marketd/marketd/readmodel"
)

// A token's stored input (store.InTokenDoc) is one record per token:
//
//	hash    8 bytes  xxhash64 of the encoded document (big endian)
//	bucket  4 bytes  the bucket whose message wrote it (big endian)
//	body             the observation time, then the document
//
// The hash decides whether a republished bucket's token needs a new view,
// the bucket whether a bucket that no longer lists it may delete it, and
// the body is what a later re-render (an order-book change, a sweep) reads.
// The body is a compact binary encoding, not JSON: at 10 million tokens
// the records are a third of what a node writes, and JSON made them about
// twice as large and their encoding and hashing about 4% of a replay's
// CPU. The fields and their order are readmodel.TokenDoc's Fields (and
// ListingRow's for the overlay): the encoder and decoder below walk them.
// The layout is the store's schema (store.Schema): a change to it, or to
// those Fields, needs a schema bump (TestTokenRecordBytes pins it).
//
// Encoding rules (decodeTokenBody checks every length against the record,
// so a damaged record is an error, never a panic):
//   - a string is uvarint(len+1) and its bytes, or uvarint 0 for "the same
//     as its reference": the document's own chain, address, token id and
//     collection for the fields of its overlay listing (which repeat
//     them), "" elsewhere;
//   - a time is one tag byte (0 no time, for a nil pointer; 1 the zero
//     time; 2 a time), then for 2 varint(Unix seconds) and
//     uvarint(nanoseconds); times decode as UTC (normalized rows are UTC
//     and views format times as UTC);
//   - a *int64 is a tag byte (0 nil, 1 set) and a varint; a bool a byte.
const tokenRecordHeader = 12

type tokenRecord struct {
	hash   uint64
	bucket uint32
	body   []byte
}

// errCorruptTokenRecord is returned for a token record that does not
// decode.
var errCorruptTokenRecord = errors.New("projector: corrupt token record")

// newTokenRecord returns the record of document d seen at observed in
// bucket, and the hash of d's encoding.
func newTokenRecord(bucket uint32, observed time.Time, d *readmodel.TokenDoc) ([]byte, uint64) {
	b := make([]byte, tokenRecordHeader, tokenRecordHeader+320)
	binary.BigEndian.PutUint32(b[8:], bucket)
	b = appendTime(b, &observed)
	start := len(b)
	b = appendTokenDoc(b, d)
	sum := xxhash.Sum64(b[start:])
	binary.BigEndian.PutUint64(b, sum)
	return b, sum
}

// parseTokenRecord splits a stored record; ok is false for nil or a record
// too short to hold its header.
func parseTokenRecord(raw []byte) (tokenRecord, bool) {
	if len(raw) < tokenRecordHeader {
		return tokenRecord{}, false
	}
	return tokenRecord{
		hash:   binary.BigEndian.Uint64(raw),
		bucket: binary.BigEndian.Uint32(raw[8:]),
		body:   raw[tokenRecordHeader:],
	}, true
}

// appendTokenDoc appends the encoding of d.
func appendTokenDoc(b []byte, d *readmodel.TokenDoc) []byte {
	e := recEncoders.Get().(*recEncoder)
	e.b, e.doc = b, d
	d.Fields(e)
	b = e.b
	*e = recEncoder{}
	recEncoders.Put(e)
	return b
}

// recEncoders pool the encoders: handed to Fields as an interface, an
// encoder would otherwise be allocated per record.
var recEncoders = sync.Pool{New: func() any { return new(recEncoder) }}

// decodeTokenBody decodes a record's body. The strings of the result share
// one allocation.
func decodeTokenBody(body []byte) (*tokenInput, error) {
	// One allocation holds the result and its decoder (handed to Fields as
	// an interface, the decoder would otherwise be allocated apart).
	td := new(struct {
		t tokenInput
		r recDecoder
	})
	t, r := &td.t, &td.r
	*r = recDecoder{recReader: recReader{s: string(body)}, doc: &t.Doc}
	if at, ok := r.time(); ok {
		t.ObservedAt = *at
	} else {
		r.fail()
	}
	t.Doc.Fields(r)
	if r.bad || r.i != len(r.s) {
		return nil, errCorruptTokenRecord
	}
	return t, nil
}

// overlayRef is the reference of an overlay listing's field: the value
// that field takes when it repeats the document's (then it is written as
// uvarint 0).
func overlayRef(d *readmodel.TokenDoc, name string) string {
	switch name {
	case "chain":
		return string(d.Chain)
	case "contractAddress":
		return d.ContractAddress
	case "tokenId", "mint":
		return d.TokenID
	case "collectionId":
		return d.CollectionID
	case "seller":
		return d.OwnerAddress
	}
	return ""
}

// recEncoder writes a token document's fields (readmodel.FieldVisitor).
type recEncoder struct {
	b       []byte
	doc     *readmodel.TokenDoc
	overlay bool // inside the document's overlay listing
}

func (e *recEncoder) Str(name string, p *string) {
	ref := ""
	if e.overlay {
		ref = overlayRef(e.doc, name)
	}
	e.b = appendStr(e.b, *p, ref)
}
func (e *recEncoder) Bool(_ string, p *bool)          { e.b = appendBool(e.b, *p) }
func (e *recEncoder) Int64Ptr(_ string, p **int64)    { e.b = appendInt(e.b, *p) }
func (e *recEncoder) Time(_ string, p *time.Time)     { e.b = appendTime(e.b, p) }
func (e *recEncoder) TimePtr(_ string, p **time.Time) { e.b = appendTime(e.b, *p) }
func (e *recEncoder) Listing(_ string, p **readmodel.ListingRow) {
	if *p == nil {
		e.b = append(e.b, 0)
		return
	}
	e.b = append(e.b, 1)
	e.overlay = true
	(*p).Fields(e)
	e.overlay = false
}

// recDecoder reads a token document's fields (readmodel.FieldVisitor).
type recDecoder struct {
	recReader
	doc     *readmodel.TokenDoc
	overlay bool
}

func (r *recDecoder) Str(name string, p *string) {
	ref := ""
	if r.overlay {
		ref = overlayRef(r.doc, name)
	}
	*p = r.str(ref)
}
func (r *recDecoder) Bool(_ string, p *bool)          { *p = r.bool() }
func (r *recDecoder) Int64Ptr(_ string, p **int64)    { *p = r.int() }
func (r *recDecoder) TimePtr(_ string, p **time.Time) { *p, _ = r.time() }
func (r *recDecoder) Time(_ string, p *time.Time) {
	if ts, ok := r.time(); ok {
		*p = *ts
	} else {
		r.fail()
	}
}
func (r *recDecoder) Listing(_ string, p **readmodel.ListingRow) {
	switch r.byte() {
	case 0:
	case 1:
		o := new(readmodel.ListingRow)
		r.overlay = true
		o.Fields(r)
		r.overlay = false
		*p = o
	default:
		r.fail()
	}
}

func appendStr(b []byte, s, ref string) []byte {
	if s == ref {
		return append(b, 0)
	}
	b = binary.AppendUvarint(b, uint64(len(s))+1)
	return append(b, s...)
}

func appendTime(b []byte, t *time.Time) []byte {
	switch {
	case t == nil:
		return append(b, 0)
	case t.IsZero():
		return append(b, 1)
	}
	b = append(b, 2)
	b = binary.AppendVarint(b, t.Unix())
	return binary.AppendUvarint(b, uint64(t.Nanosecond()))
}

func appendInt(b []byte, v *int64) []byte {
	if v == nil {
		return append(b, 0)
	}
	return binary.AppendVarint(append(b, 1), *v)
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

// recReader reads a record body; the first error sticks (bad) and every
// later read returns a zero value.
type recReader struct {
	s   string
	i   int
	bad bool
}

func (r *recReader) fail() { r.bad, r.i = true, len(r.s) }

func (r *recReader) byte() byte {
	if r.bad || r.i >= len(r.s) {
		r.fail()
		return 0
	}
	c := r.s[r.i]
	r.i++
	return c
}

func (r *recReader) uvarint() uint64 {
	var v uint64
	for shift := uint(0); shift < 64; shift += 7 {
		c := r.byte()
		if r.bad {
			return 0
		}
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return v
		}
	}
	r.fail()
	return 0
}

func (r *recReader) varint() int64 {
	u := r.uvarint()
	v := int64(u >> 1)
	if u&1 != 0 {
		v = ^v
	}
	return v
}

func (r *recReader) str(ref string) string {
	n := r.uvarint()
	if r.bad {
		return ""
	}
	if n == 0 {
		return ref
	}
	n--
	if n > uint64(len(r.s)-r.i) {
		r.fail()
		return ""
	}
	s := r.s[r.i : r.i+int(n)]
	r.i += int(n)
	return s
}

// time reads a time; ok is false for "no time" (and after an error).
func (r *recReader) time() (*time.Time, bool) {
	switch r.byte() {
	case 0:
		return nil, false
	case 1:
		return new(time.Time), true
	case 2:
		sec, nsec := r.varint(), r.uvarint()
		if r.bad || nsec >= 1e9 || sec > math.MaxInt64>>1 || sec < math.MinInt64>>1 {
			r.fail()
			return nil, false
		}
		t := time.Unix(sec, int64(nsec)).UTC()
		return &t, true
	}
	r.fail()
	return nil, false
}

func (r *recReader) int() *int64 {
	switch r.byte() {
	case 0:
		return nil
	case 1:
		v := r.varint()
		if r.bad {
			return nil
		}
		return &v
	}
	r.fail()
	return nil
}

func (r *recReader) bool() bool {
	switch r.byte() {
	case 0:
		return false
	case 1:
		return true
	}
	r.fail()
	return false
}

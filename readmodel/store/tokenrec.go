package store

import (
	"encoding/binary"
	"hash/fnv"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/marketd/marketd/readmodel"
)

// A token is stored as one record (key i/td/<token key>), from which the
// store renders its TokenDetail on read (Store.Token):
//
//	hash     8 bytes  xxhash64 of the encoded document (big endian)
//	bucket   4 bytes  the bucket whose message wrote the document (big endian)
//	version  8 bytes  the view version of the write (big endian)
//	body              the observation time, then the document
//
// The hash decides whether a republished bucket's token changed, the
// bucket whether a bucket that no longer lists it may delete it. A
// record holds the token's document only: the native order-book rows its
// view shows (EVM only) are read from the collection's order book when
// the view is rendered (natives.go), so an order-book change writes no
// token record (schema 22).
//
// There is no stored view beside the record (schema 10): at 10,000
// collections x 100 tokens the pre-rendered view (661 bytes compressed, a
// deadline entry, and a rewrite of both whenever the view changed) was
// most of a node's bytes and a quarter of a replay's CPU, while rendering
// one on read costs a few microseconds and the cache keeps the hot ones.
//
// Encoding rules (decodeTokenBody checks every length against the record,
// so a damaged record is an error, never a panic):
//   - a string is uvarint(len+1) and its bytes, or uvarint 0 for "the same
//     as its reference": the document's own chain, address, token id and
//     collection for the fields of its listing rows (which repeat them),
//     "" elsewhere;
//   - a time is one tag byte (0 no time, for a nil pointer; 1 the zero
//     time; 2 a time), then for 2 varint(Unix seconds) and
//     uvarint(nanoseconds); times decode as UTC (normalized rows are UTC
//     and views format times as UTC);
//   - a *int64 is a tag byte (0 nil, 1 set) and a varint; a bool a byte.
const tokenRecordHeader = 20

// TokenRecord is a token's stored state.
type TokenRecord struct {
	Hash       uint64 // TokenDocHash of Doc (set by EncodeTokenRecord)
	Bucket     uint32
	Version    uint64
	ObservedAt time.Time
	Doc        readmodel.TokenDoc

	// doc is Doc's encoding when it is known (HashDoc, or the record this
	// one was decoded from); EncodeTokenRecord then copies it instead of
	// encoding Doc again. Doc must not change once it is set.
	doc string
}

// errCorruptTokenRecord is returned for a token record that does not
// decode.
var errCorruptTokenRecord = corruptRecord("token record")

// TokenDocHash is the hash a record carries for document d.
func TokenDocHash(d *readmodel.TokenDoc) uint64 {
	bp := hashBuf.Get().(*[]byte)
	b := appendTokenDoc((*bp)[:0], d)
	sum := xxhash.Sum64(b)
	*bp = b
	hashBuf.Put(bp)
	return sum
}

var hashBuf = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// HashDoc sets r.Hash to TokenDocHash(&r.Doc) and keeps the document's
// encoding for EncodeTokenRecord: the projector hashes every document of
// a tokens message to tell the changed ones, then writes those, and
// encoding each twice was about half of applying tokens. r.Doc must not
// change afterwards.
func (r *TokenRecord) HashDoc() uint64 {
	bp := hashBuf.Get().(*[]byte)
	b := appendTokenDoc((*bp)[:0], &r.Doc)
	r.Hash, r.doc = xxhash.Sum64(b), string(b)
	*bp = b
	hashBuf.Put(bp)
	return r.Hash
}

// EncodeTokenRecord encodes r, setting r.Hash.
func EncodeTokenRecord(r *TokenRecord) []byte {
	b := make([]byte, tokenRecordHeader, tokenRecordHeader+256+len(r.doc))
	binary.BigEndian.PutUint32(b[8:], r.Bucket)
	binary.BigEndian.PutUint64(b[12:], r.Version)
	b = appendTime(b, &r.ObservedAt)
	start := len(b)
	if r.doc != "" {
		b = append(b, r.doc...)
	} else {
		b = appendTokenDoc(b, &r.Doc)
	}
	r.Hash = xxhash.Sum64(b[start:])
	binary.BigEndian.PutUint64(b, r.Hash)
	return b
}

// tokenRecordHead returns a record's hash and bucket; ok is false for a
// record too short to hold its header.
func tokenRecordHead(raw []byte) (hash uint64, bucket uint32, ok bool) {
	if len(raw) < tokenRecordHeader {
		return 0, 0, false
	}
	return binary.BigEndian.Uint64(raw), binary.BigEndian.Uint32(raw[8:]), true
}

// DecodeTokenRecord decodes a stored record. Its strings share one
// allocation.
func DecodeTokenRecord(raw []byte) (*TokenRecord, error) {
	return decodeTokenRecord(string(raw))
}

// decodeTokenRecord decodes a stored record held as a string (a token
// block's records are substrings of the decoded block); the strings of
// the result share raw.
func decodeTokenRecord(raw string) (*TokenRecord, error) {
	if len(raw) < tokenRecordHeader {
		return nil, errCorruptTokenRecord
	}
	t, err := decodeTokenBody(raw[tokenRecordHeader:])
	if err != nil {
		return nil, err
	}
	t.Hash = binary.BigEndian.Uint64([]byte(raw[:8]))
	t.Bucket = binary.BigEndian.Uint32([]byte(raw[8:12]))
	t.Version = binary.BigEndian.Uint64([]byte(raw[12:20]))
	return t, nil
}

// appendTokenDoc appends the encoding of d: its fields in the order of
// readmodel.TokenDoc's Fields, the one list of them (adding a field there
// changes these bytes and needs a schema bump; TestTokenRecordBytes pins
// them).
func appendTokenDoc(b []byte, d *readmodel.TokenDoc) []byte {
	e := recEncoders.Get().(*recEncoder)
	e.b, e.doc = b, d
	d.Fields(e)
	b = e.b
	*e = recEncoder{}
	recEncoders.Put(e)
	return b
}

// appendRow appends listing row o of document d: the fields of
// readmodel.ListingRow's Fields, each that repeats the document's written
// as its reference (see rowRef).
func appendRow(b []byte, o *readmodel.ListingRow, d *readmodel.TokenDoc) []byte {
	e := recEncoders.Get().(*recEncoder)
	e.b, e.doc, e.inRow = b, d, true
	o.Fields(e)
	b = e.b
	*e = recEncoder{}
	recEncoders.Put(e)
	return b
}

// recEncoders pool the encoders: handed to Fields as an interface, an
// encoder would otherwise be allocated per record.
var recEncoders = sync.Pool{New: func() any { return new(recEncoder) }}

// decodeTokenBody decodes a record's body. The strings of the result share
// body.
func decodeTokenBody(body string) (*TokenRecord, error) {
	// One allocation holds the result and its decoder (handed to Fields as
	// an interface, the decoder would otherwise be allocated apart).
	td := new(struct {
		t TokenRecord
		r recDecoder
	})
	t, r := &td.t, &td.r
	*r = recDecoder{recReader: recReader{s: body}, doc: &t.Doc}
	if at, ok := r.time(); ok {
		t.ObservedAt = *at
	} else {
		r.fail()
	}
	start := r.i
	t.Doc.Fields(r)
	t.doc = r.s[start:r.i]
	if r.bad || r.i != len(r.s) {
		return nil, errCorruptTokenRecord
	}
	return t, nil
}

// rowRef is the reference of a listing row's field: the value that field
// takes when it repeats the document's (then it is written as uvarint 0).
func rowRef(d *readmodel.TokenDoc, name string) string {
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

// recEncoder writes a token document's or listing row's fields
// (readmodel.FieldVisitor).
type recEncoder struct {
	b     []byte
	doc   *readmodel.TokenDoc
	inRow bool // inside a listing row of the document
}

func (e *recEncoder) Str(name string, p *string) {
	ref := ""
	if e.inRow {
		ref = rowRef(e.doc, name)
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
	e.inRow = true
	(*p).Fields(e)
	e.inRow = false
}

// recDecoder reads a token document's or listing row's fields
// (readmodel.FieldVisitor).
type recDecoder struct {
	recReader
	doc   *readmodel.TokenDoc
	inRow bool
}

func (r *recDecoder) Str(name string, p *string) {
	ref := ""
	if r.inRow {
		ref = rowRef(r.doc, name)
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
		r.inRow = true
		o.Fields(r)
		r.inRow = false
		*p = o
	default:
		r.fail()
	}
}

// String forms (the low two bits of the uvarint after subtracting one;
// the rest is a length): the values of a record are mostly hex (EVM
// addresses, order ids) and decimal (token ids, raw prices), which S2, an
// LZ coder, cannot shrink; packed they take half the bytes.
const (
	strPlain   = 0 // length bytes
	strHex     = 1 // "0x" and 2*length lowercase hex digits: length bytes
	strDecimal = 2 // length decimal digits, no leading zero: two a byte
)

func appendStr(b []byte, s, ref string) []byte {
	if s == ref {
		return append(b, 0)
	}
	switch {
	case isHex(s):
		h := s[2:]
		b = binary.AppendUvarint(b, uint64(len(h)/2)<<2|strHex+1)
		for i := 0; i < len(h); i += 2 {
			b = append(b, unhex(h[i])<<4|unhex(h[i+1]))
		}
		return b
	case isDecimal(s):
		b = binary.AppendUvarint(b, uint64(len(s))<<2|strDecimal+1)
		for i := 0; i < len(s); i += 2 {
			if i+1 < len(s) {
				b = append(b, (s[i]-'0')*10+s[i+1]-'0')
			} else {
				b = append(b, s[i]-'0')
			}
		}
		return b
	}
	b = binary.AppendUvarint(b, uint64(len(s))<<2|strPlain+1)
	return append(b, s...)
}

// isHex reports whether s is "0x" and an even number (at least two) of
// lowercase hex digits: the form that decodes back to the same string.
func isHex(s string) bool {
	if len(s) < 4 || len(s)%2 != 0 || s[0] != '0' || s[1] != 'x' {
		return false
	}
	for i := 2; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// isDecimal reports whether s is at least four decimal digits without a
// leading zero.
func isDecimal(s string) bool {
	if len(s) < 4 || s[0] == '0' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func unhex(c byte) byte {
	if c <= '9' {
		return c - '0'
	}
	return c - 'a' + 10
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
	s, form, p, n := r.strHead(ref)
	if form == strPlain {
		return s
	}
	// Expanded on the stack, then copied once into the string.
	var tmp [160]byte
	out, ok := expandStr(tmp[:0], form, p, n)
	if !ok {
		r.fail()
		return ""
	}
	return string(out)
}

// strTo reads a string like str, but appends a packed one's expansion to
// dst (packed true) instead of allocating it: a decoder that collects a
// record's expansions in one buffer converts them to strings at once.
func (r *recReader) strTo(dst []byte, ref string) (out []byte, s string, packed bool) {
	s, form, p, n := r.strHead(ref)
	if form == strPlain {
		return dst, s, false
	}
	out, ok := expandStr(dst, form, p, n)
	if !ok {
		r.fail()
		return dst, "", false
	}
	return out, "", true
}

// strHead reads a string's header and bytes: a plain string (or the
// reference) is s with form strPlain; a packed one is its form, its
// packed bytes p and its length field n (see expandStr).
func (r *recReader) strHead(ref string) (s string, form uint64, p string, n uint64) {
	v := r.uvarint()
	if r.bad {
		return "", strPlain, "", 0
	}
	if v == 0 {
		return ref, strPlain, "", 0
	}
	v--
	form, n = v&3, v>>2
	size := n // bytes it takes in the record
	if form == strDecimal {
		size = (n + 1) / 2
	}
	if size > uint64(len(r.s)-r.i) || form > strDecimal || (form != strPlain && n == 0) {
		r.fail()
		return "", strPlain, "", 0
	}
	p = r.s[r.i : r.i+int(size)]
	r.i += int(size)
	return p, form, p, n
}

// expandStr appends the string packed as p in form (strHex or
// strDecimal; n is its length field) to dst; ok is false for a decimal
// that is not canonical (a digit pair over 99, or a leading zero: it
// would not encode back to these bytes).
func expandStr(dst []byte, form uint64, p string, n uint64) ([]byte, bool) {
	if form == strHex {
		const digits = "0123456789abcdef"
		dst = append(dst, '0', 'x')
		for i := 0; i < len(p); i++ {
			dst = append(dst, digits[p[i]>>4], digits[p[i]&15])
		}
		return dst, true
	}
	if p[0] == 0 || (n > 1 && p[0] < 10) {
		return dst, false
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		if 2*i+1 < int(n) {
			if c > 99 {
				return dst, false
			}
			dst = append(dst, '0'+c/10, '0'+c%10)
		} else {
			if c > 9 {
				return dst, false
			}
			dst = append(dst, '0'+c)
		}
	}
	return dst, true
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

// recordFieldsFingerprint is a hash of the names and kinds of the fields
// token and sale records walk, in their order (see schema).
func recordFieldsFingerprint() string {
	var f fieldNames
	var d readmodel.TokenDoc
	d.Overlay = new(readmodel.ListingRow)
	d.Fields(&f)
	f.b = append(f.b, '|')
	new(readmodel.SaleRow).Fields(&f)
	h := fnv.New64a()
	h.Write(f.b)
	return strconv.FormatUint(h.Sum64(), 16)
}

// fieldNames lists the fields it is handed (readmodel.FieldVisitor).
type fieldNames struct{ b []byte }

func (f *fieldNames) add(kind, name string) { f.b = append(append(append(f.b, kind...), name...), ';') }

func (f *fieldNames) Str(name string, _ *string)         { f.add("s:", name) }
func (f *fieldNames) Bool(name string, _ *bool)          { f.add("b:", name) }
func (f *fieldNames) Int64Ptr(name string, _ **int64)    { f.add("i:", name) }
func (f *fieldNames) Time(name string, _ *time.Time)     { f.add("t:", name) }
func (f *fieldNames) TimePtr(name string, _ **time.Time) { f.add("T:", name) }
func (f *fieldNames) Listing(name string, p **readmodel.ListingRow) {
	f.add("l:", name)
	(*p).Fields(f)
}

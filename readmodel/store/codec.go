package store

import (
	"encoding/binary"
	"time"

	"github.com/marketd/marketd/readmodel"
)

// Keys. Every prefix is one byte family:
//
//	v/…  views: what the API serves; the only family Digest covers
//	i/…  projection inputs (latest rows, statuses, indexes): rebuilt by replay
//	o/…  superseded listing snapshots, expiring (node-local)
//	m/…  node-local bookkeeping: applied positions, version counter, jobs
//
// Variable-length ids inside keys are length-prefixed (uvarint), so no id
// content can make one key a prefix of another's family.
var (
	pView       = []byte("v/")
	pCollection = []byte("v/c/")
	pFloor      = []byte("v/f/")
	pListings   = []byte("v/l/")
	pToken      = []byte("v/t/")
	pBrowse     = []byte("v/b/")
	pAlias      = []byte("v/a/")
	pSale       = []byte("v/s/")

	pOldListings = []byte("o/l/")

	pInput       = []byte("i/")
	pDoc         = []byte("i/d/")
	pStats       = []byte("i/st/")
	pAnalytics   = []byte("i/an/")
	pRows        = []byte("i/l/")
	pStatus      = []byte("i/p/")
	kRates       = []byte("i/r")
	pLastGood    = []byte("i/g/")
	pRegistry    = []byte("i/c/")
	pTokenDoc    = []byte("i/td/")
	pTokenBucket = []byte("i/tb/")
	_            = []byte("i/th/") // token document hashes before schema 5 (now in the document record): do not reuse
	_            = []byte("i/s/")  // sale rows, read only by USD re-renders (gone): do not reuse
	pSaleKey     = []byte("i/sk/")
	pBrowseBack  = []byte("i/bk/")
	pDeadline    = []byte("i/dl/")
	_            = []byte("i/dt/") // token deadlines before schema 3 (now inside the token view): do not reuse

	pPosition       = []byte("m/p/")
	kVersion        = []byte("m/v")
	kSchema         = []byte("m/schema")
	pDeadlines      = []byte("m/x/")
	pTokenDeadlines = []byte("m/y/")
	pJob            = []byte("m/j/")
)

func key(prefix []byte, parts ...string) []byte {
	k := append([]byte(nil), prefix...)
	for i, p := range parts {
		if i == len(parts)-1 {
			k = append(k, p...) // the last part is the key's tail: no prefix needed
			break
		}
		k = lp(k, p)
	}
	return k
}

func lp(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// enc is an append-only binary encoder for view values.
type enc struct{ b []byte }

func newEnc(version uint64) *enc {
	e := &enc{b: make([]byte, 8, 256)}
	binary.BigEndian.PutUint64(e.b, version)
	return e
}

func (e *enc) u(v uint64)     { e.b = binary.AppendUvarint(e.b, v) }
func (e *enc) i(v int64)      { e.b = binary.AppendVarint(e.b, v) }
func (e *enc) bytes(p []byte) { e.u(uint64(len(p))); e.b = append(e.b, p...) }
func (e *enc) str(s string)   { e.u(uint64(len(s))); e.b = append(e.b, s...) }
func (e *enc) flag(f bool)    { e.b = append(e.b, boolByte(f)) }
func (e *enc) timed(t readmodel.TimedBody) {
	e.flag(t.Timed)
	e.bytes(t.Head)
	e.bytes(t.Tail)
}

func boolByte(f bool) byte {
	if f {
		return 1
	}
	return 0
}

// dec reads what enc wrote; any malformed input sets bad instead of
// panicking. Returned byte slices alias the decoded buffer, which is never
// modified afterwards.
type dec struct {
	b   []byte
	bad bool
}

func newDec(v []byte) (*dec, uint64) {
	if len(v) < 8 {
		return &dec{bad: true}, 0
	}
	return &dec{b: v[8:]}, binary.BigEndian.Uint64(v)
}

func (d *dec) u() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.bad, d.b = true, nil
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *dec) i() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.bad, d.b = true, nil
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *dec) bytes() []byte {
	n := d.u()
	if d.bad || n > uint64(len(d.b)) {
		d.bad, d.b = true, nil
		return nil
	}
	p := d.b[:n:n]
	d.b = d.b[n:]
	return p
}

func (d *dec) str() string { return string(d.bytes()) }

func (d *dec) flag() bool {
	if len(d.b) < 1 {
		d.bad = true
		return false
	}
	f := d.b[0] == 1
	d.b = d.b[1:]
	return f
}

func (d *dec) timed() readmodel.TimedBody {
	t := readmodel.TimedBody{Timed: d.flag()}
	t.Head = d.bytes()
	t.Tail = d.bytes()
	if len(t.Tail) == 0 {
		t.Tail = nil
	}
	return t
}

func encodeCollection(v readmodel.CollectionView) []byte {
	e := newEnc(v.Version)
	e.str(string(v.Chain))
	e.flag(v.HasContract)
	e.bytes(v.Detail)
	return e.b
}

func decodeCollection(id string, b []byte) (readmodel.CollectionView, bool) {
	d, ver := newDec(b)
	v := readmodel.CollectionView{ID: id, Version: ver}
	v.Chain = readmodel.Chain(d.str())
	v.HasContract = d.flag()
	v.Detail = d.bytes()
	return v, !d.bad
}

func encodeFloor(v readmodel.FloorView) []byte {
	e := newEnc(v.Version)
	e.timed(v.Body)
	var after int64
	if !v.FallbackAfter.IsZero() {
		after = v.FallbackAfter.UnixNano()
	}
	e.i(after)
	e.timed(v.Fallback)
	return e.b
}

func decodeFloor(b []byte) (readmodel.FloorView, bool) {
	d, ver := newDec(b)
	v := readmodel.FloorView{Version: ver}
	v.Body = d.timed()
	if after := d.i(); after != 0 {
		v.FallbackAfter = time.Unix(0, after).UTC()
	}
	v.Fallback = d.timed()
	return v, !d.bad
}

func encodeListings(v readmodel.ListingsView) []byte {
	e := newEnc(v.Version)
	e.flag(v.AllFailed)
	e.u(uint64(len(v.StaleSources)))
	for _, s := range v.StaleSources {
		e.str(string(s))
	}
	e.u(uint64(len(v.Items)))
	for i, it := range v.Items {
		var exp int64
		if i < len(v.ExpiresAt) {
			exp = v.ExpiresAt[i]
		}
		e.i(exp)
		e.bytes(it)
	}
	return e.b
}

func decodeListings(b []byte) (readmodel.ListingsView, bool) {
	d, ver := newDec(b)
	v := readmodel.ListingsView{Version: ver}
	v.AllFailed = d.flag()
	ns := d.u()
	if ns > 8 {
		return v, false
	}
	for j := uint64(0); j < ns && !d.bad; j++ {
		v.StaleSources = append(v.StaleSources, readmodel.Source(d.str()))
	}
	n := d.u()
	if n > uint64(len(d.b)) {
		return v, false
	}
	v.Items = make([][]byte, 0, n)
	v.ExpiresAt = make([]int64, 0, n)
	for j := uint64(0); j < n && !d.bad; j++ {
		v.ExpiresAt = append(v.ExpiresAt, d.i())
		v.Items = append(v.Items, d.bytes())
	}
	return v, !d.bad
}

// encodeToken stores a token view with its deadline (unix ms, 0 none): the
// deadline index is kept in step from the old value PutToken reads anyway.
func encodeToken(v readmodel.TokenView, deadline int64) []byte {
	e := newEnc(v.Version)
	e.timed(v.Body)
	e.i(deadline)
	return e.b
}

// tokenDeadline returns the deadline stored with an encoded token view.
func tokenDeadline(b []byte) int64 {
	d, _ := newDec(b)
	d.timed()
	dl := d.i()
	if d.bad {
		return 0
	}
	return dl
}

func decodeToken(b []byte) (readmodel.TokenView, bool) {
	d, ver := newDec(b)
	v := readmodel.TokenView{Version: ver}
	v.Body = d.timed()
	return v, !d.bad
}

// plain wraps a payload that has no version of its own (browse entries,
// sale items, aliases): its header is an FNV-1a hash of the content, so a
// page's version still changes when such an item is re-rendered (a summary
// edit, a sale's USD after a rates change). Digest skips the header.
func plain(p []byte) []byte {
	b := make([]byte, 8, 8+len(p))
	binary.BigEndian.PutUint64(b, pageVersionMix(14695981039346656037, p))
	return append(b, p...)
}

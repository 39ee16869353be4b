package store

import (
	"encoding/binary"
	"sync"

	"github.com/klauspost/compress/s2"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/render"
)

// Keys. Every prefix is one byte family:
//
//	v/…  views: what the API serves; the only family Digest covers
//	i/…  projection inputs (latest rows, statuses, indexes): rebuilt by replay
//	o/…  superseded listing snapshots, expiring (node-local)
//	m/…  node-local bookkeeping: applied positions, version counter, jobs
//	e/…  the change feeds, node-local history (events.go, market.go)
//	h/…  other node-local history: view modules' records (module.go; the
//	     floor history is h/f/, render/floorhistory.go)
//	v/m/… view modules' records that a replay rebuilds (module.go)
//
// Variable-length ids inside keys are length-prefixed (uvarint), so no id
// content can make one key a prefix of another's family.
var (
	pView       = []byte("v/")
	pCollection = []byte("v/c/")
	pFloor      = []byte("v/f/")
	pListings   = []byte("v/l/")
	pToken      = []byte("v/t/") // token views before schema 10; now the cache key (and digest key) of a token rendered on read
	pBrowse     = []byte("v/b/")
	pBrowseItem = []byte("v/bi/") // a collection's summary, once for all its browse entries (schema 20)
	pAlias      = []byte("v/a/")
	pSale       = []byte("v/s/")

	pOldListings = []byte("o/l/")

	pMarket     = []byte("e/m/") // the market's change feed: its blocks (market.go)
	kMarketHead = []byte("e/n")  // and its head

	pInput        = []byte("i/")
	pState        = []byte("i/cs/") // a collection's state, its small record (state.go)
	pListingState = []byte("i/cl/") // a collection's state, its listings record (state.go)
	_             = []byte("i/d/")  // a collection's document before schema 23 (now in its state record): do not reuse
	_             = []byte("i/st/") // its stats before schema 23: do not reuse
	_             = []byte("i/an/") // its analytics before schema 23: do not reuse
	_             = []byte("i/l/")  // its listing rows per source before schema 23: do not reuse
	pStatus       = []byte("i/p/")
	kRates        = []byte("i/r")
	_             = []byte("i/g/") // its last good buyer floor before schema 23: do not reuse
	pRegistry     = []byte("i/c/")
	_             = []byte("i/td/") // one record per token before schema 11 (now in blocks, i/tk/): do not reuse
	pTokenBlock   = []byte("i/tk/")
	_             = []byte("i/tb/") // a token bucket's keys and hashes before schema 15 (the token blocks say it): do not reuse
	_             = []byte("i/tg/") // a collection's token bucket generation before schema 15: do not reuse
	_             = []byte("i/ta/") // its token addresses before schema 23: do not reuse
	_             = []byte("i/th/") // token document hashes before schema 5 (now in the document record): do not reuse
	_             = []byte("i/s/")  // sale rows, read only by USD re-renders (gone): do not reuse
	pSaleKey      = []byte("i/sk/")
	pBrowseBack   = []byte("i/bk/")
	pDeadline     = []byte("i/dl/")
	pPolled       = []byte("i/pl/")
	_             = []byte("i/h/")  // its detail history before schema 23: do not reuse
	_             = []byte("i/dt/") // token deadlines before schema 3 (now inside the token view): do not reuse

	pPosition  = []byte("m/p/")
	kVersion   = []byte("m/v")
	kSchema    = []byte("m/schema")
	pDeadlines = []byte("m/x/")
	_          = []byte("m/y/") // token view deadlines before schema 10 (views are rendered on read): do not reuse
	pJob       = []byte("m/j/")
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
func (e *enc) timed(t render.TimedBody) {
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

// freshness writes a value's asOf sources: their count, then per source
// its poll, last success and health.
func (e *enc) freshness(f render.Freshness) {
	e.u(uint64(f.N))
	for i := 0; i < int(f.N); i++ {
		x := f.Entries[i]
		e.u(uint64(x.Poll))
		e.i(x.At)
		e.flag(x.Live)
	}
}

func (d *dec) freshness() render.Freshness {
	var f render.Freshness
	n := d.u()
	if n > render.MaxFreshness {
		d.bad = true
		return f
	}
	for i := 0; i < int(n) && !d.bad; i++ {
		f.Entries[i] = render.FreshnessEntry{Poll: uint8(d.u()), At: d.i(), Live: d.flag()}
	}
	f.N = uint8(n)
	return f
}

func (d *dec) timed() render.TimedBody {
	t := render.TimedBody{Timed: d.flag()}
	t.Head = d.bytes()
	t.Tail = d.bytes()
	if len(t.Tail) == 0 {
		t.Tail = nil
	}
	return t
}

// listingsBufs holds encodeListings' two work buffers: the body and its
// S2 block.
var listingsBufs = sync.Pool{New: func() any { return new([2][]byte) }}

// maxListingsBody bounds a decoded listing snapshot (250 rows of a few
// hundred bytes at most, and their expiries).
const maxListingsBody = 16 << 20

// packedInput is the first byte of a packed input: an S2 block of its
// JSON follows. JSON never starts with it, so a plain input needs no
// marker.
const packedInput = 0x01

// packMin is the size below which an input stays plain JSON.
const packMin = 512

// maxInput bounds an unpacked input, so a damaged block cannot ask for
// more memory.
const maxInput = 256 << 20

// packInput returns JSON input b packed as an S2 block when that is
// smaller, else b. The large inputs are lists that repeat their field
// names and ids: a collection's listing rows per source (about 10 KB at
// the simulator's 100 tokens) kept 0.31 of their bytes, the token keys of
// a bucket 0.30 (measured on 1,000 collections × 100 tokens); at
// 10,000 × 100 the two were a sixth of the store's live data before
// packing.
func packInput(b []byte) []byte {
	if len(b) < packMin {
		return b
	}
	out := make([]byte, 1+s2.MaxEncodedLen(len(b)))
	out[0] = packedInput
	block := s2.Encode(out[1:], b)
	if len(block)+1 >= len(b) {
		return b
	}
	// An exact copy: the transaction holds the value until it commits.
	return append([]byte(nil), out[:1+len(block)]...)
}

// unpackInput returns the JSON of a stored input, packed or plain. The
// result aliases b when b is plain.
func unpackInput(b []byte) ([]byte, error) {
	if len(b) == 0 || b[0] != packedInput {
		return b, nil
	}
	out, ok := decodeBounded(b[1:], maxInput, s2.Decode)
	if !ok {
		return nil, readmodel.Errorf(readmodel.Internal, "corrupt packed input")
	}
	return out, nil
}

// decodeBounded decodes an S2 block with decode (s2.Decode, or a
// dictionary's Decode) into a new buffer, refusing a block that claims
// more than max bytes before allocating for it; ok is false for a damaged
// or oversized block.
func decodeBounded(block []byte, max int, decode func(dst, src []byte) ([]byte, error)) ([]byte, bool) {
	if n, err := s2.DecodedLen(block); err != nil || n > max {
		return nil, false
	}
	out, err := decode(nil, block)
	return out, err == nil
}

// plain wraps a payload that has no version of its own (browse entries,
// sale items, aliases): its header is an FNV-1a hash of the content, so a
// page's version still changes when such an item is re-rendered (a summary
// edit, a sale's USD after a rates change). Digest skips the header.
func plain(p []byte) []byte {
	b := make([]byte, 8, 8+len(p))
	binary.BigEndian.PutUint64(b, itemVersion(p))
	return append(b, p...)
}

// itemVersion is the content hash a browse entry or sale item carries in
// its header (see plain).
func itemVersion(p []byte) uint64 { return pageVersionMix(14695981039346656037, p) }

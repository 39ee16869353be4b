package store

import (
	"encoding/binary"
	"sync"
	"time"

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
	pTokenGen    = []byte("i/tg/")
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

func (d *dec) timed() render.TimedBody {
	t := render.TimedBody{Timed: d.flag()}
	t.Head = d.bytes()
	t.Tail = d.bytes()
	if len(t.Tail) == 0 {
		t.Tail = nil
	}
	return t
}

func encodeCollection(v render.CollectionView) []byte {
	e := newEnc(v.Version)
	e.str(string(v.Chain))
	e.flag(v.HasContract)
	e.bytes(v.Detail)
	return e.b
}

func decodeCollection(id string, b []byte) (render.CollectionView, bool) {
	d, ver := newDec(b)
	v := render.CollectionView{ID: id, Version: ver}
	v.Chain = readmodel.Chain(d.str())
	v.HasContract = d.flag()
	v.Detail = d.bytes()
	return v, !d.bad
}

func encodeFloor(v render.FloorView) []byte {
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

func decodeFloor(b []byte) (render.FloorView, bool) {
	d, ver := newDec(b)
	v := render.FloorView{Version: ver}
	v.Body = d.timed()
	if after := d.i(); after != 0 {
		v.FallbackAfter = time.Unix(0, after).UTC()
	}
	v.Fallback = d.timed()
	return v, !d.bad
}

func encodeListings(v render.ListingsView) []byte {
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

func decodeListings(b []byte) (render.ListingsView, bool) {
	d, ver := newDec(b)
	v := render.ListingsView{Version: ver}
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

// A token view is stored as
//
//	version   8 bytes (big endian)
//	deadline  varint, unix ms (0: none)
//	body      S2 block of the TimedBody (flag, head, tail as enc writes
//	          them), compressed with tokenDict
//
// Token views are the largest family a node stores (at 10,000 collections
// × 100 tokens, 661 bytes on average and a third of the live data), one
// per token, each repeating its chain, contract and collection id and
// SPEC's field names. Compressed alone, a view has too little context to
// shrink much (S2 kept 0.76 of the bytes, zstd 0.61). With a dictionary
// of TokenDetail's shape S2 keeps 0.43, encoding in about 3 µs (zstd with
// the same dictionary kept 0.38 but took 17 µs, which at 10 million
// tokens is minutes of a first cycle's CPU). Every write, value-log GC
// round and resident page of the value log is that much smaller. A read
// that misses the in-process cache pays one decode (about 1 µs); cached
// reads pay nothing. The deadline stays outside the block so that
// PutToken's deadline bookkeeping reads it without decoding.
func encodeToken(v render.TokenView, deadline int64) []byte {
	raw := &enc{b: make([]byte, 0, 16+len(v.Body.Head)+len(v.Body.Tail))}
	raw.timed(v.Body)
	n := s2.MaxEncodedLen(len(raw.b))
	// One allocation for the value: header, deadline and the block's room.
	e := &enc{b: make([]byte, 8, 8+binary.MaxVarintLen64+n)}
	binary.BigEndian.PutUint64(e.b, v.Version)
	e.i(deadline)
	start := len(e.b)
	block := tokenDict().Encode(e.b[start:start+n], raw.b)
	return e.b[:start+len(block)]
}

// tokenDeadline returns the deadline stored with an encoded token view.
func tokenDeadline(b []byte) int64 {
	d, _ := newDec(b)
	dl := d.i()
	if d.bad {
		return 0
	}
	return dl
}

// decodeToken decodes a stored token view. The body is a new buffer: it
// does not alias b. A damaged block is !ok, and never allocates more than
// maxTokenView.
func decodeToken(b []byte) (render.TokenView, bool) {
	d, ver := newDec(b)
	d.i() // deadline
	if d.bad {
		return render.TokenView{}, false
	}
	raw, ok := decodeBounded(d.b, maxTokenView, tokenDict().Decode)
	if !ok {
		return render.TokenView{}, false
	}
	body := &dec{b: raw}
	v := render.TokenView{Version: ver, Body: body.timed()}
	return v, !body.bad && len(body.b) == 0
}

// maxTokenView bounds a decoded token view.
const maxTokenView = 16 << 20

// tokenDictContent is the content of the S2 dictionary of token views:
// the TokenDetail shapes SPEC allows (EVM and Solana, listed natively or
// by overlay, in custody, with and without a last sale) with every chain,
// currency and status spelled out and values left empty. It is part of
// the stored format: changing a byte of it needs a Schema bump. The most
// common shape comes last (nearer content costs less to reference).
const tokenDictContent = `"chain":"polygon","currency":"MATIC","chain":"apechain","currency":"APE","chain":"base","chain":"ink","chain":"abstract","chain":"robinhood",` +
	`"status":"inactive","status":"sold","kind":"unknown","label":null},` +
	`{"chain":"solana","contractAddress":null,"tokenId":null,"mint":"","collectionId":"solana_","name":"","image":"https://","rarity":{"rank":null},"owner":{"address":null,"kind":"custody","label":"in custody"},"listing":null,"lastSale":{"price":{"raw":"","decimal":0.,"currency":"SOL","usd":}}}` +
	`{"chain":"solana","contractAddress":null,"tokenId":null,"mint":"","collectionId":"solana_","name":" #","image":"https://","rarity":{"rank":},"owner":{"address":"","kind":"wallet","label":null},"listing":{"chain":"solana","contractAddress":null,"tokenId":null,"mint":"","collectionId":"solana_","price":{"raw":"","decimal":,"currency":"SOL","usd":},"seller":"","buyer":null,"marketplace":"NATIVE","status":"active","expiresAt":null,"timestamp":"","orderId":"_","tx":null},"lastSale":null}` +
	`{"chain":"ethereum","contractAddress":"0x","tokenId":"","mint":null,"collectionId":"ethereum_0x","name":" #","image":"https://","rarity":{"rank":},"owner":{"address":"0x","kind":"wallet","label":null},"listing":null,"lastSale":null}` +
	`{"chain":"ethereum","contractAddress":"0x","tokenId":"","mint":null,"collectionId":"ethereum_0x","name":" #","image":"https://","rarity":{"rank":},"owner":{"address":"0x","kind":"wallet","label":null},"listing":{"chain":"ethereum","contractAddress":"0x","tokenId":"","mint":null,"collectionId":"ethereum_0x","price":{"raw":"000000","decimal":0.0000,"currency":"ETH","usd":},"seller":"0x","buyer":null,"marketplace":"NATIVE","status":"active","expiresAt":"2026-00-00T00:00:00.000Z","timestamp":"2026-00-00T00:00:00.000Z","orderId":"0x","tx":null},"lastSale":{"price":{"raw":"000000","decimal":0.0000,"currency":"ETH","usd":}}}`

// tokenDict is the S2 dictionary of token views. A Dict is safe for
// concurrent use (its match tables are built once, under a sync.Once).
var tokenDict = sync.OnceValue(func() *s2.Dict {
	return s2.MakeDict([]byte(tokenDictContent), []byte(`{"chain":"`))
})

// tokenContent is a stored token view's content as Digest hashes it: the
// uncompressed encoding of the body, then the deadline, so a digest does
// not depend on the compressor's output.
func tokenContent(b []byte) ([]byte, bool) {
	v, ok := decodeToken(b)
	if !ok {
		return nil, false
	}
	e := &enc{}
	e.timed(v.Body)
	e.i(tokenDeadline(b))
	return e.b, true
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

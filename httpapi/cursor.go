package httpapi

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"hash"
	"sync"
	"time"

	"github.com/marketd/marketd/readmodel"
)

// cursorKind is the endpoint a cursor was minted for; a cursor verifies only
// on its own endpoint (SPEC listings rule 10, sales rule 5).
type cursorKind byte

const (
	cursorListings    cursorKind = 'L'
	cursorSales       cursorKind = 'S'
	cursorCollections cursorKind = 'C'
	cursorEvents      cursorKind = 'E'
	cursorMarket      cursorKind = 'M' // the market's change feed, GET /v1/events
)

const (
	cursorVersion = 1
	cursorMACLen  = 16 // truncated HMAC-SHA256
	// maxCursorLen bounds the text a client can make us decode.
	maxCursorLen = 1024
)

// cursor is the decoded content of a pagination cursor.
type cursor struct {
	kind cursorKind
	// bind is what the cursor is bound to: the canonical collection id
	// (listings, sales) or "sort|chain" (collections).
	bind string
	// pos is the store position (sales, collections: a Page.Next).
	pos string
	// offset and version are the listings position: the index into the
	// snapshot and the snapshot version it was minted from.
	offset  uint64
	version uint64
	// exp is when a parsed cursor stops verifying (unix seconds).
	exp int64
}

// expiresAt is when parsed cursor k stops verifying, in unix nanoseconds;
// 0 for a cursor that never does (the change feed's).
func (k cursor) expiresAt() int64 {
	if k.exp >= neverExpires/int64(time.Second) {
		return 0
	}
	return k.exp * int64(time.Second)
}

// cursorCodec mints and verifies cursors: base64url(payload ‖ mac), the
// mac being HMAC-SHA256(key, payload) truncated to 16 bytes. The payload
// carries an expiry. It is safe for concurrent use.
type cursorCodec struct {
	ttl  time.Duration
	macs sync.Pool // *cursorMAC
}

// cursorMAC is a pooled HMAC with the buffers a cursor is encoded and
// decoded in: what is written to the hash escapes to the heap, so keeping
// them here spares an allocation per request that carries a cursor.
type cursorMAC struct {
	h             hash.Hash
	text, payload [maxCursorLen]byte
	sum           [sha256.Size]byte
}

func newCursorCodec(key []byte, ttl time.Duration) *cursorCodec {
	k := append([]byte(nil), key...)
	cc := &cursorCodec{ttl: ttl}
	cc.macs.New = func() any { return &cursorMAC{h: hmac.New(sha256.New, k)} }
	return cc
}

// sign returns the truncated MAC of payload, in m.sum.
func (m *cursorMAC) sign(payload []byte) []byte {
	m.h.Reset()
	m.h.Write(payload)
	return m.h.Sum(m.sum[:0])[:cursorMACLen]
}

// expiry is now+ttl rounded up to the whole minute, so identical requests
// within a minute mint identical cursors (stable bodies for caches).
func (cc *cursorCodec) expiry(now time.Time) int64 {
	e := now.Add(cc.ttl).Unix()
	return (e + 59) / 60 * 60
}

// mintedUntil is when the cursors appendCursor mints at now change (their
// expiry moves to the next minute), in unix nanoseconds: expiry(now) holds
// while now + ttl is before one second past it.
func (cc *cursorCodec) mintedUntil(now time.Time) int64 {
	return (cc.expiry(now)+1)*int64(time.Second) - int64(cc.ttl)
}

// appendCursor appends the encoded cursor for k to dst.
func (cc *cursorCodec) appendCursor(dst []byte, k cursor, now time.Time) []byte {
	return cc.appendCursorUntil(dst, k, cc.expiry(now))
}

// neverExpires is the expiry of a cursor that verifies for as long as its
// key does (the change feed's: a full page's body never changes).
const neverExpires = int64(1<<63 - 1)

// appendCursorUntil appends the encoded cursor for k, valid until exp
// (unix seconds), to dst.
func (cc *cursorCodec) appendCursorUntil(dst []byte, k cursor, exp int64) []byte {
	m := cc.macs.Get().(*cursorMAC)
	defer cc.macs.Put(m)
	p := m.payload[:0]
	p = append(p, cursorVersion, byte(k.kind))
	p = binary.BigEndian.AppendUint64(p, uint64(exp))
	p = binary.AppendUvarint(p, uint64(len(k.bind)))
	p = append(p, k.bind...)
	p = binary.AppendUvarint(p, uint64(len(k.pos)))
	p = append(p, k.pos...)
	p = binary.AppendUvarint(p, k.offset)
	p = binary.AppendUvarint(p, k.version)
	full := append(p, m.sign(p)...)
	return base64.RawURLEncoding.AppendEncode(dst, full)
}

var (
	errCursorEmpty   = readmodel.Errorf(readmodel.BadRequest, "cursor must not be empty or null; omit it on the first page")
	errCursorBad     = readmodel.Errorf(readmodel.BadRequest, "cursor is malformed; pass pagination.nextCursor back verbatim")
	errCursorExpired = readmodel.Errorf(readmodel.BadRequest, "cursor has expired; restart from the first page")
	errCursorOther   = readmodel.Errorf(readmodel.BadRequest, "cursor was issued for a different endpoint or query; restart from the first page")
)

// parse verifies and decodes text as a cursor of kind for bind. Every
// failure is a BadRequest *readmodel.Error.
func (cc *cursorCodec) parse(text string, kind cursorKind, bind string, now time.Time) (cursor, error) {
	if text == "" || text == "null" {
		return cursor{}, errCursorEmpty
	}
	if len(text) > maxCursorLen {
		return cursor{}, errCursorBad
	}
	m := cc.macs.Get().(*cursorMAC)
	defer cc.macs.Put(m) // the fields read below are copies (readString)
	raw, err := base64.RawURLEncoding.AppendDecode(m.payload[:0], append(m.text[:0], text...))
	if err != nil || len(raw) < cursorMACLen+2+8 {
		return cursor{}, errCursorBad
	}
	payload, sum := raw[:len(raw)-cursorMACLen], raw[len(raw)-cursorMACLen:]
	if !hmac.Equal(m.sign(payload), sum) {
		return cursor{}, errCursorBad
	}
	if payload[0] != cursorVersion {
		return cursor{}, errCursorBad
	}
	var k cursor
	k.kind = cursorKind(payload[1])
	exp := int64(binary.BigEndian.Uint64(payload[2:10]))
	rest := payload[10:]
	var ok bool
	if k.bind, rest, ok = readString(rest); !ok {
		return cursor{}, errCursorBad
	}
	if k.pos, rest, ok = readString(rest); !ok {
		return cursor{}, errCursorBad
	}
	if k.offset, rest, ok = readUvarint(rest); !ok {
		return cursor{}, errCursorBad
	}
	if k.version, rest, ok = readUvarint(rest); !ok || len(rest) != 0 {
		return cursor{}, errCursorBad
	}
	if k.kind != kind || k.bind != bind {
		return cursor{}, errCursorOther
	}
	if now.Unix() >= exp {
		return cursor{}, errCursorExpired
	}
	k.exp = exp
	return k, nil
}

func readUvarint(b []byte) (uint64, []byte, bool) {
	v, n := binary.Uvarint(b)
	if n <= 0 {
		return 0, nil, false
	}
	return v, b[n:], true
}

func readString(b []byte) (string, []byte, bool) {
	n, rest, ok := readUvarint(b)
	if !ok || n > uint64(len(rest)) {
		return "", nil, false
	}
	return string(rest[:n]), rest[n:], true
}

package store

import (
	"encoding/binary"
	"hash/fnv"
	"strconv"
	"time"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/render"
)

// A change-feed event is stored as the fields its JSON is rendered from,
// not as the JSON (schema 17): the projector hands AppendEvents a NewEvent
// (its rows, not their items), and Events renders each event it returns,
// its eventId included. Rendering and hashing every event's JSON, then
// compressing it, was about a tenth of a first cycle's CPU at 10,000
// collections x 100 tokens; a listing event's record is about a seventh
// of its JSON (135 bytes of 925), a sale event's 40 bytes.
//
// The record (inside a block's segment, evblock.go):
//
//	byte     the type's bit (render.EventTypeBit): a types filter reads
//	         no further
//	byte     the stream's letter ('s' state, 'x' sales), then uvarint the
//	         message's sequence and uvarint the event's index in it
//	time     observedAt, then upstreamAt (appendTime: nil, zero or a time)
//	string   the reason ("" for none)
//	byte     which parts follow, in this order: evListing (a listing row
//	         written as a token record's rows are, against the
//	         collection's reference, saleRefDoc, but its orderId as a sale
//	         record's is: a native one repeats the collection and token
//	         ids), evPrevious and evFloor
//	         (each a chain and a raw price, strings), evSale (its key's
//	         suffix, saleSuffix: 16 bytes)
//
// A sale event names the sale record the same transaction added
// (Tx.AddSale), and is rendered from it: sales are kept to the start of
// history (SPEC), and the feed and the sales go together whenever a store
// is emptied, copied or restored. Carrying the record too doubled the
// bytes of a sale (at 10,000 collections x 100 tokens half of the feed's
// events are sales).
//
// The id and JSON rendered from a record are the bytes the projector
// rendered before schema 17: an id is the stream's letter and the
// sequence, "-", the index, "-", and a base-36 FNV-1a hash of the JSON
// after the eventId (TestEventRecordRendersTheJSON).

// Parts of an event record (its flags byte).
const (
	evListing  = 1
	evPrevious = 2
	evFloor    = 4
	evSale     = 8
)

// NewEvent is an event to append to a collection's feed, as the projector
// makes it from the message it applies.
type NewEvent struct {
	Type   string // one of render.EventTypes
	Stream byte   // 's' for the state stream, 'x' for the sales stream
	Seq    uint64 // the message's stream sequence
	Index  int    // the event's index among the message's events

	ObservedAt time.Time  // the message's observation time
	UpstreamAt *time.Time // nil when upstream said nothing
	Reason     string     // listing_removed only

	Listing  *readmodel.ListingRow // rendered as its item as of ObservedAt; nil for none
	Previous EventPrice            // price_changed and floor_changed
	Floor    EventPrice            // floor_changed
	Sale     *SaleRef              // sale: the one Tx.AddSale added, rendered from its record as its item, usd null
}

// SaleRef names a sale Tx.AddSale added: its key's suffix (saleSuffix).
type SaleRef struct{ suf [saleSuffixLen]byte }

// EventPrice is a price an event carries: its chain and raw amount, none
// when Raw is empty (then, or when the amount does not render, null).
type EventPrice struct {
	Chain readmodel.Chain
	Raw   string
}

// errCorruptEvent is the error of an event record that does not decode.
func errCorruptEvent() error { return errCorruptBlock() }

// encodeEvent appends e, an event of collection cid, to b as a record.
func encodeEvent(b []byte, cid string, e *NewEvent) []byte {
	ref := saleRefDoc(cid)
	b = append(b, render.EventTypeBit(e.Type), e.Stream)
	b = binary.AppendUvarint(b, e.Seq)
	b = binary.AppendUvarint(b, uint64(max(e.Index, 0)))
	b = appendTime(b, &e.ObservedAt)
	b = appendTime(b, e.UpstreamAt)
	b = appendStr(b, e.Reason, "")
	var flags byte
	if e.Listing != nil {
		flags |= evListing
	}
	if e.Previous.Raw != "" {
		flags |= evPrevious
	}
	if e.Floor.Raw != "" {
		flags |= evFloor
	}
	if e.Sale != nil {
		flags |= evSale
	}
	b = append(b, flags)
	if e.Listing != nil {
		w := &eventRowEncoder{recEncoder: recEncoder{b: b, doc: &ref, inRow: true}, row: e.Listing}
		e.Listing.Fields(w)
		b = w.b
	}
	for _, p := range [...]*EventPrice{&e.Previous, &e.Floor} {
		if p.Raw != "" {
			b = appendStr(appendStr(b, string(p.Chain), string(ref.Chain)), p.Raw, "")
		}
	}
	if e.Sale != nil {
		b = append(b, e.Sale.suf[:]...)
	}
	return b
}

// eventTypeName is the type whose bit is bit; ok is false for none.
func eventTypeName(bit uint8) (string, bool) {
	for i, n := range render.EventTypes {
		if bit == 1<<i {
			return n, true
		}
	}
	return "", false
}

// idRoom bounds what goes before an event's body: `{"eventId":"`, the
// stream's letter, two uint64s in decimal, two dashes, a 32-bit hash in
// base 36 and a quote (12+1+20+1+20+1+7+1).
const idRoom = 64

// saleGetter reads the record of collection cid's sale whose key suffix is
// suf; ok is false when there is none.
type saleGetter func(suf []byte) (rec []byte, ok bool, err error)

// renderEvent renders event record rec of collection cid, reading its
// sale, if any, with sale: its id, and its JSON, the id included. A
// record that does not decode, or whose sale is missing or does not
// decode, is errCorruptEvent (damage), never a panic; so is one that names
// a sale when sale is nil.
func renderEvent(cid string, rec []byte, sale saleGetter) (id string, out []byte, err error) {
	ref := saleRefDoc(cid)
	r := &recDecoder{recReader: recReader{s: string(rec)}, doc: &ref}
	var e render.Event
	var ok bool
	if e.Type, ok = eventTypeName(r.byte()); !ok {
		return "", nil, errCorruptEvent()
	}
	stream := r.byte()
	seq, idx := r.uvarint(), r.uvarint()
	if t, ok := r.time(); ok {
		e.ObservedAt = *t
	} else {
		r.fail()
	}
	e.UpstreamAt, _ = r.time()
	e.Reason = r.str("")
	flags := r.byte()
	if flags&^(evListing|evPrevious|evFloor|evSale) != 0 {
		r.fail()
	}
	e.CollectionID = cid
	if flags&evListing != 0 && !r.bad {
		var row readmodel.ListingRow
		d := &eventRowDecoder{recDecoder: r, row: &row}
		r.inRow = true
		row.Fields(d)
		r.inRow = false
		if it, ok := render.ListingItem(&row, nil, e.ObservedAt); ok && !r.bad {
			e.Listing = render.MarshalItem(it)
		}
	}
	for _, f := range [...]struct {
		bit byte
		p   **readmodel.Price
	}{{evPrevious, &e.Previous}, {evFloor, &e.Floor}} {
		if flags&f.bit == 0 || r.bad {
			continue
		}
		chain, raw := r.str(string(ref.Chain)), r.str("")
		if p, ok := render.PriceOf(readmodel.Chain(chain), raw, nil); ok {
			*f.p = &p
		}
	}
	if flags&evSale != 0 && !r.bad {
		if r.i+saleSuffixLen != len(r.s) || sale == nil {
			return "", nil, errCorruptEvent()
		}
		suf := rec[r.i:]
		r.i = len(r.s)
		v, ok, err := sale(suf)
		if err != nil {
			return "", nil, err
		}
		if !ok {
			return "", nil, errCorruptEvent()
		}
		s, err := decodeSale(cid, suf, v)
		if err != nil {
			return "", nil, err
		}
		if it, ok := render.SaleItem(&s, nil); ok {
			e.Sale = render.MarshalItem(it)
		}
	}
	if r.bad || r.i != len(r.s) || (stream != 's' && stream != 'x') {
		return "", nil, errCorruptEvent()
	}
	// The JSON after the eventId is rendered first, behind room for what
	// comes before it (the id hashes it), then that is written into the
	// room's end: one buffer, no copy of the body.
	buf := render.AppendEventBody(make([]byte, idRoom, idRoom+320+len(e.Listing)+len(e.Sale)), &e)
	h := fnv.New32a()
	h.Write(buf[idRoom:])
	var pb [idRoom]byte
	pre := append(pb[:0], `{"eventId":"`...)
	pre = append(pre, stream)
	pre = strconv.AppendUint(pre, seq, 10)
	pre = append(pre, '-')
	pre = strconv.AppendUint(pre, idx, 10)
	pre = append(pre, '-')
	pre = strconv.AppendUint(pre, uint64(h.Sum32()), 36)
	id = string(pre[len(`{"eventId":"`):])
	pre = append(pre, '"') // letters, digits and dashes: nothing to escape
	start := idRoom - len(pre)
	copy(buf[start:], pre)
	return id, buf[start:], nil
}

// eventRowEncoder writes an event's listing row (readmodel.FieldVisitor):
// as recEncoder does, but its orderId as a sale record's (orderPrefixOf).
type eventRowEncoder struct {
	recEncoder
	row *readmodel.ListingRow
}

func (e *eventRowEncoder) Str(name string, p *string) {
	if name != "orderId" {
		e.recEncoder.Str(name, p)
		return
	}
	o := e.row
	e.b = appendOrderID(e.b, *p, o.CollectionID, o.TokenID, o.Mint, o.Marketplace)
}

// eventRowDecoder reads what eventRowEncoder wrote: the fields an orderId
// repeats come before it.
type eventRowDecoder struct {
	*recDecoder
	row *readmodel.ListingRow
}

func (d *eventRowDecoder) Str(name string, p *string) {
	if name != "orderId" {
		d.recDecoder.Str(name, p)
		return
	}
	switch f := d.byte(); {
	case d.bad, f == orderNone:
		*p = ""
	case f > orderPlain:
		d.fail()
	default:
		pre, _ := orderPrefixOf(d.row.CollectionID, d.row.TokenID, d.row.Mint, d.row.Marketplace, f)
		*p = pre + d.str("")
	}
}

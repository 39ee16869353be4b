package store

import (
	"encoding/binary"
	"strings"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/render"
)

// A sale is stored as one record under v/s/<collection hash><suffix> (see
// saleSuffix: its block time, then a hash of its SaleKey), from which the
// store renders the sale's item when a page is read (readPage); the
// record is the whole value, there is no header. Schema 16: the rendered
// item (S2 against a dictionary, behind a content hash) took 334 bytes a
// sale at 10,000 collections x 100 tokens, a fifth of the store.
//
// The record is the fields of readmodel.SaleRow's Fields, in order,
// written as a token record's are (tokenrec.go: appendStr, appendTime),
// with these references (a field equal to its reference is one byte):
//   - chain: the collection id up to its first "_"; contractAddress: the
//     rest of it; collectionId: the collection id (of the key);
//   - marketplace: "NATIVE"; status: "sold"; every other string "".
//
// Two fields have forms of their own:
//   - timestamp: the tag byte saleKeyTime when it is the time the key
//     holds (any time whose Unix nanoseconds fit an int64), else a time
//     as appendTime writes it;
//   - orderId: a byte saying which prefix it repeats (orderPrefix), then
//     the rest as a string: a native EVM order id repeats its collection
//     and token ids (about 120 of its item's 700 bytes), a native Solana
//     one its mint, an external one its marketplace.
//
// So a record decodes only with its key (the collection id and suffix).
//
// A sale never changes once added (AddSale dedupes by SaleKey), so the
// record needs no version: a page's version hashes each item's key and
// record (saleVersion), and Digest hashes both.
//
// Decoding checks every length against the record (recReader), so a
// damaged record is an Internal "corrupt sale record" error (Damaged),
// never a panic.

// saleKeyTime is the timestamp tag "the time of the record's key" (the
// tags appendTime writes are 0 to 2).
const saleKeyTime = 3

// orderId forms (the byte before its rest), tried in this order.
const (
	orderNone       = 0 // "": no rest follows
	orderCollection = 1 // collectionId + "_" + tokenId + "_" + rest (native EVM)
	orderMint       = 2 // mint + "_" + rest (native Solana)
	orderMarket     = 3 // marketplace + "-" + rest (external)
	orderPlain      = 4 // rest
)

// errCorruptSale is the error of a sale record that does not decode.
var errCorruptSale error = readmodel.Errorf(readmodel.Internal, "corrupt sale record")

// saleSuffixLen is the length of a sale key's suffix (saleSuffix).
const saleSuffixLen = 16

// saleRefDoc is the reference a sale of collection cid is written
// against (rowRef): its chain and contract address as the id spells
// them, and the id.
func saleRefDoc(cid string) readmodel.TokenDoc {
	chain, addr, _ := strings.Cut(cid, "_")
	return readmodel.TokenDoc{Chain: readmodel.Chain(chain), ContractAddress: addr, CollectionID: cid}
}

// saleRef is the reference of a sale's string field name (see rowRef).
func saleRef(d *readmodel.TokenDoc, name string) string {
	switch name {
	case "marketplace":
		return readmodel.MarketplaceNative
	case "status":
		return string(readmodel.StatusSold)
	case "chain", "contractAddress", "collectionId":
		return rowRef(d, name)
	}
	return ""
}

// keyTime is the time a sale key's suffix holds (see saleSuffix).
func keyTime(suf []byte) time.Time {
	u := ^binary.BigEndian.Uint64(suf)
	if u == 0 {
		return time.Time{}
	}
	return time.Unix(0, int64(u^1<<63)).UTC()
}

// orderPrefix is the prefix orderId form f repeats from row s's fields
// decoded before it; ok is false for a form without one.
func orderPrefix(s *readmodel.SaleRow, f byte) (string, bool) {
	return orderPrefixOf(s.CollectionID, s.TokenID, s.Mint, s.Marketplace, f)
}

// orderPrefixOf is the prefix orderId form f repeats of a row with these
// fields (a sale's or a listing's); ok is false for a form without one.
func orderPrefixOf(collectionID, tokenID, mint, marketplace string, f byte) (string, bool) {
	switch f {
	case orderCollection:
		return collectionID + "_" + tokenID + "_", true
	case orderMint:
		return mint + "_", true
	case orderMarket:
		return marketplace + "-", true
	}
	return "", false
}

// encodeSale encodes sale row s of collection cid whose key suffix is suf
// (saleSuffix(s)).
func encodeSale(cid string, suf []byte, s *readmodel.SaleRow) []byte {
	ref := saleRefDoc(cid)
	e := &saleEncoder{recEncoder: recEncoder{b: make([]byte, 0, 160), doc: &ref}, row: s, suf: suf}
	s.Fields(e)
	return e.b
}

// decodeSale decodes the record v of a sale of collection cid whose key
// suffix is suf. The strings of the result share one allocation.
func decodeSale(cid string, suf, v []byte) (readmodel.SaleRow, error) {
	if len(suf) != saleSuffixLen {
		return readmodel.SaleRow{}, errCorruptSale
	}
	// One allocation holds the row, its reference and the decoder
	// (handed to Fields as an interface, it would otherwise escape apart);
	// the packed strings are expanded into one buffer and become one
	// string: a page decodes 100 records.
	x := new(struct {
		row readmodel.SaleRow
		ref readmodel.TokenDoc
		d   saleDecoder
	})
	x.ref = saleRefDoc(cid)
	x.d = saleDecoder{recDecoder: recDecoder{recReader: recReader{s: string(v)}, doc: &x.ref}, suf: suf,
		arena: make([]byte, 0, 2*len(v))}
	x.row.Fields(&x.d)
	if x.d.bad || x.d.i != len(x.d.s) {
		return readmodel.SaleRow{}, errCorruptSale
	}
	all := string(x.d.arena)
	for _, ps := range x.d.pend[:x.d.npend] {
		*ps.p = all[ps.start:ps.end]
	}
	if pre, ok := orderPrefix(&x.row, x.d.orderForm); ok {
		x.row.OrderID = pre + x.row.OrderID
	}
	return x.row, nil
}

// appendSale appends the stored sale v (key suffix suf) of collection
// cid to dst as the API serves it (render.AppendSaleItem: its item, USD
// filled from q). A record that does not decode, or whose price does not
// render, is errCorruptSale.
func appendSale(dst []byte, cid string, suf, v []byte, q *render.USDQuote) ([]byte, error) {
	s, err := decodeSale(cid, suf, v)
	if err != nil {
		return dst, err
	}
	b, ok := render.AppendSaleItem(dst, &s, q)
	if !ok {
		return dst, errCorruptSale
	}
	return b, nil
}

// renderSale is appendSale to a new slice.
func renderSale(cid string, suf, v []byte, q *render.USDQuote) ([]byte, error) {
	return appendSale(nil, cid, suf, v, q)
}

// saleVersion is what a sale record adds to its page's version: a hash of
// the record (a sale's key and record say all its item shows).
func saleVersion(v []byte) [8]byte {
	var h [8]byte
	binary.BigEndian.PutUint64(h[:], xxhash.Sum64(v))
	return h
}

// saleEncoder writes a sale's fields (readmodel.FieldVisitor).
type saleEncoder struct {
	recEncoder
	row *readmodel.SaleRow
	suf []byte
}

func (e *saleEncoder) Str(name string, p *string) {
	if name != "orderId" {
		e.b = appendStr(e.b, *p, saleRef(e.doc, name))
		return
	}
	s := e.row
	e.b = appendOrderID(e.b, *p, s.CollectionID, s.TokenID, s.Mint, s.Marketplace)
}

// appendOrderID appends orderId id of a row with these fields (a sale's
// or a listing's, written before it): the form byte of the first prefix
// it repeats (orderPrefixOf), then the rest as a string.
func appendOrderID(b []byte, id, collectionID, tokenID, mint, marketplace string) []byte {
	if id == "" {
		return append(b, orderNone)
	}
	for f := byte(orderCollection); f < orderPlain; f++ {
		if pre, _ := orderPrefixOf(collectionID, tokenID, mint, marketplace, f); strings.HasPrefix(id, pre) {
			return appendStr(append(b, f), id[len(pre):], "")
		}
	}
	return appendStr(append(b, orderPlain), id, "")
}

func (e *saleEncoder) Time(name string, p *time.Time) {
	if name == "timestamp" && !p.IsZero() && keyTime(e.suf).Equal(*p) {
		e.b = append(e.b, saleKeyTime)
		return
	}
	e.recEncoder.Time(name, p)
}

// saleDecoder reads a sale's fields (readmodel.FieldVisitor). A packed
// string is expanded into arena and set by decodeSale (pend), which also
// puts an orderId's prefix before it once the fields it repeats are set.
type saleDecoder struct {
	recDecoder
	suf       []byte
	arena     []byte
	pend      [16]pendingStr
	npend     int
	orderForm byte
}

// pendingStr is a string field whose value is arena[start:end].
type pendingStr struct {
	p          *string
	start, end int
}

func (d *saleDecoder) Str(name string, p *string) {
	ref := ""
	if name == "orderId" {
		switch d.orderForm = d.byte(); {
		case d.bad:
			return
		case d.orderForm == orderNone:
			*p = ""
			return
		case d.orderForm > orderPlain:
			d.fail()
			return
		}
	} else {
		ref = saleRef(d.doc, name)
	}
	start := len(d.arena)
	var s string
	var packed bool
	d.arena, s, packed = d.strTo(d.arena, ref)
	switch {
	case !packed:
		*p = s
	case d.npend < len(d.pend):
		d.pend[d.npend] = pendingStr{p, start, len(d.arena)}
		d.npend++
	default:
		*p = string(d.arena[start:])
	}
}

func (d *saleDecoder) Time(name string, p *time.Time) {
	if name == "timestamp" && d.i < len(d.s) && d.s[d.i] == saleKeyTime {
		d.i++
		if *p = keyTime(d.suf); p.IsZero() {
			d.fail() // the encoder writes a zero time as appendTime does
		}
		return
	}
	d.recDecoder.Time(name, p)
}

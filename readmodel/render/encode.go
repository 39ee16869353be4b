package render

import (
	"math"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/wire"
)

// The projector renders every listing, sale and token it applies; with
// encoding/json's reflection that was the largest share of rendering. The
// appenders below write the same bytes as encoding/json for the types they
// cover (TestAppendersMatchEncodingJSON, FuzzAppendersMatchEncodingJSON):
// strings HTML-escaped, invalid UTF-8 as U+FFFD, U+2028 and U+2029
// escaped; floats as encoding/json formats float64. They report false for
// a value encoding/json refuses (NaN or an infinite float), and MarshalItem
// then falls back to encoding/json, which decides.

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as encoding/json does (with HTML escaping).
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendFiniteFloat is appendJSONFloat (usd.go); false for NaN and
// infinities, which encoding/json refuses.
func appendFiniteFloat(b []byte, f float64) ([]byte, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return b, false
	}
	return appendJSONFloat(b, f), true
}

func appendStrPtr(b []byte, p *string) []byte {
	if p == nil {
		return append(b, "null"...)
	}
	return appendJSONString(b, *p)
}

func appendFloatPtr(b []byte, p *float64) ([]byte, bool) {
	if p == nil {
		return append(b, "null"...), true
	}
	return appendFiniteFloat(b, *p)
}

func appendPrice(b []byte, p *readmodel.Price) ([]byte, bool) {
	b = append(b, `{"raw":`...)
	b = appendJSONString(b, p.Raw)
	b = append(b, `,"decimal":`...)
	b, ok := appendFiniteFloat(b, p.Decimal)
	if !ok {
		return b, false
	}
	b = append(b, `,"currency":`...)
	b = appendJSONString(b, p.Currency)
	b = append(b, `,"usd":`...)
	if b, ok = appendFloatPtr(b, p.USD); !ok {
		return b, false
	}
	return append(b, '}'), true
}

// appendAsset opens an object with the asset fields MarketItem and
// TokenDetail share, in their wire order.
func appendAsset(b []byte, c readmodel.Chain, contract, tokenID, mint *string, collectionID string) []byte {
	b = append(b, `{"chain":`...)
	b = appendJSONString(b, string(c))
	b = append(b, `,"contractAddress":`...)
	b = appendStrPtr(b, contract)
	b = append(b, `,"tokenId":`...)
	b = appendStrPtr(b, tokenID)
	b = append(b, `,"mint":`...)
	b = appendStrPtr(b, mint)
	b = append(b, `,"collectionId":`...)
	return appendJSONString(b, collectionID)
}

// appendItem appends item it as JSON, its fields as MarketItem.Fields
// lists them. ok is false when its price cannot be written.
func appendItem(b []byte, it *readmodel.MarketItem) ([]byte, bool) {
	e := itemEncoders.Get().(*itemEncoder)
	e.b, e.ok, e.first = append(b, '{'), true, true
	it.Fields(e)
	b, ok := append(e.b, '}'), e.ok
	*e = itemEncoder{}
	itemEncoders.Put(e)
	return b, ok
}

// itemEncoders pool the encoders: handed to Fields as an interface, an
// encoder would otherwise be allocated per item.
var itemEncoders = sync.Pool{New: func() any { return new(itemEncoder) }}

// itemEncoder writes a MarketItem's fields (readmodel.ItemVisitor).
type itemEncoder struct {
	b         []byte
	ok, first bool
}

func (e *itemEncoder) key(name string) {
	if e.first {
		e.first = false
	} else {
		e.b = append(e.b, ',')
	}
	e.b = append(e.b, '"')
	e.b = append(e.b, name...)
	e.b = append(e.b, '"', ':')
}

func (e *itemEncoder) Str(name, v string) {
	e.key(name)
	e.b = appendJSONString(e.b, v)
}

func (e *itemEncoder) StrPtr(name string, v *string) {
	e.key(name)
	e.b = appendStrPtr(e.b, v)
}

func (e *itemEncoder) Price(name string, p readmodel.Price) {
	e.key(name)
	if e.ok {
		e.b, e.ok = appendPrice(e.b, &p)
	}
}

// appendListingItem appends li as encoding/json writes it: its item's
// fields, then fees and buyerPrice. ok is false when a price cannot be
// written.
func appendListingItem(b []byte, li *wire.ListingItem) ([]byte, bool) {
	b, ok := appendItem(b, &li.MarketItem)
	if !ok {
		return b, false
	}
	b = append(b[:len(b)-1], ',')
	if b, ok = appendFeeList(b, li.Fees, li.BuyerPrice); !ok {
		return b, false
	}
	return append(b, '}'), true
}

// appendFeeList appends `"fees":…,"buyerPrice":…` (no leading comma) as
// encoding/json writes ListingItem's and FloorResponse's two fields. ok is
// false when a price cannot be written.
func appendFeeList(b []byte, list []wire.Fee, buyer *readmodel.Price) ([]byte, bool) {
	b = append(b, `"fees":`...)
	ok := true
	if list == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range list {
			fe := &list[i]
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"kind":`...)
			b = appendJSONString(b, fe.Kind)
			b = append(b, `,"bps":`...)
			if fe.Bps == nil {
				b = append(b, "null"...)
			} else {
				b = strconv.AppendInt(b, *fe.Bps, 10)
			}
			b = append(b, `,"amount":`...)
			if fe.Amount == nil {
				b = append(b, "null"...)
			} else if b, ok = appendPrice(b, fe.Amount); !ok {
				return b, false
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = append(b, `,"buyerPrice":`...)
	if buyer == nil {
		return append(b, "null"...), true
	}
	return appendPrice(b, buyer)
}

// appendTokenDetail appends d as encoding/json writes it. ok is false when
// a price cannot be written.
func appendTokenDetail(b []byte, d *wire.TokenDetail) ([]byte, bool) {
	b = appendAsset(b, d.Chain, d.ContractAddress, d.TokenID, d.Mint, d.CollectionID)
	b = append(b, `,"name":`...)
	b = appendStrPtr(b, d.Name)
	b = append(b, `,"image":`...)
	b = appendStrPtr(b, d.Image)
	b = append(b, `,"rarity":{"rank":`...)
	if d.Rarity.Rank == nil {
		b = append(b, "null"...)
	} else {
		b = strconv.AppendInt(b, *d.Rarity.Rank, 10)
	}
	b = append(b, `},"owner":{"address":`...)
	b = appendStrPtr(b, d.Owner.Address)
	b = append(b, `,"kind":`...)
	b = appendJSONString(b, string(d.Owner.Kind))
	b = append(b, `,"label":`...)
	b = appendStrPtr(b, d.Owner.Label)
	b = append(b, `},"listing":`...)
	ok := true
	if d.Listing == nil {
		b = append(b, "null"...)
	} else if b, ok = appendListingItem(b, d.Listing); !ok {
		return b, false
	}
	b = append(b, `,"lastSale":`...)
	if d.LastSale == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, `{"price":`...)
		if b, ok = appendPrice(b, &d.LastSale.Price); !ok {
			return b, false
		}
		b = append(b, '}')
	}
	if d.AsOf != nil {
		b = append(b, `,"asOf":`...)
		b = appendJSONString(b, *d.AsOf)
	}
	return append(b, '}'), true
}

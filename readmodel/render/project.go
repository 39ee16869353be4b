package render

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/wire"
)

// This file holds the pure view-building functions the projector uses: they
// turn normalized rows into the JSON bodies of SPEC §2. They read no clock
// and no storage; every input is a parameter. They are safe for concurrent
// use.

// PriceOf builds the Price of raw base units on c. ok is false when raw
// cannot be interpreted (then the value must be dropped, never served).
func PriceOf(c readmodel.Chain, raw string, usd *float64) (p readmodel.Price, ok bool) {
	// ParseRaw's rule without the big.Int: every row rendered comes here.
	if raw == "" || len(raw) > readmodel.MaxRawDigits {
		return readmodel.Price{}, false
	}
	for i := 0; i < len(raw); i++ {
		if raw[i] < '0' || raw[i] > '9' {
			return readmodel.Price{}, false
		}
	}
	canon := strings.TrimLeft(raw, "0")
	if canon == "" {
		canon = "0"
	}
	return newPrice(c, canon, usd), true
}

func pricePtr(c readmodel.Chain, raw string, usd *float64) *readmodel.Price {
	if raw == "" {
		return nil
	}
	p, ok := PriceOf(c, raw, usd)
	if !ok {
		return nil
	}
	return &p
}

// ListingItem renders a listing row as the MarketItem of a listings feed.
// observedAt stands in for a missing row timestamp. ok is false when the
// row's price cannot be interpreted.
func ListingItem(r *readmodel.ListingRow, usd *float64, observedAt time.Time) (readmodel.MarketItem, bool) {
	p, ok := PriceOf(r.Chain, r.PriceRaw, usd)
	if !ok {
		return readmodel.MarketItem{}, false
	}
	return r.Item(p, observedAt), true
}

// SaleItem renders a sale row as a MarketItem. ok is false when the sale's
// price cannot be interpreted: such sales are dropped at projection.
func SaleItem(s *readmodel.SaleRow, usd *float64) (readmodel.MarketItem, bool) {
	p, ok := PriceOf(s.Chain, s.PriceRaw, usd)
	if !ok {
		return readmodel.MarketItem{}, false
	}
	return s.Item(p), true
}

// AppendSaleItem appends sale row s's item as a sales page serves it: the
// bytes of MarshalItem(SaleItem(s, nil)) with its usd slot (TemplateUSD)
// filled from q as AppendUSD fills it. ok is false, and dst is returned
// as is, when the sale's price cannot be interpreted. The store renders
// sales pages from their records with it.
//
// It renders the filled usd directly (USDQuote.slotValue: the value the
// slot would take) instead of templating and filling: TemplateUSD parses
// the decimal back from the JSON, and was a third of rendering an item.
func AppendSaleItem(dst []byte, s *readmodel.SaleRow, q *USDQuote) ([]byte, bool) {
	it, ok := SaleItem(s, nil)
	if !ok {
		return dst, false
	}
	start := len(dst)
	filled := it
	filled.Price.USD = q.slotValue(&it.Price)
	if b, ok := appendItem(dst, &filled); ok {
		return b, true
	}
	// Only a price that does not encode gets here: the way the projector
	// rendered it, then filled.
	return AppendUSD(dst[:start], TemplateUSD(MarshalItem(it)), q), true
}

// MarshalItem encodes v as compact JSON, as encoding/json does. Every value
// this package renders is plain data, so encoding cannot fail; a failure
// yields "null". Market items and token details, rendered once per row the
// projector applies, are written by hand-written appenders (encode.go).
func MarshalItem(v any) []byte {
	var (
		b  []byte
		ok bool
	)
	switch x := v.(type) {
	case readmodel.MarketItem:
		b, ok = appendItem(make([]byte, 0, 512), &x)
	case *readmodel.MarketItem:
		b, ok = appendItem(make([]byte, 0, 512), x)
	case wire.TokenDetail:
		b, ok = appendTokenDetail(make([]byte, 0, 1024), &x)
	case wire.ListingItem:
		b, ok = appendListingItem(make([]byte, 0, 1024), &x)
	}
	if ok {
		return b
	}
	b, err := json.Marshal(v)
	if err != nil {
		return []byte("null")
	}
	return b
}

// slotMark is the placeholder written where a TimedBody's slot goes.
const slotMark = "\x00slot\x00"

var (
	updatedAtKey = []byte(`"updatedAt":"`)
	timestampKey = []byte(`"timestamp":"`)
	slotJSON     = []byte(`\u0000slot\u0000"`)
)

// splitSlot cuts b around the slot value that follows key. The key pattern
// `"name":"` cannot occur inside a JSON string (an unescaped quote after a
// colon), so the first match is the field itself.
func splitSlot(b []byte, key []byte) TimedBody {
	i := bytes.Index(b, key)
	if i < 0 || !bytes.HasPrefix(b[i+len(key):], slotJSON) {
		return TimedBody{Head: b}
	}
	head := b[:i+len(key)]
	tail := b[i+len(key)+len(slotJSON)-1:] // keep the closing quote
	return TimedBody{Head: head, Tail: tail, Timed: true}
}

// StrPtr returns nil for "" and &s otherwise: the null rule of every
// nullable string field.
func StrPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

package render

import (
	"bytes"
	"encoding/binary"
	"math"
	"strconv"

	"github.com/marketd/marketd/readmodel"
)

// USD at read time.
//
// A Price's usd is the one part of a view that depends on a global input:
// the price feed's rates. Baking it into the prepared bytes would make every
// rate tick re-render every view of a currency (every collection, listing,
// sale and token: O(market) work every two minutes, and stale usd values
// until that work is done). Instead the projector prepares bodies with a
// USD slot where a Price in a feed currency has its usd, and the store
// fills the slots from the current USDQuote when it loads a view into its
// cache (a multiplication and a float format per price, once per view and
// quote); a new quote empties that cache.
//
// A slot is usdSlotLen bytes: the byte 0x00 (which JSON text written by
// encoding/json never contains: control characters inside strings are
// escaped, and there are none outside them), the currency's index in
// usdCurrencies, and the price's decimal as the 8 little-endian bytes of its
// IEEE 754 bits. Filled, it reads exactly as encoding/json would have
// written NewPrice's usd with that rate: the number, or null when the rate
// is unknown.

// usdSlotLen is the length of one USD slot in a prepared body.
const usdSlotLen = 10

const usdMark = 0x00

// usdCurrencies are the currencies the price feed quotes (those of chains
// with HasUSDFeed); a slot names one by its index.
var usdCurrencies = [...]string{"ETH", "SOL"}

// USDQuote is the USD conversion the API applies to prepared bodies: the
// rate of each feed currency, or none (usd null) when the feed has no rate
// for it or its latest poll failed. A USDQuote is immutable and safe for
// concurrent use; the zero value knows no rate.
type USDQuote struct {
	// Version identifies the quote's content (it is part of every view
	// ETag: a body changes when its quote does).
	Version uint64
	rate    [len(usdCurrencies)]float64
	known   [len(usdCurrencies)]bool
}

// NewUSDQuote returns the quote of rates, or one that knows no rate when
// the price feed's latest poll failed (feedOK false). Rates that are not
// finite and positive are unknown.
func NewUSDQuote(rates readmodel.USDRates, feedOK bool) *USDQuote {
	q := &USDQuote{}
	h := uint64(14695981039346656037)
	mix := func(v uint64) {
		for i := 0; i < 8; i++ {
			h ^= v & 0xff
			h *= 1099511628211
			v >>= 8
		}
	}
	for i, c := range usdCurrencies {
		r, ok := rates[c]
		if feedOK && ok && r > 0 && !math.IsInf(r, 0) {
			q.rate[i], q.known[i] = r, true
			mix(math.Float64bits(r))
		} else {
			mix(0)
		}
	}
	q.Version = h
	return q
}

// Rate returns the quote's rate of currency, ok false when unknown (q may
// be nil).
func (q *USDQuote) Rate(currency string) (float64, bool) {
	if q == nil {
		return 0, false
	}
	for i, c := range usdCurrencies {
		if c == currency {
			return q.rate[i], q.known[i]
		}
	}
	return 0, false
}

// TemplateUSD returns b (JSON written by encoding/json) with the usd of
// every Price in a feed currency replaced by a USD slot. It expects such
// usd values to be null (render with a nil rate); any other usd is kept.
// A Price is recognised by its field sequence
// `"decimal":N,"currency":"C","usd":null`: the quoted key names cannot
// occur inside a JSON string (an unescaped quote ends a string), and maps
// marshal their keys sorted, so no other object has this sequence.
func TemplateUSD(b []byte) []byte {
	const usdNull = `,"usd":null`
	if bytes.IndexByte(b, usdMark) >= 0 {
		return b // already templated
	}
	var out []byte
	done := 0
	for i := 0; ; {
		j := bytes.Index(b[i:], []byte(usdNull))
		if j < 0 {
			break
		}
		at := i + j // the comma before "usd"
		i = at + len(usdNull)
		cur, dec, ok := priceBefore(b[:at])
		if !ok {
			continue
		}
		if out == nil {
			out = make([]byte, 0, len(b)+64)
		}
		out = append(out, b[done:at+len(`,"usd":`)]...)
		out = append(out, usdMark, byte(cur))
		out = binary.LittleEndian.AppendUint64(out, math.Float64bits(dec))
		done = i
	}
	if out == nil {
		return b
	}
	return append(out, b[done:]...)
}

// priceBefore parses `"decimal":N,"currency":"C"` at the end of b: the
// index of C in usdCurrencies and N.
func priceBefore(b []byte) (cur int, dec float64, ok bool) {
	const curKey, decKey = `,"currency":"`, `"decimal":`
	cur = -1
	for i, c := range usdCurrencies {
		if n := len(curKey) + len(c) + 1; len(b) >= n && string(b[len(b)-n:]) == curKey+c+`"` {
			cur, b = i, b[:len(b)-n]
			break
		}
	}
	if cur < 0 {
		return 0, 0, false
	}
	k := bytes.LastIndex(b, []byte(decKey))
	if k < 0 || len(b)-k > len(decKey)+32 {
		return 0, 0, false
	}
	f, err := strconv.ParseFloat(string(b[k+len(decKey):]), 64)
	if err != nil {
		return 0, 0, false
	}
	return cur, f, true
}

// NextUSDSlot returns the index of the first USD slot in b, or -1.
func NextUSDSlot(b []byte) int { return bytes.IndexByte(b, usdMark) }

// slotValue is the usd that TemplateUSD's slot for price p (rendered with
// usd null) takes under q, as appendSlot writes it (usd): nil (null) for
// a currency without a slot or a rate, or a value that is not finite.
// JSON floats are written in their shortest form, so the decimal
// TemplateUSD parses back is p.Decimal.
func (q *USDQuote) slotValue(p *readmodel.Price) *float64 {
	for i, c := range usdCurrencies {
		if c == p.Currency {
			if u, ok := q.usd(i, p.Decimal); ok {
				return &u
			}
			return nil
		}
	}
	return nil
}

// usd is the one rule for what decimal dec of the i-th slotted currency
// is worth under q: roundCents(dec × rate); ok is false (null) without a
// quote or a rate, or when the result is not finite.
func (q *USDQuote) usd(i int, dec float64) (float64, bool) {
	if q == nil || i < 0 || i >= len(usdCurrencies) || !q.known[i] {
		return 0, false
	}
	u := roundCents(dec * q.rate[i])
	if math.IsInf(u, 0) || math.IsNaN(u) {
		return 0, false
	}
	return u, true
}

// appendSlot appends the JSON value of slot (the usdSlotLen bytes of one
// slot) under quote q (nil: null): roundCents(decimal × rate) formatted as
// encoding/json formats a float64, or null.
func (q *USDQuote) appendSlot(dst, slot []byte) []byte {
	if len(slot) < usdSlotLen {
		return append(dst, "null"...)
	}
	u, ok := q.usd(int(slot[1]), math.Float64frombits(binary.LittleEndian.Uint64(slot[2:])))
	if !ok {
		return append(dst, "null"...)
	}
	return appendJSONFloat(dst, u)
}

// AppendUSD appends b to dst with every USD slot filled under q.
func AppendUSD(dst, b []byte, q *USDQuote) []byte {
	for {
		i := NextUSDSlot(b)
		if i < 0 || len(b)-i < usdSlotLen {
			return append(dst, b...)
		}
		dst = append(dst, b[:i]...)
		dst = q.appendSlot(dst, b[i:i+usdSlotLen])
		b = b[i+usdSlotLen:]
	}
}

// appendJSONFloat formats f exactly as encoding/json does.
func appendJSONFloat(b []byte, f float64) []byte {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

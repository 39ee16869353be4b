package render

import (
	"math/big"
	"strconv"

	"github.com/marketd/marketd/readmodel"
)

// NewPrice builds the Price of raw base units on chain c. raw is rendered in
// canonical form (no leading zeros). usdPerUnit is the USD rate of one whole
// native unit of c's currency, or nil when unknown; it is ignored for chains
// without a feed, whose usd is always null.
func NewPrice(c readmodel.Chain, raw *big.Int, usdPerUnit *float64) readmodel.Price {
	return newPrice(c, raw.String(), usdPerUnit)
}

// newPrice is NewPrice of raw in canonical decimal form.
func newPrice(c readmodel.Chain, raw string, usdPerUnit *float64) readmodel.Price {
	p := readmodel.Price{Raw: raw, Currency: c.Currency()}
	p.Decimal = decimalOf(raw, c.Decimals())
	if usdPerUnit != nil && c.HasUSDFeed() {
		u := roundCents(p.Decimal * *usdPerUnit)
		p.USD = &u
	}
	return p
}

// Decimal converts raw base units with the given number of decimals to the
// nearest float64, via exact decimal text so that large wei values lose no
// more precision than a double must.
func Decimal(raw *big.Int, decimals int) float64 { return decimalOf(raw.String(), decimals) }

// decimalOf is Decimal of s, an integer in decimal text.
func decimalOf(s string, decimals int) float64 {
	var buf [readmodel.MaxRawDigits + 64]byte
	txt := buf[:0]
	if len(s) > 0 && s[0] == '-' {
		txt, s = append(txt, '-'), s[1:]
	}
	if len(s) <= decimals { // 0.000ddd
		txt = append(txt, '0', '.')
		for n := len(s); n < decimals; n++ {
			txt = append(txt, '0')
		}
		txt = append(txt, s...)
	} else {
		txt = append(txt, s[:len(s)-decimals]...)
		txt = append(txt, '.')
		txt = append(txt, s[len(s)-decimals:]...)
	}
	f, _ := strconv.ParseFloat(string(txt), 64)
	return f
}

// ApplyBps returns raw increased by bps basis points, rounded up to the next
// base unit (a buyer never pays less than the fee).
func ApplyBps(raw *big.Int, bps int64) *big.Int {
	if bps <= 0 {
		return new(big.Int).Set(raw)
	}
	fee := new(big.Int).Mul(raw, big.NewInt(bps))
	q, r := new(big.Int).QuoRem(fee, big.NewInt(10000), new(big.Int))
	if r.Sign() > 0 {
		q.Add(q, big.NewInt(1))
	}
	return q.Add(q, raw)
}

func roundCents(f float64) float64 {
	if f > 1e15 || f < -1e15 {
		return f
	}
	if f >= 0 {
		return float64(int64(f*100+0.5)) / 100
	}
	return float64(int64(f*100-0.5)) / 100
}

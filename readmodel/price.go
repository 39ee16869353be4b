package readmodel

import (
	"math/big"
)

// Price is SPEC's Price object. All four fields are always present.
type Price struct {
	Raw      string   `json:"raw"`
	Decimal  float64  `json:"decimal"`
	Currency string   `json:"currency"`
	USD      *float64 `json:"usd"`
}

// ParseRaw parses an integer amount of base units: ASCII digits only, no sign,
// no exponent, no fraction, at most MaxRawDigits digits. It returns an
// ErrBadPrice-wrapped Error for anything else.
func ParseRaw(s string) (*big.Int, error) {
	if s == "" || len(s) > MaxRawDigits {
		return nil, Errorf(BadRequest, "raw price %q: not an integer of 1 to %d digits", truncate(s, 32), MaxRawDigits)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return nil, Errorf(BadRequest, "raw price %q: not a non-negative integer", truncate(s, 32))
		}
	}
	n, ok := new(big.Int).SetString(s, 10)
	if !ok {
		return nil, Errorf(BadRequest, "raw price %q: not a non-negative integer", truncate(s, 32))
	}
	return n, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

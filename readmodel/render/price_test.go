package render

import (
	"math/big"
	"math/rand"
	"strings"
	"testing"

	"github.com/marketd/marketd/readmodel"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPriceOfMatchesExactArithmetic: PriceOf's text arithmetic gives the
// canonical raw and the float64 nearest to raw / 10^decimals, which
// big.Rat computes exactly, for every chain's decimals.
func TestPriceOfMatchesExactArithmetic(t *testing.T) {
	r := rand.New(rand.NewSource(20261123))
	for i := 0; i < 20000; i++ {
		digits := make([]byte, 1+r.Intn(readmodel.MaxRawDigits))
		for k := range digits {
			digits[k] = byte('0' + r.Intn(10))
		}
		if r.Intn(3) == 0 { // short amounts below one unit
			digits = digits[:1+r.Intn(min(len(digits), 6))]
		}
		raw := string(digits)
		n, ok := new(big.Int).SetString(raw, 10)
		require.True(t, ok)
		for _, c := range []readmodel.Chain{readmodel.Solana, readmodel.Ethereum} {
			p, ok := PriceOf(c, raw, nil)
			require.True(t, ok, raw)
			want, _ := new(big.Rat).SetFrac(n, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(c.Decimals())), nil)).Float64()
			require.Equal(t, n.String(), p.Raw, raw)
			require.Equal(t, want, p.Decimal, "%s on %s", raw, c)
		}
	}
	for _, bad := range []string{"", "-1", "1.5", "1e3", " 1", strings.Repeat("9", readmodel.MaxRawDigits+1)} {
		_, ok := PriceOf(readmodel.Ethereum, bad, nil)
		assert.False(t, ok, "%q", bad)
	}
}

package sim

import (
	"math/big"
	"math/rand"
	"testing"
)

func refBase58(b []byte) string {
	zeros := 0
	for zeros < len(b) && b[zeros] == 0 {
		zeros++
	}
	n := new(big.Int).SetBytes(b)
	var out []byte
	m := new(big.Int)
	for n.Sign() > 0 {
		n.DivMod(n, big.NewInt(58), m)
		out = append(out, b58[m.Int64()])
	}
	for i := 0; i < zeros; i++ {
		out = append(out, '1')
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return string(out)
}

func TestBase58MatchesReference(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for _, n := range []int{32, 64} {
		for i := 0; i < 2000; i++ {
			b := make([]byte, n)
			r.Read(b)
			if i%7 == 0 {
				b[0] = 0
			}
			if i%11 == 0 {
				b[1] = 0
			}
			if i == 5 {
				b = make([]byte, n)
			}
			if got, want := base58(b), refBase58(b); got != want {
				t.Fatalf("base58(%x) = %s, want %s", b, got, want)
			}
		}
	}
}

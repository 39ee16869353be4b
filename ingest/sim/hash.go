package sim

import (
	"encoding/binary"
	"math/big"
	"math/bits"
	"strconv"
	"strings"
)

// Tags keep the hash streams of different attributes independent.
const (
	tagChain uint64 = iota + 1
	tagAddr
	tagTokens
	tagBigIDs
	tagTokenID
	tagFloor
	tagPeriod
	tagPhase
	tagTouch
	tagList
	tagVenue
	tagPrice
	tagCreated
	tagExpiry
	tagOwner
	tagBuyer
	tagSold
	tagSalePrice
	tagOrder
	tagTx
	tagMint
	tagName
	tagMeta
	tagHistory
	tagRate
	tagStats
	tagCustody
	tagCase
)

// mix is the splitmix64 finalizer: a fast, well-distributed bijection.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// h hashes the seed with up to four coordinates and a tag.
func (m *market) h(tag, a, b, c uint64) uint64 {
	return mix(m.seed ^ mix(tag^mix(a^mix(b^mix(c+0x51)))))
}

// unit maps a hash to [0, 1).
func unit(x uint64) float64 { return float64(x>>11) / float64(1<<53) }

const b58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

// base58 encodes b (big-endian) in the Bitcoin alphabet. len(b) must be a
// multiple of 8 (the simulator uses 32 and 64 bytes). It divides 64-bit
// limbs by 58^10 at a time, so it is fast enough to run per token.
func base58(b []byte) string {
	const big58 = 430804206899405824 // 58^10
	zeros := 0
	for zeros < len(b) && b[zeros] == 0 {
		zeros++
	}
	var limbs [8]uint64
	n := len(b) / 8
	w := limbs[:n]
	for i := range w {
		w[i] = binary.BigEndian.Uint64(b[i*8:])
	}
	var digits [96]byte
	nd := 0
	for {
		nonZero := false
		var rem uint64
		for i := range w {
			w[i], rem = bits.Div64(rem, w[i], big58)
			if w[i] != 0 {
				nonZero = true
			}
		}
		for k := 0; k < 10; k++ {
			digits[nd] = byte(rem % 58)
			rem /= 58
			nd++
			if !nonZero && rem == 0 {
				break
			}
		}
		if !nonZero {
			break
		}
	}
	for nd > 1 && digits[nd-1] == 0 {
		nd--
	}
	if zeros == len(b) {
		nd = 0
	}
	out := make([]byte, zeros+nd)
	for i := 0; i < zeros; i++ {
		out[i] = '1'
	}
	for i := 0; i < nd; i++ {
		out[zeros+i] = b58[digits[nd-1-i]]
	}
	return string(out)
}

// bytesOf expands a hash stream into n bytes.
func (m *market) bytesOf(n int, tag, a, b uint64) []byte {
	out := make([]byte, n)
	for i := 0; i < n; i += 8 {
		x := m.h(tag, a, b, uint64(i))
		for j := 0; j < 8 && i+j < n; j++ {
			out[i+j] = byte(x >> (8 * j))
		}
	}
	return out
}

// solAddr is a 32-byte base58 address (mint, wallet). The first byte is
// kept non-zero so the result is 43 or 44 characters, never shorter.
func (m *market) solAddr(tag, a, b uint64) string {
	bs := m.bytesOf(32, tag, a, b)
	bs[0] |= 0x80
	return base58(bs)
}

const hexDigits = "0123456789abcdef"

// evmHex is 0x plus n hex digits.
func (m *market) evmHex(n int, tag, a, b uint64) string {
	var sb strings.Builder
	sb.Grow(n + 2)
	sb.WriteString("0x")
	bs := m.bytesOf((n+1)/2, tag, a, b)
	for i := 0; i < n; i++ {
		v := bs[i/2]
		if i%2 == 0 {
			v >>= 4
		}
		sb.WriteByte(hexDigits[v&0xf])
	}
	return sb.String()
}

// mixedCase upper-cases the hex letters of an address where the hash says
// so, like a checksummed address.
func mixedCase(addr string, x uint64) string {
	b := []byte(addr)
	for i := 2; i < len(b); i++ {
		if b[i] >= 'a' && b[i] <= 'f' && (x>>(uint(i)%64))&1 == 1 {
			b[i] -= 'a' - 'A'
		}
	}
	return string(b)
}

// bigDecimal is a decimal string of exactly n digits (n ≤ 76) from hashes.
func (m *market) bigDecimal(n int, tag, a, b uint64) string {
	var sb strings.Builder
	for k := uint64(0); sb.Len() < n; k++ {
		sb.WriteString(strconv.FormatUint(m.h(tag, a, b, k)%1e18, 10))
	}
	s := sb.String()[:n]
	if s[0] == '0' {
		s = "1" + s[1:]
	}
	return s
}

// scale returns base × (num/den) + noise, exact in big integers.
func scale(base *big.Int, num, den int64, noise uint64) *big.Int {
	v := new(big.Int).Mul(base, big.NewInt(num))
	v.Quo(v, big.NewInt(den))
	return v.Add(v, new(big.Int).SetUint64(noise))
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func floorMod(a, b int64) int64 { return a - floorDiv(a, b)*b }

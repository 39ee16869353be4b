package httpapi

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// FuzzCursorParse: any text either verifies or is a BadRequest; it never
// panics, and a minted cursor always round-trips.
func FuzzCursorParse(f *testing.F) {
	cc := newCursorCodec([]byte("k"), time.Hour)
	minted := cc.appendCursor(nil, cursor{kind: cursorSales, bind: "x", pos: "abc"}, t0)
	f.Add(string(minted), "abc", uint64(3))
	f.Add("", "", uint64(0))
	f.Add("null", "p", uint64(1))
	f.Add("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "", uint64(250))
	f.Fuzz(func(t *testing.T, text, pos string, off uint64) {
		if k, err := cc.parse(text, cursorSales, "x", t0); err == nil {
			assert.Equal(t, cursorSales, k.kind)
		}
		c := cc.appendCursor(nil, cursor{kind: cursorListings, bind: "id", pos: pos, offset: off, version: off + 1}, t0)
		if len(c) > maxCursorLen {
			return
		}
		k, err := cc.parse(string(c), cursorListings, "id", t0)
		require.NoError(t, err)
		assert.Equal(t, cursor{kind: cursorListings, bind: "id", pos: pos, offset: off, version: off + 1, exp: cc.expiry(t0)}, k)
	})
}

// FuzzTokenPath: any token path answers 200, 400 or 404.
func FuzzTokenPath(f *testing.F) {
	f.Add("ethereum", testContract, "1")
	f.Add("solana", solMint, solAsset)
	f.Add("SOLANA", "0x", "")
	h := MustHarness(f, func(c *Config) { c.RateItem = 1 << 30 })
	f.Fuzz(func(t *testing.T, chain, address, tokenID string) {
		for _, s := range []string{chain, address, tokenID} {
			for i := 0; i < len(s); i++ {
				if s[i] <= ' ' || s[i] == '/' || s[i] == '?' || s[i] == '#' || s[i] == '%' || s[i] >= 0x7f {
					return // not a single, valid path segment
				}
			}
		}
		if chain == "" || address == "" || tokenID == "" {
			return
		}
		h.t = t
		res := h.get("/v1/tokens/" + chain + "/" + address + "/" + tokenID)
		assert.Contains(t, []int{200, 400, 404}, res.status)
	})
}

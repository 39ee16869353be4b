package httpapi

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel"
)

func txs(t *testing.T, r result) []string {
	t.Helper()
	var out []string
	for _, it := range data(t, r) {
		out = append(out, it.(map[string]any)["tx"].(string))
	}
	return out
}

func TestSales(t *testing.T) {
	t.Run("newest first; new sales never shift a walk", func(t *testing.T) {
		h := MustHarness(t, nil)
		var got []string
		next := ""
		for page := 0; ; page++ {
			require.Less(t, page, 10)
			target := "/v1/collections/" + testSlug + "/sales?limit=5"
			if next != "" {
				target += "&cursor=" + next
			}
			res := h.get(target)
			require.Equal(t, 200, res.status, "%s", res.body)
			got = append(got, txs(t, res)...)
			var more bool
			next, more = pagination(t, res)
			if !more {
				break
			}
			h.r.sales[testID] = append(h.r.sales[testID], saleItem(testID, 100+page)) // a new sale lands
		}
		require.Len(t, got, 12)
		for i, tx := range got {
			assert.True(t, strings.HasSuffix(tx, "0"+hexDigit(11-i)), "position %d: %s", i, tx)
		}
	})
	t.Run("an empty page with hasMore true keeps the walk going", func(t *testing.T) {
		h := MustHarness(t, nil)
		h.r.salesDrop = true // the store dropped every uninterpretable row of the window
		res := h.get("/v1/collections/" + testID + "/sales?limit=5")
		require.Equal(t, 200, res.status)
		assert.Empty(t, data(t, res))
		next, more := pagination(t, res)
		assert.True(t, more)
		assert.NotEmpty(t, next)
	})
	tests := []struct {
		name   string
		id     string
		setup  func(*harness)
		status int
		code   string
	}{
		{"unresolved", "nope", nil, 404, "not_found"},
		{"no contract address", noContractID, nil, 404, "not_found"},
		{"node read failure", testID, func(h *harness) { h.r.setErr("Sales", assert.AnError) }, 502, "upstream_error"},
		{"upstream failure", testID, func(h *harness) {
			h.r.setErr("Sales", readmodel.Errorf(readmodel.UpstreamError, "sales unavailable"))
		}, 502, "upstream_error"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := MustHarness(t, nil)
			if tc.setup != nil {
				tc.setup(h)
			}
			res := h.get("/v1/collections/" + tc.id + "/sales")
			require.Equal(t, tc.status, res.status, "%s", res.body)
			assert.Equal(t, tc.code, res.errorCode(t))
		})
	}
	t.Run("unresolvable position is 400", func(t *testing.T) {
		h := MustHarness(t, nil)
		res := h.get("/v1/collections/" + testID + "/sales?limit=5")
		next, _ := pagination(t, res)
		h.r.sales[testID] = h.r.sales[testID][:3] // history truncated: the position is gone
		res = h.get("/v1/collections/" + testID + "/sales?limit=5&cursor=" + next)
		require.Equal(t, http.StatusBadRequest, res.status)
		assert.Equal(t, "bad_request", res.errorCode(t))
	})
}

func hexDigit(i int) string { return string("0123456789abcdef"[i]) }

// TestTokenValidation is SPEC §4's token table, in its order: chain and
// address before lookup.
func TestTokenValidation(t *testing.T) {
	evm := "0xABCDEFabcdef0123456789012345678901234567"
	tests := []struct {
		name   string
		path   string
		status int
		lookup bool
		want   [3]string // chain, address, tokenId passed to the Reader
	}{
		{"evm ok, address lowercased", "ethereum/" + evm + "/42", 200, true, [3]string{"ethereum", strings.ToLower(evm), "42"}},
		{"chain case-insensitive", "EtHeReUm/" + evm + "/42", 200, true, [3]string{"ethereum", strings.ToLower(evm), "42"}},
		{"robinhood", "robinhood/" + evm + "/42", 404, true, [3]string{"robinhood", strings.ToLower(evm), "42"}},
		{"0X prefix", "base/0X" + evm[2:] + "/1", 404, true, [3]string{"base", strings.ToLower(evm), "1"}},
		{"evm non-0x address", "ethereum/" + solMint + "/1", 400, false, [3]string{}},
		{"evm short hex", "polygon/0xabc/1", 400, false, [3]string{}},
		{"evm 41 hex", "polygon/" + evm + "a/1", 400, false, [3]string{}},
		{"evm non-hex", "ink/0x" + strings.Repeat("g", 40) + "/1", 400, false, [3]string{}},
		{"solana with 0x address", "solana/" + evm + "/" + solAsset, 400, false, [3]string{}},
		{"solana ok, case kept", "solana/" + solMint + "/" + solAsset, 200, true, [3]string{"solana", solMint, solAsset}},
		{"SOLANA chain case", "SOLANA/" + solMint + "/" + solAsset, 200, true, [3]string{"solana", solMint, solAsset}},
		{"solana lowercase mint is another mint", "solana/" + strings.ToLower(solMint) + "/" + solAsset, 404, true, [3]string{"solana", strings.ToLower(solMint), solAsset}},
		{"solana mint 31 chars", "solana/" + solMint[:31] + "/" + solAsset, 400, false, [3]string{}},
		{"solana mint 45 chars", "solana/" + solMint + "2/" + solAsset, 400, false, [3]string{}},
		{"solana mint not base58 (0)", "solana/" + "0" + solMint[1:] + "/" + solAsset, 400, false, [3]string{}},
		{"solana mint not base58 (l)", "solana/" + "l" + solMint[1:] + "/" + solAsset, 400, false, [3]string{}},
		{"unknown chain", "bitcoin/" + evm + "/1", 400, false, [3]string{}},
		{"unknown chain and bad address", "bitcoin/zzz/1", 400, false, [3]string{}},
		{"invalid asset mint is only length-checked", "solana/" + solMint + "/not-a-mint!", 404, true, [3]string{"solana", solMint, "not-a-mint!"}},
		{"swapped solana mints", "solana/" + solAsset + "/" + solMint, 404, true, [3]string{"solana", solAsset, solMint}},
		{"tokenId 100 chars", "ethereum/" + evm + "/" + strings.Repeat("9", 100), 404, true, [3]string{"ethereum", strings.ToLower(evm), strings.Repeat("9", 100)}},
		{"tokenId 101 chars", "ethereum/" + evm + "/" + strings.Repeat("9", 101), 404, false, [3]string{}},
		{"bad chain beats long tokenId", "bitcoin/" + evm + "/" + strings.Repeat("9", 101), 400, false, [3]string{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := MustHarness(t, nil)
			h.r.tokens["ethereum|"+strings.ToLower(evm)+"|42"] = tokenView(1)
			h.r.tokens["solana|"+solMint+"|"+solAsset] = overlayTokenView(1)
			res := h.get("/v1/tokens/" + tc.path)
			require.Equal(t, tc.status, res.status, "%s", res.body)
			if tc.status == 400 {
				assert.Equal(t, "bad_request", res.errorCode(t))
			}
			if tc.status == 404 {
				assert.Equal(t, "not_found", res.errorCode(t))
			}
			if !tc.lookup {
				assert.Zero(t, h.r.count("Token"), "validated before lookup")
				return
			}
			assert.Equal(t, tc.want, h.r.lastToken)
		})
	}
}

func TestTokenTimeSlot(t *testing.T) {
	h := MustHarness(t, nil)
	h.r.tokens["solana|"+solMint+"|"+solAsset] = overlayTokenView(1)
	res := h.get("/v1/tokens/solana/" + solMint + "/" + solAsset)
	require.Equal(t, 200, res.status)
	d := res.json(t)["data"].(map[string]any)
	assert.Equal(t, readmodel.FormatTime(t0), d["listing"].(map[string]any)["timestamp"])
	assert.Equal(t, solAsset, d["mint"])
	h.clock.Add(time.Second)
	d = h.get("/v1/tokens/solana/" + solMint + "/" + solAsset).json(t)["data"].(map[string]any)
	assert.Equal(t, readmodel.FormatTime(t0.Add(time.Second)), d["listing"].(map[string]any)["timestamp"])
}

package httpapi

import (
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/render"
)

// TestParametersSayWhatTheServerChecks sends sample requests to the server
// and asks the OpenAPI document (libopenapi-validator, as a user's test
// tooling would) whether it calls each valid: a request the document
// calls valid must not be refused with 400, and one it calls invalid
// must be. Cursors are opaque and signed, so a well-formed but unsigned
// one is the one thing the document cannot rule out.
func TestParametersSayWhatTheServerChecks(t *testing.T) {
	h := MustHarness(t, nil)
	h.r.addEvents(testID, 12)
	cursorOf := func(target string) string {
		next, _ := pagination(t, h.get(target))
		require.NotEmpty(t, next, target)
		return next
	}
	listingsCursor := cursorOf("/v1/collections/" + testID + "/listings?limit=1")
	salesCursor := cursorOf("/v1/collections/" + testID + "/sales?limit=1")
	eventsCursor := cursorOf("/v1/collections/" + testID + "/events?limit=1")
	marketCursor := cursorOf("/v1/events?limit=1")
	twenty := strings.TrimSuffix(strings.Repeat(testSlug+",", 20), ",")
	collectionsCursor := cursorOf("/v1/collections?limit=1")

	evm := "0x" + strings.Repeat("ab", 20)
	mint := "7xKXtg2CW87d97TXJSDpbD5jBkheTqA83TZRuJosgAsU"
	tok := func(chain, address, id string) string {
		return "/v1/tokens/" + url.PathEscape(chain) + "/" + url.PathEscape(address) + "/" + url.PathEscape(id)
	}
	ids := func(list ...string) string { return "/v1/tokens?ids=" + url.QueryEscape(strings.Join(list, ",")) }
	fifty := make([]string, 50)
	for i := range fifty {
		fifty[i] = "ethereum/" + evm + "/" + itoa(i)
	}
	tests := []struct {
		name   string
		target string
		valid  bool
	}{
		{"token: chain lowercase", tok("ethereum", evm, "1"), true},
		{"token: chain in capitals", tok("ETHEREUM", evm, "1"), true},
		{"token: chain mixed case", tok("SoLaNa", mint, "x"), true},
		{"token: robinhood", tok("robinhood", evm, "1"), true},
		{"token: unknown chain", tok("bitcoin", evm, "1"), false},
		{"token: chain with a suffix", tok("ethereums", evm, "1"), false},
		{"token: EVM address in capitals", tok("ethereum", strings.ToUpper(evm[:2])+strings.ToUpper(evm[2:]), "1"), true},
		{"token: EVM address one short", tok("ethereum", evm[:41], "1"), false},
		{"token: EVM address not hex", tok("ethereum", "0x"+strings.Repeat("zz", 20), "1"), false},
		{"token: hex without 0x", tok("ethereum", strings.Repeat("0f", 21), "1"), false},
		{"token: base58 mint", tok("solana", mint, "x"), true},
		{"token: base58 of 32", tok("solana", mint[:32], "x"), true},
		{"token: base58 of 31", tok("solana", mint[:31], "x"), false},
		{"token: base58 of 45", tok("solana", mint+"a", "x"), false},
		{"token: base58 with an l", tok("solana", "l"+mint[1:], "x"), false},
		{"token: base58 with a 0", tok("solana", "0"+mint[1:], "x"), false},
		{"token: tokenId of 100", tok("ethereum", evm, strings.Repeat("9", 100)), true},
		{"token: tokenId of 101 (404, not 400)", tok("ethereum", evm, strings.Repeat("9", 101)), false},

		{"ids: one", ids("ethereum/" + evm + "/1"), true},
		{"ids: fifty", ids(fifty...), true},
		{"ids: fifty-one", ids(append(fifty, "ethereum/"+evm+"/51")...), false},
		{"ids: a bad chain is answered in place", ids("bitcoin/x/1"), true},
		{"ids: two segments", ids("ethereum/" + evm), false},
		{"ids: four segments", ids("ethereum/" + evm + "/1/2"), false},
		{"ids: an empty segment", ids("ethereum//1"), false},
		{"ids: a trailing comma", "/v1/tokens?ids=" + url.QueryEscape("ethereum/"+evm+"/1,"), false},
		{"ids: empty", "/v1/tokens?ids=", false},
		{"ids: absent", "/v1/tokens", false},

		{"types: one", "/v1/collections/" + testID + "/events?types=sale", true},
		{"types: all five", "/v1/collections/" + testID + "/events?types=" + strings.Join(render.EventTypes[:], ","), true},
		{"types: repeated", "/v1/collections/" + testID + "/events?types=sale,sale", true},
		{"types: unknown", "/v1/collections/" + testID + "/events?types=transfer", false},
		{"types: in capitals", "/v1/collections/" + testID + "/events?types=SALE", false},
		{"types: a space", "/v1/collections/" + testID + "/events?types=sale,%20floor_changed", false},
		{"types: an empty item", "/v1/collections/" + testID + "/events?types=sale,", false},
		{"types: empty", "/v1/collections/" + testID + "/events?types=", false},

		{"cursor: listings", "/v1/collections/" + testID + "/listings?cursor=" + listingsCursor, true},
		{"cursor: sales", "/v1/collections/" + testID + "/sales?cursor=" + salesCursor, true},
		{"cursor: events", "/v1/collections/" + testID + "/events?cursor=" + eventsCursor, true},
		{"cursor: market", "/v1/events?cursor=" + marketCursor, true},
		{"market: chain", "/v1/events?chain=solana", true},
		{"market: chain in capitals", "/v1/events?chain=Solana", false},
		{"market: types", "/v1/events?types=sale,floor_changed", true},
		{"market: types unknown", "/v1/events?types=transfer", false},
		{"market: a collection", "/v1/events?collections=" + testSlug, true},
		{"market: 20 collections", "/v1/events?collections=" + twenty, true},
		{"market: 21 collections", "/v1/events?collections=" + twenty + "," + testID, false},
		{"market: an empty item", "/v1/events?collections=" + testID + ",", false},
		{"market: empty collections", "/v1/events?collections=", false},
		{"market: a 200-character id (404, not 400)", "/v1/events?collections=" + strings.Repeat("b", 200), true},
		{"market: a 201-character id (404, not 400)", "/v1/events?collections=" + strings.Repeat("b", 201), true},
		{"cursor: collections", "/v1/collections?cursor=" + collectionsCursor, true},
		{"cursor: null", "/v1/collections?cursor=null", false},
		{"cursor: empty", "/v1/collections?cursor=", false},
		{"cursor: short", "/v1/collections?cursor=abc", false},
		{"cursor: not base64url", "/v1/collections?cursor=" + url.QueryEscape(strings.Repeat("+/", 30)), false},
		{"cursor: padded", "/v1/collections?cursor=" + url.QueryEscape(collectionsCursor+"=="), false},
		{"cursor: a character too many", "/v1/collections?cursor=" + strings.Repeat("A", 41), false},
		{"cursor: too long", "/v1/collections?cursor=" + strings.Repeat("A", 1028), false},

		{"chain: known", "/v1/collections?chain=base", true},
		{"chain: capitals", "/v1/collections?chain=BASE", false},
		{"sort: floor", "/v1/collections?sort=floor", true},
		{"sort: unknown", "/v1/collections?sort=price", false},
		{"limit: 1", "/v1/collections?limit=1", true},
		{"limit: 100", "/v1/collections?limit=100", true},
		{"limit: 0", "/v1/collections?limit=0", false},
		{"limit: 101", "/v1/collections?limit=101", false},
		{"limit: not a number", "/v1/collections?limit=ten", false},

		{"id: 200 characters", "/v1/collections/" + strings.Repeat("b", 200), true},
		{"id: 201 characters (404, not 400)", "/v1/collections/" + strings.Repeat("b", 201), false},
	}
	v := openAPIValidator(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ok, errs := v.ValidateHttpRequest(httptest.NewRequest(http.MethodGet, tc.target, nil))
			var why []string
			for _, e := range errs {
				why = append(why, e.Message+": "+e.Reason)
			}
			assert.Equal(t, tc.valid, ok, "the document calls it valid: %v %s", ok, strings.Join(why, "; "))
			res := h.get(tc.target)
			if tc.valid {
				assert.NotEqual(t, http.StatusBadRequest, res.status, "the server refused what the document calls valid: %s", res.body)
			} else {
				assert.Contains(t, []int{http.StatusBadRequest, http.StatusNotFound}, res.status, "the server accepted what the document calls invalid: %s", res.body)
			}
		})
	}
}

// TestParameterPatternsMatchValidation draws many strings near the valid
// ones and checks that each token-path pattern of the document accepts
// exactly what the server's validation (validToken) accepts.
func TestParameterPatternsMatchValidation(t *testing.T) {
	var doc struct {
		Components struct {
			Parameters map[string]struct {
				Schema struct {
					Pattern string `json:"pattern"`
				} `json:"schema"`
			} `json:"parameters"`
		} `json:"components"`
	}
	require.NoError(t, json.Unmarshal(OpenAPIDocument, &doc))
	pattern := func(name string) *regexp.Regexp {
		p := doc.Components.Parameters[name].Schema.Pattern
		require.NotEmpty(t, p, name)
		return regexp.MustCompile(p)
	}
	chainRE, addressRE, typesRE := pattern("TokenChain"), pattern("TokenAddress"), pattern("EventTypes")
	rng := rand.New(rand.NewPCG(1, 2))
	const alphabet = "0123456789abcdefxXABCDEFIlOo_,-+/ lKZz"
	mutate := func(s string) string {
		b := []byte(s)
		switch rng.IntN(4) {
		case 0: // change a character
			if len(b) > 0 {
				b[rng.IntN(len(b))] = alphabet[rng.IntN(len(alphabet))]
			}
		case 1: // drop one
			if len(b) > 0 {
				i := rng.IntN(len(b))
				b = append(b[:i], b[i+1:]...)
			}
		case 2: // insert one
			i := rng.IntN(len(b) + 1)
			b = append(b[:i], append([]byte{alphabet[rng.IntN(len(alphabet))]}, b[i:]...)...)
		case 3: // change case
			b = []byte(strings.ToUpper(string(b)))
		}
		return string(b)
	}
	seeds := []string{"0x" + strings.Repeat("ab", 20), "7xKXtg2CW87d97TXJSDpbD5jBkheTqA83TZRuJosgAsU", strings.Repeat("1", 32), strings.Repeat("z", 44)}
	for _, c := range readmodel.Chains {
		seeds = append(seeds, string(c))
	}
	n := map[bool]int{}
	for i := 0; i < 20000; i++ {
		s := seeds[rng.IntN(len(seeds))]
		for k := rng.IntN(3); k >= 0; k-- {
			s = mutate(s)
		}
		// The chain: valid with the address of its kind.
		_, _, errEVM := validToken(s, "0x"+strings.Repeat("ab", 20), "1")
		_, _, errSol := validToken(s, "7xKXtg2CW87d97TXJSDpbD5jBkheTqA83TZRuJosgAsU", "1")
		assert.Equal(t, errEVM == nil || errSol == nil, chainRE.MatchString(s), "chain %q", s)
		// The address: valid for one of the two kinds of chain.
		_, _, errEVM = validToken("ethereum", s, "1")
		_, _, errSol = validToken("solana", s, "1")
		ok := errEVM == nil || errSol == nil
		assert.Equal(t, ok, addressRE.MatchString(s), "address %q", s)
		n[ok]++
	}
	assert.Positive(t, n[true], "valid samples drawn")
	assert.Positive(t, n[false], "invalid samples drawn")

	typeSeeds := append(render.EventTypes[:], "sale,floor_changed", "listing_added,listing_removed,price_changed")
	for i := 0; i < 5000; i++ {
		s := typeSeeds[rng.IntN(len(typeSeeds))]
		if rng.IntN(2) == 0 {
			s = mutate(s)
		}
		ok := s != ""
		for _, item := range strings.Split(s, ",") {
			ok = ok && render.EventTypeBit(item) != 0
		}
		assert.Equal(t, ok, typesRE.MatchString(s), "types %q", s)
	}
}

package normalize

import (
	"encoding/json"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/render"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var normNow = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

const (
	evmMixed   = "0xAbCdEf0123456789aBcDeF0123456789ABCDEF01"
	evmLower   = "0xabcdef0123456789abcdef0123456789abcdef01"
	solMint    = "7xKXtg2CW87d97TXJSDpbD5jBkheTqA83TZRuJosgAsU"
	solSeller  = "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM"
	solEscrow  = "1BWutmTvYPwDtmw9abTkS4Ssr8no61spGAvW1X6NDix"
	evmSeller  = "0x1111111111111111111111111111111111111111"
	aboveWei53 = "123456789012345678901234567" // far above 2^53
)

func TestNormalizeListing(t *testing.T) {
	created := "2026-11-20T10:00:00Z"
	updated := "2026-11-21T10:00:00Z"
	custody := "2026-11-20T10:00:05Z"
	tests := []struct {
		name   string
		src    readmodel.Source
		in     RawListing
		want   func(t *testing.T, r readmodel.ListingRow)
		reason RejectReason
	}{
		{
			name: "EVM address lowercased, collection id lowercased, native order id",
			src:  readmodel.SourceOrderBook,
			in: RawListing{Chain: "Ethereum", Contract: evmMixed, TokenID: "42", CollectionID: "ETHEREUM_" + evmMixed,
				Price: aboveWei53, Seller: strings.ToUpper(evmSeller[:2]) + evmSeller[2:], CreatedAt: created,
				OrderID: "ethereum_" + evmMixed + "_42_1763632800000"},
			want: func(t *testing.T, r readmodel.ListingRow) {
				assert.Equal(t, readmodel.Ethereum, r.Chain)
				assert.Equal(t, evmLower, r.ContractAddress)
				assert.Equal(t, "ethereum_"+evmLower, r.CollectionID)
				assert.Equal(t, aboveWei53, r.PriceRaw, "raw beyond 2^53 is exact")
				assert.Equal(t, evmSeller, r.Seller)
				assert.Equal(t, readmodel.MarketplaceNative, r.Marketplace)
				assert.Equal(t, "ethereum_"+evmLower+"_42_1763632800000", r.OrderID)
				assert.Equal(t, "", r.Tx, "tx is null on EVM listings")
				assert.Equal(t, readmodel.StatusActive, r.Status)
			},
		},
		{
			name: "Solana mint byte-for-byte, collection id lowercased, escrow never the seller",
			src:  readmodel.SourceOrderBook,
			in: RawListing{Chain: "solana", Mint: solMint, CollectionID: "solana_" + solSeller, Price: "1500000000",
				Seller: solEscrow, Escrow: solEscrow, CreatedAt: created, CustodyAt: custody, OrderID: solMint + "_1763632800000", Tx: "5sig"},
			want: func(t *testing.T, r readmodel.ListingRow) {
				assert.Equal(t, solMint, r.Mint)
				assert.Equal(t, strings.ToLower("solana_"+solSeller), r.CollectionID)
				assert.Equal(t, "", r.Seller)
				assert.Equal(t, solMint+"_1763632800000", r.OrderID, "solana ids keep case")
				assert.Equal(t, "5sig", r.Tx, "native Solana listing carries the escrow signature")
				assert.Equal(t, custody, r.Timestamp.Format(time.RFC3339), "native Solana: custody time first")
			},
		},
		{
			name: "Solana native row without custody time uses creation time",
			src:  readmodel.SourceOrderBook,
			in:   RawListing{Chain: "solana", Mint: solMint, CollectionID: "c", Price: "1", Seller: solSeller, Escrow: solEscrow, CreatedAt: created, UpdatedAt: updated},
			want: func(t *testing.T, r readmodel.ListingRow) {
				assert.Equal(t, solSeller, r.Seller)
				assert.Equal(t, created, r.Timestamp.Format(time.RFC3339))
			},
		},
		{
			name: "mirror strips the legacy brand prefix of native Solana ids",
			src:  readmodel.SourceIndexerMirror,
			in:   RawListing{Chain: "solana", Mint: solMint, CollectionID: "c", Price: "1", Marketplace: "native", OrderID: LegacyOrderIDPrefix + solMint + "_1", CustodyAt: custody, Tx: "x"},
			want: func(t *testing.T, r readmodel.ListingRow) {
				assert.Equal(t, solMint+"_1", r.OrderID)
				assert.Equal(t, readmodel.MarketplaceNative, r.Marketplace)
				assert.Equal(t, "x", r.Tx, "a native Solana row keeps its escrow signature")
			},
		},
		{
			name: "external ids pass through, slug lowercased, update time when no creation, no tx",
			src:  readmodel.SourceIndexerMirror,
			in:   RawListing{Chain: "base", Contract: evmMixed, TokenID: "0007", Price: "5", Marketplace: "Magic-Eden", OrderID: "0xABCDEF", UpdatedAt: updated, BuyerTotal: "6", Tx: "0xdead"},
			want: func(t *testing.T, r readmodel.ListingRow) {
				assert.Equal(t, "", r.Tx)
				assert.Equal(t, "magic-eden", r.Marketplace)
				assert.Equal(t, "0xABCDEF", r.OrderID)
				assert.Equal(t, "7", r.TokenID)
				assert.Equal(t, "base_"+evmLower, r.CollectionID, "derived from the contract")
				assert.Equal(t, updated, r.Timestamp.Format(time.RFC3339))
				assert.Equal(t, "6", r.BuyerTotalRaw)
			},
		},
		{
			name: "no creation or update time: the poll time",
			src:  readmodel.SourceIndexerMirror,
			in:   RawListing{Chain: "ink", Contract: evmLower, TokenID: "1", Price: "5", Marketplace: "x"},
			want: func(t *testing.T, r readmodel.ListingRow) { assert.True(t, r.Timestamp.Equal(normNow)) },
		},
		{
			name: "future expiry kept",
			src:  readmodel.SourceOrderBook,
			in:   RawListing{Chain: "ink", Contract: evmLower, TokenID: "1", Price: "5", ExpiresAt: "2026-11-22T12:00:01Z"},
			want: func(t *testing.T, r readmodel.ListingRow) {
				require.NotNil(t, r.ExpiresAt)
				assert.Equal(t, "2026-11-22T12:00:01Z", r.ExpiresAt.Format(time.RFC3339))
			},
		},
		{name: "expired row dropped", src: readmodel.SourceOrderBook, reason: RejectExpired,
			in: RawListing{Chain: "ink", Contract: evmLower, TokenID: "1", Price: "5", ExpiresAt: "2026-11-22T12:00:00Z"}},
		{name: "cancelled row dropped", src: readmodel.SourceIndexerMirror, reason: RejectInactive,
			in: RawListing{Chain: "ink", Contract: evmLower, TokenID: "1", Price: "5", Marketplace: "x", Status: "cancelled"}},
		{name: "unknown status", src: readmodel.SourceIndexerMirror, reason: RejectBadField,
			in: RawListing{Chain: "ink", Contract: evmLower, TokenID: "1", Price: "5", Marketplace: "x", Status: "weird"}},
		{name: "unknown chain", src: readmodel.SourceOrderBook, reason: RejectUnknownChain,
			in: RawListing{Chain: "tezos", Contract: evmLower, TokenID: "1", Price: "5"}},
		{name: "malformed EVM address", src: readmodel.SourceOrderBook, reason: RejectBadAddress,
			in: RawListing{Chain: "ethereum", Contract: "0x123", TokenID: "1", Price: "5"}},
		{name: "Solana row with a 0x mint", src: readmodel.SourceOrderBook, reason: RejectBadAddress,
			in: RawListing{Chain: "solana", Mint: evmLower, CollectionID: "c", Price: "5"}},
		{name: "Solana mint with non-base58 letter", src: readmodel.SourceOrderBook, reason: RejectBadAddress,
			in: RawListing{Chain: "solana", Mint: "0" + solMint[1:], CollectionID: "c", Price: "5"}},
		{name: "negative price", src: readmodel.SourceOrderBook, reason: RejectBadPrice,
			in: RawListing{Chain: "ethereum", Contract: evmLower, TokenID: "1", Price: "-5"}},
		{name: "fractional price", src: readmodel.SourceOrderBook, reason: RejectBadPrice,
			in: RawListing{Chain: "ethereum", Contract: evmLower, TokenID: "1", Price: "1.5"}},
		{name: "exponent price", src: readmodel.SourceOrderBook, reason: RejectBadPrice,
			in: RawListing{Chain: "ethereum", Contract: evmLower, TokenID: "1", Price: "1e18"}},
		{name: "missing price", src: readmodel.SourceOrderBook, reason: RejectBadPrice,
			in: RawListing{Chain: "ethereum", Contract: evmLower, TokenID: "1"}},
		{name: "non-decimal token id", src: readmodel.SourceOrderBook, reason: RejectBadField,
			in: RawListing{Chain: "ethereum", Contract: evmLower, TokenID: "0x1", Price: "1"}},
		{name: "oversized token id", src: readmodel.SourceOrderBook, reason: RejectOversized,
			in: RawListing{Chain: "ethereum", Contract: evmLower, TokenID: strings.Repeat("9", 101), Price: "1"}},
		{name: "oversized order id", src: readmodel.SourceOrderBook, reason: RejectOversized,
			in: RawListing{Chain: "ethereum", Contract: evmLower, TokenID: "1", Price: "1", OrderID: strings.Repeat("a", 201)}},
		{name: "oversized collection id", src: readmodel.SourceOrderBook, reason: RejectOversized,
			in: RawListing{Chain: "ethereum", Contract: evmLower, TokenID: "1", Price: "1", CollectionID: strings.Repeat("a", 201)}},
		{name: "bad time", src: readmodel.SourceOrderBook, reason: RejectBadField,
			in: RawListing{Chain: "ethereum", Contract: evmLower, TokenID: "1", Price: "1", CreatedAt: "yesterday"}},
		{name: "malformed seller", src: readmodel.SourceOrderBook, reason: RejectBadAddress,
			in: RawListing{Chain: "ethereum", Contract: evmLower, TokenID: "1", Price: "1", Seller: "bob"}},
		{name: "mirror row without marketplace", src: readmodel.SourceIndexerMirror, reason: RejectBadField,
			in: RawListing{Chain: "ethereum", Contract: evmLower, TokenID: "1", Price: "1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Listing(tc.src, tc.in, normNow)
			if tc.reason != "" {
				require.Error(t, err)
				assert.Equal(t, tc.reason, ReasonOf(err))
				return
			}
			require.NoError(t, err)
			tc.want(t, r)
		})
	}
}

func TestNormalizePriceRoundTrip(t *testing.T) {
	tests := []struct {
		name    string
		chain   readmodel.Chain
		raw     string
		wantRaw string
		decimal float64
		cur     string
	}{
		{name: "wei above 2^53 exact", chain: readmodel.Ethereum, raw: "9007199254740993123", wantRaw: "9007199254740993123", decimal: 9.007199254740993, cur: "ETH"},
		{name: "leading zeros canonical", chain: readmodel.Base, raw: "000120000000000000000000", wantRaw: "120000000000000000000", decimal: 120, cur: "ETH"},
		{name: "lamports 9 decimals", chain: readmodel.Solana, raw: "1500000000", wantRaw: "1500000000", decimal: 1.5, cur: "SOL"},
		{name: "polygon MATIC", chain: readmodel.Polygon, raw: "2000000000000000000", wantRaw: "2000000000000000000", decimal: 2, cur: "MATIC"},
		{name: "apechain APE", chain: readmodel.ApeChain, raw: "1", wantRaw: "1", decimal: 1e-18, cur: "APE"},
		{name: "abstract ETH", chain: readmodel.Abstract, raw: "1000000000000000000", wantRaw: "1000000000000000000", decimal: 1, cur: "ETH"},
		{name: "robinhood ETH", chain: readmodel.Robinhood, raw: "0", wantRaw: "0", decimal: 0, cur: "ETH"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := PriceRaw(tc.raw)
			require.NoError(t, err)
			assert.Equal(t, tc.wantRaw, raw)
			n, ok := new(big.Int).SetString(raw, 10)
			require.True(t, ok)
			p := render.NewPrice(tc.chain, n, nil)
			b, err := json.Marshal(p)
			require.NoError(t, err)
			var back readmodel.Price
			require.NoError(t, json.Unmarshal(b, &back))
			assert.Equal(t, tc.wantRaw, back.Raw, "raw survives JSON exactly")
			assert.InDelta(t, tc.decimal, back.Decimal, tc.decimal*1e-12)
			assert.Equal(t, tc.cur, back.Currency)
		})
	}
}

func TestNormalizeRates(t *testing.T) {
	tests := []struct {
		name     string
		in       map[string]float64
		want     readmodel.USDRates
		rejected []string
	}{
		{name: "SOL and ETH kept, no feed for MATIC and APE", in: map[string]float64{"sol": 150, "ETH": 3000, "MATIC": 0.5, "APE": 1.2},
			want: readmodel.USDRates{"SOL": 150, "ETH": 3000}},
		{name: "non-positive and unknown rejected", in: map[string]float64{"SOL": -1, "ETH": 0, "DOGE": 1},
			want: readmodel.USDRates{}, rejected: []string{"DOGE", "ETH", "SOL"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, rej := Rates(tc.in)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.rejected, rej)
			for _, c := range []readmodel.Chain{readmodel.Polygon, readmodel.ApeChain} {
				r := got[c.Currency()]
				p := render.NewPrice(c, big.NewInt(1e18), &r)
				assert.Nil(t, p.USD, "usd is null on %s", c)
			}
		})
	}
}

func TestNormalizeSale(t *testing.T) {
	tests := []struct {
		name   string
		in     RawSale
		want   func(t *testing.T, r readmodel.SaleRow)
		reason RejectReason
	}{
		{
			name: "block time wins over write time",
			in: RawSale{Chain: "ethereum", Contract: evmMixed, TokenID: "1", Price: aboveWei53, Seller: evmSeller, Buyer: evmMixed,
				BlockTime: "2026-09-01T00:00:00Z", RecordedAt: "2026-09-01T00:00:03Z", OrderID: "ethereum_" + evmMixed + "_1_5", Tx: "0xAB"},
			want: func(t *testing.T, r readmodel.SaleRow) {
				assert.Equal(t, "2026-09-01T00:00:00Z", r.Timestamp.Format(time.RFC3339))
				assert.Equal(t, aboveWei53, r.PriceRaw)
				assert.Equal(t, evmLower, r.Buyer)
				assert.Equal(t, readmodel.MarketplaceNative, r.Marketplace)
				assert.Equal(t, readmodel.StatusSold, r.Status)
				assert.Equal(t, "0xab", r.Tx)
			},
		},
		{
			name: "legacy row before the cutoff keeps its write time",
			in:   RawSale{Chain: "solana", Mint: solMint, CollectionID: "Solana_X", Price: "5", RecordedAt: "2025-01-01T00:00:07Z", Marketplace: "tensor", Tx: "5Sig"},
			want: func(t *testing.T, r readmodel.SaleRow) {
				assert.Equal(t, "2025-01-01T00:00:07Z", r.Timestamp.Format(time.RFC3339))
				assert.Equal(t, "solana_x", r.CollectionID)
				assert.Equal(t, "", r.OrderID, "no listing recorded: null")
				assert.Equal(t, "5Sig", r.Tx, "Solana signature case kept")
			},
		},
		{
			name: "escrow seller dropped",
			in:   RawSale{Chain: "solana", Mint: solMint, CollectionID: "c", Price: "5", Seller: solEscrow, Escrow: solEscrow, BlockTime: "2026-09-01T00:00:00Z"},
			want: func(t *testing.T, r readmodel.SaleRow) { assert.Equal(t, "", r.Seller) },
		},
		{name: "uninterpretable price", reason: RejectBadPrice, in: RawSale{Chain: "ethereum", Contract: evmLower, TokenID: "1", Price: "12.5ETH", BlockTime: "2026-09-01T00:00:00Z"}},
		{name: "no time at all", reason: RejectBadField, in: RawSale{Chain: "ethereum", Contract: evmLower, TokenID: "1", Price: "1"}},
		{name: "unknown chain", reason: RejectUnknownChain, in: RawSale{Chain: "", Contract: evmLower, TokenID: "1", Price: "1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Sale(tc.in)
			if tc.reason != "" {
				assert.Equal(t, tc.reason, ReasonOf(err))
				return
			}
			require.NoError(t, err)
			tc.want(t, r)
		})
	}
}

func TestNormalizeCollection(t *testing.T) {
	bps := int64(500)
	neg := int64(-3)
	tests := []struct {
		name   string
		in     RawCollection
		want   func(t *testing.T, d readmodel.CollectionDoc)
		reason RejectReason
	}{
		{
			name: "EVM document lowercased, fallbacks applied",
			in:   RawCollection{ID: "Ethereum_" + evmMixed, Chain: "ethereum", Contract: evmMixed, RoyaltyBps: &bps, Floor: "0012", Supply: &neg},
			want: func(t *testing.T, d readmodel.CollectionDoc) {
				assert.Equal(t, "ethereum_"+evmLower, d.ID)
				assert.Equal(t, evmLower, d.ContractAddress)
				assert.Equal(t, d.ID, d.Name, "name falls back to the id")
				assert.Equal(t, evmLower, d.Slug, "slug falls back to the contract")
				assert.Equal(t, int64(500), *d.RoyaltyBps)
				assert.Equal(t, "12", d.FloorRaw)
				assert.Nil(t, d.Supply, "negative supply is unknown")
			},
		},
		{
			name: "Solana collection mint keeps case, id lowercased",
			in:   RawCollection{ID: "solana_" + solMint, Chain: "solana", Contract: solMint, Name: "N", ExternalSlug: "ext", Symbol: "SYM", Floor: "oops"},
			want: func(t *testing.T, d readmodel.CollectionDoc) {
				assert.Equal(t, strings.ToLower("solana_"+solMint), d.ID)
				assert.Equal(t, solMint, d.ContractAddress)
				assert.Equal(t, "ext", d.Slug)
				assert.Equal(t, "", d.FloorRaw, "garbage snapshot floor is null")
			},
		},
		{
			name: "slug falls back to the symbol",
			in:   RawCollection{ID: "x", Chain: "base", Symbol: "SYM"},
			want: func(t *testing.T, d readmodel.CollectionDoc) { assert.Equal(t, "SYM", d.Slug) },
		},
		{
			name: "missing or unrecognised chain kept as null chain",
			in:   RawCollection{ID: "tezos_kt1", Chain: "tezos"},
			want: func(t *testing.T, d readmodel.CollectionDoc) { assert.Equal(t, readmodel.Chain(""), d.Chain) },
		},
		{
			name: "no contract is fine",
			in:   RawCollection{ID: "ethereum_drop", Chain: "ethereum"},
			want: func(t *testing.T, d readmodel.CollectionDoc) { assert.Equal(t, "", d.ContractAddress) },
		},
		{name: "malformed contract", reason: RejectBadAddress, in: RawCollection{ID: "x", Chain: "ethereum", Contract: "0xnope"}},
		{name: "oversized description", reason: RejectOversized, in: RawCollection{ID: "x", Description: strings.Repeat("d", readmodel.MaxDescriptionLen+1)}},
		{name: "missing id", reason: RejectBadField, in: RawCollection{Chain: "ethereum"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Collection(tc.in)
			if tc.reason != "" {
				assert.Equal(t, tc.reason, ReasonOf(err))
				return
			}
			require.NoError(t, err)
			tc.want(t, d)
		})
	}
}

func TestNormalizeToken(t *testing.T) {
	rank := int64(3)
	tests := []struct {
		name   string
		in     RawToken
		want   func(t *testing.T, d readmodel.TokenDoc)
		reason RejectReason
	}{
		{
			name: "EVM token with overlay listing and last sale",
			in: RawToken{Chain: "ethereum", Contract: evmMixed, TokenID: "123456789012345678901234567890123456789012", Owner: evmSeller, RarityRank: &rank,
				Overlay:  &RawListing{Price: "9", Marketplace: "opensea", OrderID: "0xhash"},
				LastSale: aboveWei53},
			want: func(t *testing.T, d readmodel.TokenDoc) {
				assert.Equal(t, evmLower, d.ContractAddress)
				assert.Equal(t, "ethereum_"+evmLower, d.CollectionID)
				require.NotNil(t, d.Overlay)
				assert.Equal(t, "0xhash", d.Overlay.OrderID)
				assert.Equal(t, "123456789012345678901234567890123456789012", d.Overlay.TokenID)
				assert.Equal(t, aboveWei53, d.LastSaleRaw)
			},
		},
		{
			name: "Solana escrow token: custody kept, garbage last sale null, expired overlay dropped",
			in: RawToken{Chain: "solana", Contract: solSeller, TokenID: solMint, CollectionID: "solana_" + solSeller, Owner: solEscrow, InCustody: true,
				Overlay: &RawListing{Price: "1", Marketplace: "NATIVE", ExpiresAt: "2020-01-01T00:00:00Z"}, LastSale: "1.2"},
			want: func(t *testing.T, d readmodel.TokenDoc) {
				assert.Equal(t, solMint, d.TokenID)
				assert.True(t, d.InCustody)
				assert.Equal(t, "in escrow", d.CustodyLabel)
				assert.Nil(t, d.Overlay)
				assert.Equal(t, "", d.LastSaleRaw)
			},
		},
		{name: "bad owner", reason: RejectBadAddress, in: RawToken{Chain: "ethereum", Contract: evmLower, TokenID: "1", Owner: "0x"}},
		{name: "unknown chain", reason: RejectUnknownChain, in: RawToken{Chain: "bitcoin", Contract: evmLower, TokenID: "1"}},
		{name: "swapped solana mint", reason: RejectBadAddress, in: RawToken{Chain: "solana", Contract: solMint, TokenID: "42"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Token(tc.in, normNow)
			if tc.reason != "" {
				assert.Equal(t, tc.reason, ReasonOf(err))
				return
			}
			require.NoError(t, err)
			tc.want(t, d)
		})
	}
}

func TestNormalizeStatsAnalytics(t *testing.T) {
	neg, one := int64(-1), int64(1)
	f := 2.5
	id, s, err := Stats(RawStats{CollectionID: "Base_X", Owners: &neg, ListedCount: &one})
	require.NoError(t, err)
	assert.Equal(t, "base_x", id)
	assert.Nil(t, s.Owners)
	assert.Equal(t, int64(1), *s.ListedCount)

	_, a, err := Analytics(RawAnalytics{CollectionID: "c", Floor: "10", Volume7d: &f, Sales24h: &neg})
	require.NoError(t, err)
	assert.Equal(t, "10", a.FloorRaw)
	assert.Equal(t, 2.5, *a.Volume7d)
	assert.Nil(t, a.Sales24h)

	_, _, err = Analytics(RawAnalytics{CollectionID: "c", Floor: "-10"})
	assert.Equal(t, RejectBadPrice, ReasonOf(err))
}

func TestAmountJSON(t *testing.T) {
	tests := []struct {
		name, in, want string
		fails          bool
	}{
		{name: "string", in: `"9007199254740993123"`, want: "9007199254740993123"},
		{name: "number kept verbatim", in: `9007199254740993123`, want: "9007199254740993123"},
		{name: "fraction kept verbatim", in: `1.5`, want: "1.5"},
		{name: "null", in: `null`, want: ""},
		{name: "escaped string", in: `"\u0031"`, fails: true},
		{name: "object", in: `{}`, want: "{}"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var a Amount
			err := json.Unmarshal([]byte(tc.in), &a)
			if tc.fails {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, string(a))
			_, perr := PriceRaw(string(a))
			if tc.want == "9007199254740993123" {
				assert.NoError(t, perr)
			} else {
				assert.Error(t, perr)
			}
		})
	}
}

func TestNormalizeEVMAddress(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string // "" when rejected
	}{
		{"lowercase kept", evmLower, evmLower},
		{"mixed case lowercased", evmMixed, evmLower},
		{"uppercase prefix and digits", "0X" + strings.ToUpper(evmLower[2:]), evmLower},
		{"uppercase prefix only", "0X" + evmLower[2:], evmLower},
		{"digits only", "0x" + strings.Repeat("09", 20), "0x" + strings.Repeat("09", 20)},
		{"letter beyond f", "0x" + strings.Repeat("a", 39) + "g", ""},
		{"uppercase letter beyond F", "0x" + strings.Repeat("A", 39) + "G", ""},
		{"punctuation that bit 5 would fold", "0x" + strings.Repeat("a", 39) + "@", ""},
		{"too short", evmLower[:41], ""},
		{"too long", evmLower + "0", ""},
		{"no prefix", "00" + evmLower[2:], ""},
		{"oversized", "0x" + strings.Repeat("a", readmodel.MaxIDLen), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := EVMAddress(tc.in)
			if tc.want == "" {
				require.Error(t, err)
				assert.NotEmpty(t, ReasonOf(err))
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func BenchmarkNormalizeEVMAddress(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_, _ = EVMAddress(evmMixed)
	}
}

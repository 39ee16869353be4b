package readmodel

// Chain is one of the supported chains (SPEC §1, the `chain` enumeration).
// The zero value means "missing or unrecognised".
type Chain string

// The chains, in the order of SPEC's schema enumeration. That order is also
// the deterministic preference when one address exists on two chains.
const (
	Solana    Chain = "solana"
	Ethereum  Chain = "ethereum"
	Polygon   Chain = "polygon"
	Base      Chain = "base"
	Ink       Chain = "ink"
	ApeChain  Chain = "apechain"
	Abstract  Chain = "abstract"
	Robinhood Chain = "robinhood"
)

// Chains lists every supported chain in enumeration order.
var Chains = []Chain{Solana, Ethereum, Polygon, Base, Ink, ApeChain, Abstract, Robinhood}

// ParseChain returns the chain named by s, matched exactly (callers lowercase
// first where SPEC says matching is case-insensitive). ok is false for
// anything else, including the empty string. The chain returned is the
// constant, never s itself: s may be a view of a request buffer.
func ParseChain(s string) (c Chain, ok bool) {
	for _, c := range Chains {
		if string(c) == s {
			return c, true
		}
	}
	return "", false
}

// Valid reports whether c is a supported chain.
func (c Chain) Valid() bool { _, ok := ParseChain(string(c)); return ok }

// IsEVM reports whether c is an EVM chain (every supported chain but Solana).
func (c Chain) IsEVM() bool { return c.Valid() && c != Solana }

// Rank is c's position in the enumeration (0 for solana); -1 when invalid.
func (c Chain) Rank() int {
	for i, x := range Chains {
		if x == c {
			return i
		}
	}
	return -1
}

// Decimals is the number of decimals of c's native base unit: 9 on Solana
// (lamports), 18 on every EVM chain (wei).
func (c Chain) Decimals() int {
	if c == Solana {
		return 9
	}
	return 18
}

// Currency is the native symbol reported in Price.currency. SPEC leaves
// Abstract and Robinhood chain unstated; both settle in ETH, so marketd
// reports ETH for them (documented in the README and the OpenAPI document).
func (c Chain) Currency() string {
	switch c {
	case Solana:
		return "SOL"
	case Polygon:
		return "MATIC"
	case ApeChain:
		return "APE"
	default:
		return "ETH"
	}
}

// HasUSDFeed reports whether the price feed ever quotes c's currency in USD.
// Polygon and ApeChain have no feed: their usd is always null.
func (c Chain) HasUSDFeed() bool { return c != Polygon && c != ApeChain }

// PlatformFeeBps is the platform fee on native sales: 3% on Solana, 2% on
// every EVM chain.
func (c Chain) PlatformFeeBps() int64 {
	if c == Solana {
		return 300
	}
	return 200
}

// KeepsLastGoodBuyerFloor reports whether the persisted last-good buyer floor
// store exists for c (SPEC: solana and ethereum only).
func (c Chain) KeepsLastGoodBuyerFloor() bool { return c == Solana || c == Ethereum }

// Package sim is marketd's upstream simulator: one HTTP handler that serves
// the seven upstream wire contracts documented in package
// github.com/marketd/marketd/ingest/source, each under its own path prefix
// (http://simaddr/<source-name>/...), plus the fixed /_sim control API.
//
// # Determinism and size
//
// The market is lazy: every value is a pure function of (seed, collection
// index, token index, tick), computed by hashing when asked for; nothing
// proportional to the market size is held in memory, so 100,000 collections
// and 10 million tokens cost no more memory than 300. Two simulators with
// the same Options (seed, sizes, Anchor, Step) and the same tick count give
// byte-identical answers. Simulated time is Anchor + tick × Step.
//
// Each collection changes in epochs of 4 to 27 ticks (1 for two edge cases); at an epoch boundary
// about a third of its tokens change: new listings, cancels, sales (with
// the sold listing's orderId), new owners, repricing. Expiries are absolute
// times, so listings also expire against the wall clock between ticks.
// The indexer mirror shows native rows as they were one tick earlier.
//
// # Edge cases
//
// With at least 16 collections the market contains every edge case SPEC
// names, at fixed collection indexes (EdgeCases maps the names below to
// collection ids for a given simulator):
//
//	0  EdgeLegacySolanaIDs  Solana; mirrored native ids carry the legacy "brand:" prefix
//	1  EdgeDualListed       Ethereum; token #1 listed natively and externally at different prices
//	2  EdgeMirrorLag        Base; changes every tick, so the mirror's native rows lag the order book
//	3  EdgeNoContract       Ethereum; no contract address, no tokens
//	4  EdgeChainMissing     stored chain missing
//	5  EdgeChainUnknown     stored chain "tezos" (its rows are rejected as unknown_chain)
//	6  EdgeNoListings       Ink; no active listings
//	7  EdgeManyListings     Ethereum; ≥ 600 tokens, 85% listed: more than 300 listings
//	8  EdgeBadSalePrices    Ethereum; some sales (and last-sale prices) cannot be interpreted
//	9  EdgeLegacySales      Solana; sales from 2025 to before 2026-08-23, dated at write time
//	10 EdgeEscrowNoSeller   Solana; every 5th token sits in escrow with no listing naming a seller
//	11 EdgeSameAddressA     Ethereum; same contract address as 12
//	12 EdgeSameAddressB     Base; same contract address as 11
//	13 EdgePolygon          Polygon (no USD feed)
//	14 EdgeApeChain         ApeChain (no USD feed)
//	15 EdgeExpiring         Abstract; changes every tick, listings expire ¼–1 step after each tick
//
// Other collections spread over all eight chains; EVM contracts arrive in
// mixed case, some collections use token ids of 41–76 digits, Solana mints
// are base58 of mixed case, EVM prices are wei far above 2^53, and the
// sales history reaches SalesDepth years back.
//
// # Control API (fixed)
//
//	POST /_sim/faults        {"source": NAME, "mode": "ok"|"error"|"timeout"}
//	GET  /_sim/faults        {"faults": {NAME: MODE, ...}, "tick": N}
//	POST /_sim/faults/reset  every source back to ok
//	POST /_sim/tick          advance one step; answers {"tick": N}
//
// "error" answers HTTP 500; "timeout" answers nothing until the client gives
// up or the simulator is closed. Bad control input answers 400 with
// {"error": {"code": "bad_request", "message": ...}}.
package sim

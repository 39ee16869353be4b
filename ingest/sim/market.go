package sim

import (
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/normalize"
)

// market is the pure model: every value is a function of (seed, collection
// index, token index, tick). It holds only the options.
type market struct {
	seed        uint64
	n           int
	tokens      int
	ratio       float64
	depthYears  int
	anchor      time.Time
	step        time.Duration
	escrow      string
	externalMPs []string
}

var (
	oneSOL = big.NewInt(1_000_000_000)
	oneETH = new(big.Int).Exp(big.NewInt(10), big.NewInt(18), nil)
)

// coll is one collection's static attributes.
type coll struct {
	idx          int
	chain        readmodel.Chain // "" for the chain-missing / unrecognised edge cases
	chainWire    string          // what the collection index stores
	contract     string          // normalized: lowercase EVM, or Solana collection mint
	contractWire string          // as upstream stores it (mixed-case EVM)
	id           string
	name         string
	tokens       int
	bigIDs       bool
	floor        *big.Int
	period       int64
	phase        int64
	ratio        float64
	edge         string
}

func (m *market) timeOf(tick int64) time.Time { return m.anchor.Add(time.Duration(tick) * m.step) }

// coll computes collection c's attributes.
func (m *market) coll(c int) coll {
	cu := uint64(c)
	k := coll{idx: c, edge: edgeAt(c), ratio: m.ratio}
	hc := m.h(tagChain, cu, 0, 0)
	k.chain = readmodel.Chains[hc%uint64(len(readmodel.Chains))]
	switch k.edge {
	case EdgeLegacySolanaIDs, EdgeLegacySales, EdgeEscrowNoSeller:
		k.chain = readmodel.Solana
	case EdgeDualListed, EdgeNoContract, EdgeManyListings, EdgeBadSalePrices, EdgeSameAddressA:
		k.chain = readmodel.Ethereum
	case EdgeMirrorLag, EdgeSameAddressB:
		k.chain = readmodel.Base
	case EdgeNoListings:
		k.chain = readmodel.Ink
	case EdgePolygon:
		k.chain = readmodel.Polygon
	case EdgeApeChain:
		k.chain = readmodel.ApeChain
	case EdgeExpiring:
		k.chain = readmodel.Abstract
	case EdgeChainMissing, EdgeChainUnknown:
		k.chain = ""
	}
	k.chainWire = string(k.chain)
	if k.edge == EdgeChainUnknown {
		k.chainWire = "tezos"
	}
	addrKey := cu
	if k.edge == EdgeSameAddressB {
		addrKey = uint64(idxSameAddressA) // the same contract on two chains
	}
	if k.chain == readmodel.Solana {
		k.contract = m.solAddr(tagAddr, addrKey, 0)
		k.contractWire = k.contract
	} else {
		k.contract = m.evmHex(40, tagAddr, addrKey, 0)
		k.contractWire = k.contract
		if hc>>20%3 != 0 {
			k.contractWire = mixedCase(k.contract, m.h(tagCase, addrKey, 0, 0))
		}
	}
	switch k.edge {
	case EdgeNoContract:
		k.contract, k.contractWire = "", ""
		k.id = "ethereum_unminted-drop-" + strconv.Itoa(c)
	case EdgeChainMissing:
		k.id = "unknown_" + k.contract
	case EdgeChainUnknown:
		k.id = "tezos_" + k.contract
	default:
		k.id = readmodel.CollectionIDFor(k.chain, k.contract)
	}
	k.name = names[m.h(tagName, cu, 0, 0)%uint64(len(names))] + " " + nouns[m.h(tagName, cu, 1, 0)%uint64(len(nouns))]
	k.tokens = m.tokens
	if k.tokens <= 0 {
		k.tokens = 20 + int(m.h(tagTokens, cu, 0, 0)%381)
	}
	k.bigIDs = k.chain.IsEVM() && m.h(tagBigIDs, cu, 0, 0)%5 == 0
	// Floors: 0.05–50 SOL, 0.001–20 (w)ETH-like units on EVM.
	u := m.h(tagFloor, cu, 0, 0)
	if k.chain == readmodel.Solana {
		k.floor = scale(oneSOL, int64(50+u%50000), 1000, u>>40%1000)
	} else {
		k.floor = scale(oneETH, int64(1+u%20000), 1000, u>>20%1_000_000_007)
	}
	k.period = 4 + int64(m.h(tagPeriod, cu, 0, 0)%24)
	k.phase = int64(m.h(tagPhase, cu, 0, 0) % uint64(k.period))
	switch k.edge {
	case EdgeNoContract, EdgeChainMissing:
		k.tokens = 0
	case EdgeChainUnknown:
		k.tokens, k.ratio = 5, 1
	case EdgeNoListings:
		k.ratio = 0
	case EdgeManyListings:
		k.tokens, k.ratio = max(k.tokens, 600), 0.85
	case EdgeMirrorLag, EdgeExpiring:
		k.period, k.phase = 1, 0
	}
	if k.tokens > 0 && k.edge == EdgeExpiring {
		k.ratio = 0.6
	}
	return k
}

// epoch is the collection's state epoch at tick t: its tokens change only
// when it advances.
func (k *coll) epoch(t int64) int64 { return floorDiv(t+k.phase, k.period) }

// epochStart is the first tick of epoch e.
func (k *coll) epochStart(e int64) int64 { return e*k.period - k.phase }

func (m *market) touched(k *coll, i int, e int64) bool {
	return floorMod(e, 16) == 0 || m.h(tagTouch, uint64(k.idx), uint64(i), uint64(e))%100 < 35
}

// lastTouch is the latest epoch ≤ e at which token i changed (≤ 16 back).
func (m *market) lastTouch(k *coll, i int, e int64) int64 {
	for s := e; ; s-- {
		if m.touched(k, i, s) {
			return s
		}
	}
}

func (m *market) sold(k *coll, i int, s int64) bool {
	return m.h(tagSold, uint64(k.idx), uint64(i), uint64(s))%3 == 0
}

// tokenID is the EVM token id or Solana asset mint of token i.
func (m *market) tokenID(k *coll, i int) string {
	if k.chain == readmodel.Solana {
		return m.solAddr(tagMint, uint64(k.idx), uint64(i))
	}
	if k.bigIDs {
		n := 41 + int(m.h(tagTokenID, uint64(k.idx), uint64(i), 0)%36)
		return m.bigDecimal(n, tagTokenID, uint64(k.idx), uint64(i))
	}
	return strconv.Itoa(i + 1)
}

func (m *market) wallet(k *coll, x uint64) string {
	if k.chain == readmodel.Solana {
		return m.solAddr(tagOwner, x, 1)
	}
	return m.evmHex(40, tagOwner, x, 1)
}

// owner is token i's beneficial owner at epoch e: the buyer of the latest
// sale since the last 16-epoch boundary, else the boundary's holder.
func (m *market) owner(k *coll, i int, e int64) string {
	for s := e; ; s-- {
		if m.touched(k, i, s) && m.sold(k, i, s) {
			return m.wallet(k, m.h(tagBuyer, uint64(k.idx), uint64(i), uint64(s)))
		}
		if floorMod(s, 16) == 0 {
			return m.wallet(k, m.h(tagOwner, uint64(k.idx), uint64(i), uint64(s)))
		}
	}
}

// listing is one token's listing state.
type listing struct {
	listed   bool
	native   bool
	venue    string
	price    *big.Int
	ext      *big.Int // dual-listed edge: the external price next to a native one
	created  time.Time
	expires  time.Time // zero: none
	seller   string
	epoch    int64
	noTimes  bool // the row carries neither creation nor update time
	updateOn bool // the row carries only an update time
}

// state is token i's listing at epoch e.
func (m *market) state(k *coll, i int, e int64) listing {
	s := m.lastTouch(k, i, e)
	ci, iu, su := uint64(k.idx), uint64(i), uint64(s)
	l := listing{epoch: s}
	l.listed = unit(m.h(tagList, ci, iu, su)) < k.ratio
	hv := m.h(tagVenue, ci, iu, su)
	l.native = hv%10 < 6
	l.venue = m.externalMPs[(hv>>8)%uint64(len(m.externalMPs))]
	if k.chain == readmodel.Solana && l.venue == "opensea" {
		l.venue = "tensor"
	}
	switch {
	case k.edge == EdgeDualListed && i == 0, k.edge == EdgeMirrorLag && i == 0:
		l.listed, l.native = true, true
	case k.edge == EdgeEscrowNoSeller && i%5 == 0:
		l.listed = false
	}
	hp := m.h(tagPrice, ci, iu, su)
	l.price = scale(k.floor, int64(1000+hp%1500), 1000, hp>>32%1_000_003)
	if k.edge == EdgeDualListed && i == 0 {
		l.ext = scale(l.price, 11, 10, 7)
	}
	hcr := m.h(tagCreated, ci, iu, su)
	l.created = m.timeOf(k.epochStart(s)).Add(-time.Duration(hcr%uint64(m.step/time.Second+1)) * time.Second)
	l.noTimes = hcr>>32%20 == 1
	l.updateOn = hcr>>32%10 == 3
	he := m.h(tagExpiry, ci, iu, su)
	switch {
	case k.edge == EdgeExpiring:
		// Expire between this tick and the next: a quarter, half, three
		// quarters or a whole step after the current epoch starts.
		l.expires = m.timeOf(k.epochStart(e)).Add(time.Duration(1+i%4) * m.step / 4)
	case he%4 == 0:
		l.expires = l.created.Add(time.Duration(1+he>>8%3) * time.Duration(k.period) * m.step)
	case he%4 == 1:
		l.expires = l.created.Add(30 * 24 * time.Hour)
	}
	if l.listed {
		l.seller = m.owner(k, i, s)
	}
	return l
}

// nativeOrderID is the order-book id of a native listing.
func (m *market) nativeOrderID(k *coll, tokenID string, l *listing) string {
	ms := strconv.FormatInt(l.created.UnixMilli(), 10)
	if k.chain == readmodel.Solana {
		return tokenID + "_" + ms
	}
	return string(k.chain) + "_" + k.contract + "_" + tokenID + "_" + ms
}

// externalOrderID is the source marketplace's id of an external listing.
func (m *market) externalOrderID(k *coll, i int, l *listing) string {
	x := m.h(tagOrder, uint64(k.idx), uint64(i), uint64(l.epoch))
	return l.venue + "-" + strconv.FormatUint(x, 36)
}

// orderHash is the on-chain order hash the indexer overlay reports.
func (m *market) orderHash(k *coll, i int, l *listing) string {
	return m.evmHex(64, tagOrder, uint64(k.idx)<<20^uint64(i), uint64(l.epoch))
}

func (m *market) escrowTx(k *coll, i int, l *listing) string {
	return base58(m.bytesOf(64, tagTx, uint64(k.idx)<<20^uint64(i), uint64(l.epoch)))
}

func fmtTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// nativeRow is the order-book row of a native listing (legacy: the
// mirror's brand-prefixed copy).
func (m *market) nativeRow(k *coll, i int, tokenID string, l *listing, mirror bool) normalize.RawListing {
	r := normalize.RawListing{
		Chain: k.chainWire, CollectionID: k.id, Price: normalize.Amount(l.price.String()),
		Seller: l.seller, CreatedAt: fmtTime(l.created), OrderID: m.nativeOrderID(k, tokenID, l),
	}
	if mirror {
		r.Marketplace = readmodel.MarketplaceNative
	}
	if !l.expires.IsZero() {
		r.ExpiresAt = fmtTime(l.expires)
	}
	if k.chain == readmodel.Solana {
		r.Mint = tokenID
		r.Escrow = m.escrow
		if !mirror {
			r.Tx = m.escrowTx(k, i, l)
			if l.created.UnixMilli()%3 != 0 {
				r.CustodyAt = fmtTime(l.created.Add(time.Duration(2+l.created.Unix()%18) * time.Second))
			}
		}
		if mirror && k.edge == EdgeLegacySolanaIDs {
			r.OrderID = normalize.LegacyOrderIDPrefix + r.OrderID
		}
	} else {
		r.Contract, r.TokenID = k.contractWire, tokenID
	}
	return r
}

// externalRow is the mirror's row of an external listing.
func (m *market) externalRow(k *coll, i int, tokenID string, l *listing, price *big.Int) normalize.RawListing {
	r := normalize.RawListing{
		Chain: k.chainWire, CollectionID: k.id, Price: normalize.Amount(price.String()),
		Seller: l.seller, Marketplace: l.venue, OrderID: m.externalOrderID(k, i, l),
		BuyerTotal: normalize.Amount(scale(price, 1025, 1000, 0).String()),
	}
	switch {
	case l.noTimes:
	case l.updateOn:
		r.UpdatedAt = fmtTime(l.created.Add(time.Minute))
	default:
		r.CreatedAt = fmtTime(l.created)
	}
	if !l.expires.IsZero() {
		r.ExpiresAt = fmtTime(l.expires)
	}
	if k.chain == readmodel.Solana {
		r.Mint = tokenID
	} else {
		r.Contract, r.TokenID = k.contractWire, tokenID
	}
	return r
}

// orderBookRows are collection k's native listings at tick t.
func (m *market) orderBookRows(k *coll, t int64) []normalize.RawListing {
	var rows []normalize.RawListing
	e := k.epoch(t)
	for i := 0; i < k.tokens; i++ {
		l := m.state(k, i, e)
		if l.listed && l.native {
			rows = append(rows, m.nativeRow(k, i, m.tokenID(k, i), &l, false))
		}
	}
	return rows
}

// mirrorRows are the mirror's rows at tick t: external listings now plus
// native listings as they were one tick earlier.
func (m *market) mirrorRows(k *coll, t int64) []normalize.RawListing {
	var rows []normalize.RawListing
	e, lag := k.epoch(t), k.epoch(t-1)
	for i := 0; i < k.tokens; i++ {
		l := m.state(k, i, e)
		var tid string
		if l.listed && (!l.native || l.ext != nil) {
			tid = m.tokenID(k, i)
			p := l.price
			if l.ext != nil {
				p = l.ext
			}
			rows = append(rows, m.externalRow(k, i, tid, &l, p))
		}
		old := l
		if lag != e {
			old = m.state(k, i, lag)
		}
		if old.listed && old.native {
			if tid == "" {
				tid = m.tokenID(k, i)
			}
			rows = append(rows, m.nativeRow(k, i, tid, &old, true))
		}
	}
	return rows
}

// sale is the sale of token i at epoch s, if one happened.
func (m *market) sale(k *coll, i int, s int64) (normalize.RawSale, bool) {
	if !m.touched(k, i, s) || !m.sold(k, i, s) {
		return normalize.RawSale{}, false
	}
	ci, iu, su := uint64(k.idx), uint64(i), uint64(s)
	tid := m.tokenID(k, i)
	prev := m.state(k, i, s-1)
	r := normalize.RawSale{Chain: k.chainWire, CollectionID: k.id, Buyer: m.wallet(k, m.h(tagBuyer, ci, iu, su)), Seller: m.owner(k, i, s-1)}
	at := m.timeOf(k.epochStart(s)).Add(-time.Duration(m.h(tagSalePrice, ci, iu, su)%uint64(m.step/time.Second+1)) * time.Second)
	r.BlockTime = fmtTime(at)
	r.RecordedAt = fmtTime(at.Add(time.Duration(1+su%4) * time.Second))
	r.Price = m.salePrice(k, i, s, &prev)
	if prev.listed {
		if prev.native {
			r.Marketplace = readmodel.MarketplaceNative
			r.OrderID = m.nativeOrderID(k, tid, &prev)
		} else {
			r.Marketplace = prev.venue
			r.OrderID = m.externalOrderID(k, i, &prev)
		}
	} else {
		hp := m.h(tagSalePrice, ci, iu, su+1)
		r.Marketplace = m.externalMPs[hp%uint64(len(m.externalMPs))]
	}
	if k.chain == readmodel.Solana {
		r.Mint = tid
		r.Tx = base58(m.bytesOf(64, tagTx, ci<<20^iu, su^0xfeed))
	} else {
		r.Contract, r.TokenID = k.contractWire, tid
		r.Tx = m.evmHex(64, tagTx, ci<<20^iu, su^0xfeed)
	}
	return r, true
}

// salePrice is the price of token i's sale at epoch s, given prev, the
// token's listing state at s-1: the listed price, else a price near the
// floor. A token's lastSale needs only this, not the whole sale.
func (m *market) salePrice(k *coll, i int, s int64, prev *listing) normalize.Amount {
	if k.edge == EdgeBadSalePrices && i%4 == 0 {
		return normalize.Amount(badPrices[floorMod(s, int64(len(badPrices)))])
	}
	if prev.listed {
		return normalize.Amount(prev.price.String())
	}
	hp := m.h(tagSalePrice, uint64(k.idx), uint64(i), uint64(s)+1)
	return normalize.Amount(scale(k.floor, int64(900+hp%400), 1000, hp>>40).String())
}

var badPrices = []string{"12.5", "-100", "", "0x1bc16d674ec80000", "1e18", "12 ETH"}

// historySales is how many pre-anchor sales collection k has.
func (m *market) historySales(k *coll) int {
	if k.tokens == 0 || m.depthYears <= 0 {
		return 0
	}
	n := m.depthYears * (4 + int(m.h(tagHistory, uint64(k.idx), 0, 0)%17))
	if k.edge == EdgeBadSalePrices || k.edge == EdgeLegacySales {
		n = max(n, 20)
	}
	return n
}

var yearDur = 365 * 24 * time.Hour

// historySale is collection k's j-th sale before the anchor, oldest first.
func (m *market) historySale(k *coll, j, total int) normalize.RawSale {
	ci, ju := uint64(k.idx), uint64(j)
	hv := m.h(tagHistory, ci, ju, 1)
	span := time.Duration(m.depthYears) * yearDur
	start := m.anchor.Add(-span)
	at := start.Add(time.Duration(float64(span) * (float64(j) + unit(hv)) / float64(total+1)))
	if k.edge == EdgeLegacySales {
		// Fixed absolute dates, all before the 2026-08-23 cutoff.
		at = time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(j) * 9 * 24 * time.Hour).Add(time.Duration(hv%86400) * time.Second)
	}
	at = at.Truncate(time.Second)
	i := int(hv % uint64(k.tokens))
	tid := m.tokenID(k, i)
	r := normalize.RawSale{Chain: k.chainWire, CollectionID: k.id,
		Seller: m.wallet(k, m.h(tagOwner, ci, ju, 7)), Buyer: m.wallet(k, m.h(tagBuyer, ci, ju, 7))}
	hp := m.h(tagSalePrice, ci, ju, 9)
	r.Price = normalize.Amount(scale(k.floor, int64(300+hp%1400), 1000, hp>>40).String())
	if k.edge == EdgeBadSalePrices && j%5 == 0 {
		r.Price = normalize.Amount(badPrices[j/5%len(badPrices)])
	}
	if hp%3 == 0 {
		r.Marketplace = readmodel.MarketplaceNative
		l := listing{created: at.Add(-time.Duration(1+hp%72) * time.Hour)}
		r.OrderID = m.nativeOrderID(k, tid, &l)
	} else if hp%3 == 1 {
		r.Marketplace = m.externalMPs[hp>>8%uint64(len(m.externalMPs))]
		r.OrderID = r.Marketplace + "-" + strconv.FormatUint(hp>>16, 36)
	} else {
		r.Marketplace = readmodel.MarketplaceNative // no listing recorded
	}
	if at.Before(normalize.SaleTimestampCutoff) {
		// Legacy rows: dated at write time, no block time.
		drift := time.Duration(1+hv>>20%20) * time.Second
		if hv>>40%10 == 0 {
			drift = time.Duration(1+hv>>44%180) * time.Minute // deferred write
		}
		r.RecordedAt = fmtTime(at.Add(drift))
	} else {
		r.BlockTime = fmtTime(at)
		r.RecordedAt = fmtTime(at.Add(2 * time.Second))
	}
	if k.chain == readmodel.Solana {
		r.Mint = tid
		r.Tx = base58(m.bytesOf(64, tagTx, ci<<20^ju, 0xbeef))
	} else {
		r.Contract, r.TokenID = k.contractWire, tid
		r.Tx = m.evmHex(64, tagTx, ci<<20^ju, 0xbeef)
	}
	return r
}

// token is the indexer's view of token i at tick t.
func (m *market) token(k *coll, i int, t int64) normalize.RawToken {
	ci := uint64(k.idx)
	e, lag := k.epoch(t), k.epoch(t-1)
	tid := m.tokenID(k, i)
	tok := normalize.RawToken{Chain: k.chainWire, Contract: k.contractWire, TokenID: tid, CollectionID: k.id,
		Name: k.name + " #" + strconv.Itoa(i+1), Image: "https://img.sim.marketd.test/" + strconv.Itoa(k.idx) + "/" + strconv.Itoa(i) + ".png"}
	if m.h(tagMeta, ci, 0, 0)%4 != 0 && k.tokens > 0 {
		r := int64((i*7919+int(ci))%k.tokens) + 1
		tok.RarityRank = &r
	}
	l := m.state(k, i, e)
	tok.Owner = m.owner(k, i, e)
	if k.chain == readmodel.Solana && l.listed && l.native {
		tok.Owner, tok.InCustody, tok.CustodyLabel = m.escrow, true, "in escrow: listed"
	}
	if k.edge == EdgeEscrowNoSeller && i%5 == 0 {
		tok.Owner, tok.InCustody, tok.CustodyLabel = m.escrow, true, "in escrow"
	}
	// Overlay: the external listing if any, else the mirror's lagged copy
	// of the native one.
	if l.listed && (!l.native || l.ext != nil) {
		p := l.price
		if l.ext != nil {
			p = l.ext
		}
		ov := m.externalRow(k, i, tid, &l, p)
		if k.chain != readmodel.Solana {
			ov.OrderID = m.orderHash(k, i, &l)
		}
		tok.Overlay = &ov
	} else if old := m.state(k, i, lag); old.listed && old.native {
		ov := m.nativeRow(k, i, tid, &old, true)
		if k.chain != readmodel.Solana {
			ov.OrderID = m.orderHash(k, i, &old)
		}
		tok.Overlay = &ov
	}
	for s := e; s > e-16; s-- {
		if m.touched(k, i, s) && m.sold(k, i, s) { // as in sale
			prev := m.state(k, i, s-1)
			tok.LastSale = m.salePrice(k, i, s, &prev)
			break
		}
	}
	return tok
}

// changedSince reports whether collection k's token data differs between
// ticks since and t (token data depends on the epochs at t and t-1).
func (k *coll) changedSince(since, t int64) bool {
	return k.epoch(t) != k.epoch(since) || k.epoch(t-1) != k.epoch(since-1)
}

// document is collection k's stored document.
func (m *market) document(k *coll) normalize.RawCollection {
	ci := uint64(k.idx)
	hv := m.h(tagMeta, ci, 1, 0)
	d := normalize.RawCollection{ID: k.id, Chain: k.chainWire, Contract: k.contractWire, Name: k.name,
		Image:       "https://img.sim.marketd.test/c/" + strconv.Itoa(k.idx) + ".png",
		Description: "A simulated collection of " + strconv.Itoa(k.tokens) + " tokens on " + k.chainWire + ".",
		Floor:       normalize.Amount(k.floor.String()), NativeLaunched: hv%7 == 0,
		CreatedAt: fmtTime(m.anchor.Add(-time.Duration(hv>>8%uint64(3*365*24)) * time.Hour).Truncate(time.Second)),
	}
	slug := strings.ToLower(strings.ReplaceAll(k.name, " ", "-")) + "-" + strconv.Itoa(k.idx)
	switch hv >> 16 % 12 {
	case 0:
		d.ExternalSlug = "ext-" + slug
	case 1:
		d.Symbol = strings.ToUpper(strings.ReplaceAll(k.name, " ", ""))[:4] + strconv.Itoa(k.idx)
	case 2:
		// no slug at all: falls back to the contract address
	default:
		d.Slug = slug
	}
	if hv>>24%3 != 0 {
		d.Banner = "https://img.sim.marketd.test/b/" + strconv.Itoa(k.idx) + ".png"
	}
	switch {
	case k.chain == readmodel.Solana:
		d.TokenStandard = []string{"ProgrammableNonFungible", "Core", "NonFungible"}[hv>>28%3]
	case k.chain != "":
		d.TokenStandard = []string{"ERC721", "ERC1155"}[hv>>28%2]
	}
	if hv>>32%5 != 0 {
		bps := int64(hv >> 36 % 1001)
		d.RoyaltyBps = &bps
	}
	vol := float64(hv>>40%100000) / 10
	d.VolumeAllTime = &vol
	if hv>>48%4 != 0 {
		sup := int64(k.tokens)
		d.Supply = &sup
	}
	own := int64(k.tokens) * int64(40+hv>>52%30) / 100
	d.Owners = &own
	return d
}

// floorAt is the cheapest listing (native or external) at tick t, or nil.
func (m *market) floorAt(k *coll, t int64) *big.Int {
	var best *big.Int
	e := k.epoch(t)
	for i := 0; i < k.tokens; i++ {
		l := m.state(k, i, e)
		if !l.listed || (!l.expires.IsZero() && !l.expires.After(m.timeOf(t))) {
			continue
		}
		if best == nil || l.price.Cmp(best) < 0 {
			best = l.price
		}
	}
	return best
}

func (m *market) analytics(k *coll, t int64) normalize.RawAnalytics {
	ci := uint64(k.idx)
	a := normalize.RawAnalytics{CollectionID: k.id}
	if f := m.floorAt(k, t); f != nil {
		a.Floor = normalize.Amount(f.String())
	}
	e := k.epoch(t)
	hv := m.h(tagStats, ci, uint64(e), 2)
	v24 := float64(hv%5000) / 100
	v7 := v24*7 + float64(hv>>16%1000)/10
	all := v7*50 + float64(hv>>32%100000)/10
	s24 := int64(hv >> 20 % 40)
	s7 := s24*7 + int64(hv>>40%30)
	sAll := s7*50 + int64(m.historySales(k))
	a.Volume24h, a.Volume7d, a.VolumeAllTime = &v24, &v7, &all
	a.Sales24h, a.Sales7d, a.SalesAllTime = &s24, &s7, &sAll
	return a
}

func (m *market) stats(k *coll, t int64) normalize.RawStats {
	e := k.epoch(t)
	hv := m.h(tagStats, uint64(k.idx), uint64(e), 1)
	n := int64(k.tokens)
	owners := n*int64(40+hv%30)/100 + 1
	listed := int64(float64(n) * k.ratio * (0.9 + 0.2*unit(hv>>8)))
	return normalize.RawStats{CollectionID: k.id, Owners: &owners, ListedCount: &listed, IndexedCount: &n}
}

// rates is the price feed at tick t: USD per whole unit.
func (m *market) rates(t int64) map[string]float64 {
	out := map[string]float64{}
	for j, c := range []struct {
		cur  string
		base float64
	}{{"SOL", 150}, {"ETH", 3000}, {"MATIC", 0.5}, {"APE", 1.2}} {
		u := unit(m.h(tagRate, uint64(j), uint64(t), 0))
		out[c.cur] = float64(int64(c.base*(0.97+0.06*u)*100)) / 100
	}
	return out
}

var names = []string{"Quiet", "Neon", "Lunar", "Feral", "Gilded", "Pixel", "Astral", "Velvet", "Rusty", "Hollow", "Cosmic", "Tiny"}
var nouns = []string{"Apes", "Otters", "Wizards", "Frogs", "Cats", "Punks", "Golems", "Foxes", "Koi", "Robots", "Owls", "Moths"}

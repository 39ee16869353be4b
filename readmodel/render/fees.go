package render

import (
	"math/big"
	"math/bits"
	"strconv"
	"time"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/wire"
)

// Fees, explicitly, so a buyer sees the total before paying: beyond SPEC,
// every listing row and the floor carry what a buyer pays on top of the
// ask, by SPEC §1's fee table:
//
//	native row on Solana   platform 3 %  + royalty
//	native row on EVM      platform 2 %  + royalty
//	external row           aggregator 2 % (bought through the service's UI) + royalty
//
// Each charge is ceil(ask × bps / 10000) base units (a buyer never pays
// less than the fee, as ApplyBps), and buyerPrice is the ask plus the
// charges listed, so the list adds up exactly. A collection whose
// royaltyBps is null (unknown) still lists its royalty, with bps and amount
// null, and its buyerPrice is null: never a guess.
//
// buyerPrice is not SPEC's buyerFloor: buyerFloor charges an external row
// its marketplace's own buyer total (bought there), buyerPrice the
// aggregator fee (bought through the service), and rounds the sum of the
// rates once where buyerPrice rounds each charge.

// Fee kinds.
const (
	FeePlatform   = wire.FeePlatform
	FeeRoyalty    = wire.FeeRoyalty
	FeeAggregator = wire.FeeAggregator
)

// AggregatorFeeBps is the aggregator fee on external-marketplace purchases
// routed through the service's own UI (SPEC §1).
const AggregatorFeeBps = 200

// Fee is one charge on top of an ask. Known is false when its rate is
// unknown (a royalty of a collection with no royaltyBps): then bps and
// amount are null.
type Fee struct {
	Kind   string
	Bps    int64
	Amount readmodel.Price
	Known  bool
}

// Fees is what a buyer pays for one listing: the charges, and the total
// (BuyerKnown false when a charge is unknown).
type Fees struct {
	List       [2]Fee
	Buyer      readmodel.Price
	BuyerKnown bool
}

// FeesOf returns the fees of buying row r on chain c, in the order the
// fee table lists them (platform or aggregator, then royalty); ok is
// false when the ask cannot be interpreted. royaltyBps nil is unknown.
// usd is the rate the prices carry (nil: null, the prepared form).
func FeesOf(c readmodel.Chain, r *readmodel.ListingRow, royaltyBps *int64, usd *float64) (Fees, bool) {
	var f Fees
	kind, bps := FeeAggregator, int64(AggregatorFeeBps)
	if r.Native() {
		kind, bps = FeePlatform, c.PlatformFeeBps()
	}
	royalty := int64(-1)
	if royaltyBps != nil {
		royalty = max(*royaltyBps, 0)
	}
	amounts, total, ok := feeAmounts(r.PriceRaw, bps, royalty)
	if !ok {
		return f, false
	}
	f.List[0] = Fee{Kind: kind, Bps: bps, Amount: newPrice(c, amounts[0], usd), Known: true}
	f.List[1] = Fee{Kind: FeeRoyalty}
	if royalty < 0 {
		return f, true
	}
	f.List[1] = Fee{Kind: FeeRoyalty, Bps: royalty, Amount: newPrice(c, amounts[1], usd), Known: true}
	f.Buyer, f.BuyerKnown = newPrice(c, total, usd), true
	return f, true
}

// feeAmounts returns ceil(ask × bps / 10000) for the two rates (the second
// skipped when negative) and the ask plus both, in canonical decimal text.
// Asks that fit 64 bits (up to about 18 ETH in wei) take 128-bit integer
// arithmetic; larger ones big.Int.
func feeAmounts(raw string, bps, royalty int64) (amounts [2]string, total string, ok bool) {
	if ask, err := strconv.ParseUint(raw, 10, 64); err == nil && bps >= 0 && bps < 1<<20 && royalty < 1<<20 {
		fee := func(b int64) (uint64, bool) {
			if b <= 0 {
				return 0, true
			}
			hi, lo := bits.Mul64(ask, uint64(b))
			if hi >= 10000 {
				return 0, false
			}
			q, rem := bits.Div64(hi, lo, 10000)
			if rem > 0 {
				q++
			}
			return q, true
		}
		a, ok1 := fee(bps)
		var b uint64
		ok2 := true
		if royalty > 0 {
			b, ok2 = fee(royalty)
		}
		sum, c1 := bits.Add64(ask, a, 0)
		sum, c2 := bits.Add64(sum, b, 0)
		if ok1 && ok2 && c1 == 0 && c2 == 0 {
			amounts[0] = strconv.FormatUint(a, 10)
			amounts[1] = strconv.FormatUint(b, 10)
			return amounts, strconv.FormatUint(sum, 10), true
		}
	}
	ask, err := readmodel.ParseRaw(raw)
	if err != nil {
		return amounts, "", false
	}
	t := new(big.Int).Set(ask)
	a := feeAmount(ask, bps)
	t.Add(t, a)
	amounts[0] = a.String()
	if royalty >= 0 {
		b := feeAmount(ask, royalty)
		t.Add(t, b)
		amounts[1] = b.String()
	}
	return amounts, t.String(), true
}

// feeAmount is ceil(ask × bps / 10000); 0 for bps ≤ 0.
func feeAmount(ask *big.Int, bps int64) *big.Int {
	if bps <= 0 {
		return new(big.Int)
	}
	return new(big.Int).Sub(ApplyBps(ask, bps), ask)
}

// wire returns f as the wire's fees list and buyerPrice (nil when
// unknown). Their values point into f.
func (f *Fees) wire() (list [2]wire.Fee, buyer *readmodel.Price) {
	for i := range f.List {
		fe := &f.List[i]
		list[i] = wire.Fee{Kind: fe.Kind}
		if fe.Known {
			list[i].Bps, list[i].Amount = &fe.Bps, &fe.Amount
		}
	}
	if f.BuyerKnown {
		buyer = &f.Buyer
	}
	return list, buyer
}

// ListingRowJSON renders listing row r as a row of the listings feed: its
// MarketItem followed by its fees and buyerPrice. ok is false when the
// row's price cannot be interpreted.
func ListingRowJSON(r *readmodel.ListingRow, royaltyBps *int64, usd *float64, observedAt time.Time) ([]byte, bool) {
	it, ok := ListingItem(r, usd, observedAt)
	if !ok {
		return nil, false
	}
	f, ok := FeesOf(r.Chain, r, royaltyBps, usd)
	if !ok {
		return nil, false
	}
	return appendListingParts(make([]byte, 0, 1024), &it, &f)
}

// AppendListingRow appends listing row r to dst as ListingRowJSON renders
// it with a nil rate, its usd values as q fills the slots TemplateUSD puts
// there: what AppendUSD(dst, TemplateUSD(ListingRowJSON(r, royaltyBps,
// nil, time.Time{})), q) appends. The store renders listing snapshots
// from their rows with it, filling the usd directly as AppendSaleItem
// does; the usd values differ from ListingRowJSON's only in being
// finite numbers or null, so the two render the same rows. ok is false,
// and dst returned as it was, when the row's price cannot be interpreted.
func AppendListingRow(dst []byte, r *readmodel.ListingRow, royaltyBps *int64, q *USDQuote) ([]byte, bool) {
	it, ok := ListingItem(r, nil, time.Time{})
	if !ok {
		return dst, false
	}
	f, ok := FeesOf(r.Chain, r, royaltyBps, nil)
	if !ok {
		return dst, false
	}
	it.Price.USD = q.slotValue(&it.Price)
	for i := range f.List {
		if f.List[i].Known {
			f.List[i].Amount.USD = q.slotValue(&f.List[i].Amount)
		}
	}
	if f.BuyerKnown {
		f.Buyer.USD = q.slotValue(&f.Buyer)
	}
	if b, ok := appendListingParts(dst, &it, &f); ok {
		return b, true
	}
	return dst, false
}

// appendListingParts appends item it followed by its fees f as one
// object; when ok is false what it appended is garbage.
func appendListingParts(dst []byte, it *readmodel.MarketItem, f *Fees) ([]byte, bool) {
	start := len(dst)
	b, ok := appendItem(dst, it)
	if !ok || len(b)-start < 2 {
		return nil, false
	}
	b = append(b[:len(b)-1], ',')
	list, buyer := f.wire()
	if b, ok = appendFeeList(b, list[:], buyer); !ok {
		return nil, false
	}
	return append(b, '}'), true
}

package render

import (
	"math/big"
	"strconv"
	"time"

	"github.com/marketd/marketd/readmodel"
)

// Fees, explicitly (issue 30). Every listing row and the floor carry what
// a buyer pays on top of the ask, by SPEC §1's fee table:
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
	FeePlatform   = "platform"
	FeeRoyalty    = "royalty"
	FeeAggregator = "aggregator"
)

// AggregatorFeeBps is the aggregator fee on external-marketplace purchases
// routed through the service's own UI (SPEC §1).
const AggregatorFeeBps = 200

// Fee is one charge on top of an ask. Bps and Amount are nil when unknown
// (a royalty of a collection with no royaltyBps).
type Fee struct {
	Kind   string
	Bps    *int64
	Amount *readmodel.Price
}

// Fees is what a buyer pays for one listing: the charges, and the total
// (nil when a charge is unknown).
type Fees struct {
	List  []Fee
	Buyer *readmodel.Price
}

// FeesOf returns the fees of buying row r on chain c, in the order the
// fee table lists them (platform or aggregator, then royalty); ok is
// false when the ask cannot be interpreted. royaltyBps nil is unknown.
// usd is the rate the prices carry (nil: null, the prepared form).
func FeesOf(c readmodel.Chain, r *readmodel.ListingRow, royaltyBps *int64, usd *float64) (Fees, bool) {
	ask, err := readmodel.ParseRaw(r.PriceRaw)
	if err != nil {
		return Fees{}, false
	}
	kind, bps := FeeAggregator, int64(AggregatorFeeBps)
	if r.Native() {
		kind, bps = FeePlatform, c.PlatformFeeBps()
	}
	total := new(big.Int).Set(ask)
	charge := func(kind string, bps int64) Fee {
		amt := feeAmount(ask, bps)
		total.Add(total, amt)
		p := NewPrice(c, amt, usd)
		b := bps
		return Fee{Kind: kind, Bps: &b, Amount: &p}
	}
	f := Fees{List: make([]Fee, 0, 2)}
	f.List = append(f.List, charge(kind, bps))
	if royaltyBps == nil {
		f.List = append(f.List, Fee{Kind: FeeRoyalty})
		return f, true
	}
	f.List = append(f.List, charge(FeeRoyalty, max(*royaltyBps, 0)))
	p := NewPrice(c, total, usd)
	f.Buyer = &p
	return f, true
}

// feeAmount is ceil(ask × bps / 10000); 0 for bps ≤ 0.
func feeAmount(ask *big.Int, bps int64) *big.Int {
	if bps <= 0 {
		return new(big.Int)
	}
	return new(big.Int).Sub(ApplyBps(ask, bps), ask)
}

// appendFees appends `"fees":[...],"buyerPrice":...` for f (no leading
// comma); ok is false when a price cannot be written.
func appendFees(b []byte, f *Fees) ([]byte, bool) {
	b = append(b, `"fees":[`...)
	ok := true
	for i := range f.List {
		fe := &f.List[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"kind":`...)
		b = appendJSONString(b, fe.Kind)
		b = append(b, `,"bps":`...)
		if fe.Bps == nil {
			b = append(b, "null"...)
		} else {
			b = strconv.AppendInt(b, *fe.Bps, 10)
		}
		b = append(b, `,"amount":`...)
		if b, ok = appendPricePtr(b, fe.Amount); !ok {
			return b, false
		}
		b = append(b, '}')
	}
	b = append(b, `],"buyerPrice":`...)
	return appendPricePtr(b, f.Buyer)
}

func appendPricePtr(b []byte, p *readmodel.Price) ([]byte, bool) {
	if p == nil {
		return append(b, "null"...), true
	}
	return appendPrice(b, p)
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
	b := MarshalItem(it)
	if len(b) < 2 || b[len(b)-1] != '}' {
		return nil, false
	}
	b = append(b[:len(b)-1], ',')
	if b, ok = appendFees(b, &f); !ok {
		return nil, false
	}
	return append(b, '}'), true
}

package render

import (
	"encoding/json"
	"math/big"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/wire"
)

// sweepPrice is the part of a Price a sweep adds up.
type sweepPrice struct {
	Raw string   `json:"raw"`
	USD *float64 `json:"usd"`
}

// sweepItem is the part of a listing row a sweep adds up.
type sweepItem struct {
	Price sweepPrice `json:"price"`
	Fees  []struct {
		Kind   string      `json:"kind"`
		Amount *sweepPrice `json:"amount"`
	} `json:"fees"`
	BuyerPrice *sweepPrice `json:"buyerPrice"`
}

// sum is a running total of prices: exact base units, the usd values
// added (unknown once one is null) and whether every part was known.
type sum struct {
	raw      big.Int
	usd      float64
	usdKnown bool
	known    bool
	parts    int
}

func newSum() *sum { return &sum{usdKnown: true, known: true} }

func (s *sum) add(p *sweepPrice) error {
	if p == nil {
		s.known = false
		return nil
	}
	n, err := readmodel.ParseRaw(p.Raw)
	if err != nil {
		return readmodel.Errorf(readmodel.Internal, "sweep: a listing row's amount: %v", err)
	}
	s.raw.Add(&s.raw, n)
	s.parts++
	if p.USD == nil {
		s.usdKnown = false
	} else {
		s.usd += *p.USD
	}
	return nil
}

// price is the total as a Price on chain c; nil when a part was unknown.
func (s *sum) price(c readmodel.Chain) *readmodel.Price {
	if !s.known {
		return nil
	}
	p := readmodel.Price{Raw: s.raw.String(), Currency: c.Currency()}
	p.Decimal = decimalOf(p.Raw, c.Decimals())
	if s.usdKnown && s.parts > 0 {
		u := roundCents(s.usd)
		p.USD = &u
	}
	return &p
}

// SweepTotals adds up items, rows of the listings feed as
// ListingsView.Items holds them (AppendListingRow), of a collection on
// chain c: their asks, their fees by kind and their buyerPrices. A fee
// total is nil when an item lists that kind with an unknown amount, and
// the buyer's total when any item's buyerPrice is null: never a guess.
// It fails with an Internal-coded readmodel.Error when an item is not
// such a row. Safe for concurrent use.
func SweepTotals(c readmodel.Chain, items [][]byte) (wire.SweepTotals, error) {
	asks, buyer := newSum(), newSum()
	fees := map[string]*sum{FeePlatform: newSum(), FeeRoyalty: newSum(), FeeAggregator: newSum()}
	for _, b := range items {
		var it sweepItem
		if err := json.Unmarshal(b, &it); err != nil {
			return wire.SweepTotals{}, readmodel.Errorf(readmodel.Internal, "sweep: a listing row does not decode: %v", err)
		}
		if err := asks.add(&it.Price); err != nil {
			return wire.SweepTotals{}, err
		}
		for _, f := range it.Fees {
			s := fees[f.Kind]
			if s == nil {
				return wire.SweepTotals{}, readmodel.Errorf(readmodel.Internal, "sweep: unknown fee kind %q", f.Kind)
			}
			if err := s.add(f.Amount); err != nil {
				return wire.SweepTotals{}, err
			}
		}
		if err := buyer.add(it.BuyerPrice); err != nil {
			return wire.SweepTotals{}, err
		}
	}
	t := wire.SweepTotals{
		Fees: wire.SweepFees{
			Platform:   fees[FeePlatform].price(c),
			Royalty:    fees[FeeRoyalty].price(c),
			Aggregator: fees[FeeAggregator].price(c),
		},
		BuyerPrice: buyer.price(c),
	}
	t.Asks = *asks.price(c)
	return t, nil
}

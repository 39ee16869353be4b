package source

import (
	"context"
	"strconv"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/normalize"
)

// PriceFeed polls price-feed: the USD rates, one message.
type PriceFeed struct{ c *Client }

// NewPriceFeed returns the price-feed poller over c.
func NewPriceFeed(c *Client) PriceFeed { return PriceFeed{c: c} }

// Spec implements the ingest Poller.
func (p PriceFeed) Spec() Spec {
	return Spec{Name: string(readmodel.SourcePriceFeed), Source: readmodel.SourcePriceFeed,
		First: true, Collections: Global, Status: SourceWide}
}

// Poll yields the rates as one KindRates unit; rates that are not numbers
// or that normalization drops are rejected together as bad prices.
func (p PriceFeed) Poll(ctx context.Context, _ Request, sink Sink) (string, error) {
	rates, bad, err := p.c.Rates(ctx)
	if err != nil {
		return "", err
	}
	norm, rejected := normalize.Rates(rates)
	if n := len(bad) + len(rejected); n > 0 {
		sink.Reject(&normalize.RejectError{Reason: normalize.RejectBadPrice, Field: "rates"}, n)
	}
	return "", sink.Emit(Unit{Kind: readmodel.KindRates,
		Build: func(string) Built { return one(&readmodel.Message{Rates: norm}, len(norm)) }})
}

// Rates reads price-feed GET /rates. Rates that are not JSON numbers are
// returned in bad and left out of rates.
func (c *Client) Rates(ctx context.Context) (rates map[string]float64, bad []string, err error) {
	var a RatesAnswer
	if err := c.getJSON(ctx, "/rates", nil, &a); err != nil {
		return nil, nil, err
	}
	rates = make(map[string]float64, len(a.Rates))
	for k, v := range a.Rates {
		f, perr := strconv.ParseFloat(string(v), 64)
		if perr != nil || len(k) > 16 {
			if len(k) > 16 {
				k = k[:16]
			}
			bad = append(bad, k)
			continue
		}
		rates[k] = f
	}
	return rates, bad, nil
}

package source

import (
	"context"

	"github.com/marketd/marketd/readmodel"
)

// OrderBook polls order-book: the native order book's listings, the
// cheapest readmodel.OrderBookMax rows of each collection.
type OrderBook struct{ c *Client }

// NewOrderBook returns the order-book poller over c.
func NewOrderBook(c *Client) OrderBook { return OrderBook{c: c} }

// Spec implements the ingest Poller.
func (p OrderBook) Spec() Spec { return listingsSpec(readmodel.SourceOrderBook) }

// Poll yields one KindListings unit per collection.
func (p OrderBook) Poll(ctx context.Context, req Request, sink Sink) (string, error) {
	return "", pollListings(ctx, p.c, readmodel.OrderBookMax, req, sink)
}

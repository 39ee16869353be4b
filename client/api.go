package client

import (
	"context"
	"encoding/json"
	"iter"
	"net/url"
	"strconv"

	"github.com/marketd/marketd/readmodel"
)

// PageQuery are the shared list parameters. A zero Limit is the server's
// default (25); an empty Cursor is page one.
type PageQuery struct {
	Limit  int
	Cursor string
}

// CollectionsQuery are GET /v1/collections' parameters. Empty Chain is every
// chain; empty Sort is volume.
type CollectionsQuery struct {
	Chain readmodel.Chain
	Sort  readmodel.Sort
	PageQuery
}

func (q PageQuery) values() url.Values {
	v := url.Values{}
	if q.Limit != 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	if q.Cursor != "" {
		v.Set("cursor", q.Cursor)
	}
	return v
}

func (q CollectionsQuery) values() url.Values {
	v := q.PageQuery.values()
	if q.Chain != "" {
		v.Set("chain", string(q.Chain))
	}
	if q.Sort != "" {
		v.Set("sort", string(q.Sort))
	}
	return v
}

func collectionPath(id string, rest ...string) string {
	p := "/v1/collections/" + url.PathEscape(id)
	for _, r := range rest {
		p += "/" + r
	}
	return p
}

// Index is GET /v1.
func (c *Client) Index(ctx context.Context) (Index, error) {
	var e envelope[Index]
	err := c.get(ctx, "/v1", nil, &e)
	return e.Data, err
}

// OpenAPI is GET /v1/openapi.json, the bare OpenAPI 3.1 document.
func (c *Client) OpenAPI(ctx context.Context) (json.RawMessage, error) {
	var doc json.RawMessage
	err := c.get(ctx, "/v1/openapi.json", nil, &doc)
	return doc, err
}

// Collections is one page of GET /v1/collections.
func (c *Client) Collections(ctx context.Context, q CollectionsQuery) (Page[CollectionSummary], error) {
	var p Page[CollectionSummary]
	err := c.get(ctx, "/v1/collections", q.values(), &p)
	return p, err
}

// Collection is GET /v1/collections/{id}.
func (c *Client) Collection(ctx context.Context, id string) (CollectionDetail, error) {
	var e envelope[CollectionDetail]
	err := c.get(ctx, collectionPath(id), nil, &e)
	return e.Data, err
}

// Floor is GET /v1/collections/{id}/floor.
func (c *Client) Floor(ctx context.Context, id string) (FloorResponse, error) {
	var e envelope[FloorResponse]
	err := c.get(ctx, collectionPath(id, "floor"), nil, &e)
	return e.Data, err
}

// Listings is one page of GET /v1/collections/{id}/listings. A page with
// Meta set is degraded (Meta.StaleSources names the failed sources); a 502
// (every source failed) is ErrUnknown.
func (c *Client) Listings(ctx context.Context, id string, q PageQuery) (Page[readmodel.MarketItem], error) {
	var p Page[readmodel.MarketItem]
	err := c.get(ctx, collectionPath(id, "listings"), q.values(), &p)
	return p, err
}

// Sales is one page of GET /v1/collections/{id}/sales. A page may hold
// fewer items than asked, even none, while HasMore is true.
func (c *Client) Sales(ctx context.Context, id string, q PageQuery) (Page[readmodel.MarketItem], error) {
	var p Page[readmodel.MarketItem]
	err := c.get(ctx, collectionPath(id, "sales"), q.values(), &p)
	return p, err
}

// Token is GET /v1/tokens/{chain}/{address}/{tokenId}. On Solana address
// is the collection mint and tokenID the asset mint.
func (c *Client) Token(ctx context.Context, chain readmodel.Chain, address, tokenID string) (TokenDetail, error) {
	var e envelope[TokenDetail]
	err := c.get(ctx, "/v1/tokens/"+url.PathEscape(string(chain))+"/"+url.PathEscape(address)+"/"+url.PathEscape(tokenID), nil, &e)
	return e.Data, err
}

// walk pages through fetch from page one and yields each item whose key
// was not yielded before (an empty key is always yielded). It stops at the
// first error (yielded once) or when the consumer stops.
func walk[T any](ctx context.Context, limit int, fetch func(context.Context, PageQuery) (Page[T], error), key func(T) string) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		seen := map[string]bool{}
		q := PageQuery{Limit: limit}
		for {
			p, err := fetch(ctx, q)
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, it := range p.Data {
				if k := key(it); k != "" {
					if seen[k] {
						continue
					}
					seen[k] = true
				}
				if !yield(it, nil) {
					return
				}
			}
			if !p.Pagination.HasMore || p.Pagination.NextCursor == nil {
				return
			}
			q.Cursor = *p.Pagination.NextCursor
		}
	}
}

// AllCollections walks every page of GET /v1/collections (q.Cursor is
// ignored), yielding each collection id once.
func (c *Client) AllCollections(ctx context.Context, q CollectionsQuery) iter.Seq2[CollectionSummary, error] {
	return walk(ctx, q.Limit, func(ctx context.Context, pq PageQuery) (Page[CollectionSummary], error) {
		q.PageQuery = pq
		return c.Collections(ctx, q)
	}, func(s CollectionSummary) string { return s.ID })
}

// AllListings walks a collection's listings snapshot (at most about 250
// items), yielding each orderId once (SPEC §4 listings rule 5: a walk is not
// a consistent read). A degraded page's meta is not reported: use Listings
// for it.
func (c *Client) AllListings(ctx context.Context, id string, limit int) iter.Seq2[readmodel.MarketItem, error] {
	return walk(ctx, limit, func(ctx context.Context, q PageQuery) (Page[readmodel.MarketItem], error) {
		return c.Listings(ctx, id, q)
	}, ListingKey)
}

// AllSales walks a collection's sales newest first to the start of
// history, yielding each (tx, orderId) once (SPEC §8).
func (c *Client) AllSales(ctx context.Context, id string, limit int) iter.Seq2[readmodel.MarketItem, error] {
	return walk(ctx, limit, func(ctx context.Context, q PageQuery) (Page[readmodel.MarketItem], error) {
		return c.Sales(ctx, id, q)
	}, SaleKey)
}

// ListingKey is a listing's deduplication key: its orderId ("" when null,
// which is never deduplicated).
func ListingKey(m readmodel.MarketItem) string {
	if m.OrderID == nil {
		return ""
	}
	return *m.OrderID
}

// SaleKey is a sale's deduplication key: tx plus orderId ("" when both are
// null, which is never deduplicated).
func SaleKey(m readmodel.MarketItem) string {
	if m.Tx == nil && m.OrderID == nil {
		return ""
	}
	var tx, oid string
	if m.Tx != nil {
		tx = *m.Tx
	}
	if m.OrderID != nil {
		oid = *m.OrderID
	}
	return tx + "\x00" + oid
}

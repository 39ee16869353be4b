package client

import (
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/wire"
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

// EventsQuery are GET /v1/collections/{id}/events' parameters. Empty Types
// is every type (the wire.Event* constants); an empty Cursor starts at the
// oldest event kept.
type EventsQuery struct {
	Types []string
	PageQuery
}

// MarketEventsQuery are GET /v1/events' parameters: EventsQuery's, and
// the chain and the collections (up to 20 ids, any {id} form) to keep;
// empty is every chain, every collection.
type MarketEventsQuery struct {
	Chain       readmodel.Chain
	Collections []string
	EventsQuery
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

func (q EventsQuery) values() url.Values {
	v := q.PageQuery.values()
	if len(q.Types) > 0 {
		v.Set("types", strings.Join(q.Types, ","))
	}
	return v
}

func (q MarketEventsQuery) values() url.Values {
	v := q.EventsQuery.values()
	if q.Chain != "" {
		v.Set("chain", string(q.Chain))
	}
	if len(q.Collections) > 0 {
		v.Set("collections", strings.Join(q.Collections, ","))
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
	var e wire.Envelope[Index]
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
	var e wire.Envelope[CollectionDetail]
	err := c.get(ctx, collectionPath(id), nil, &e)
	return e.Data, err
}

// Floor is GET /v1/collections/{id}/floor.
func (c *Client) Floor(ctx context.Context, id string) (FloorResponse, error) {
	var e wire.Envelope[FloorResponse]
	err := c.get(ctx, collectionPath(id, "floor"), nil, &e)
	return e.Data, err
}

// The floor history's response: its points per interval.
type (
	FloorHistory = wire.FloorHistoryResponse
	FloorPoint   = wire.FloorPoint
)

// FloorHistoryQuery chooses a floor history: Interval "1h" (the default,
// "") or "1d", and the range (zero times: the server's defaults, the
// intervals kept up to now).
type FloorHistoryQuery struct {
	Interval string
	From, To time.Time
}

func (q FloorHistoryQuery) values() url.Values {
	v := url.Values{}
	if q.Interval != "" {
		v.Set("interval", q.Interval)
	}
	if !q.From.IsZero() {
		v.Set("from", q.From.UTC().Format(time.RFC3339))
	}
	if !q.To.IsZero() {
		v.Set("to", q.To.UTC().Format(time.RFC3339))
	}
	return v
}

// FloorHistory is GET /v1/collections/{id}/floor/history: open, high,
// low and close of the ask floor per interval as the node observed it,
// nulls where it observed none. A range longer than the intervals kept
// is ErrBadRequest.
func (c *Client) FloorHistory(ctx context.Context, id string, q FloorHistoryQuery) (FloorHistory, error) {
	var e wire.Envelope[FloorHistory]
	err := c.get(ctx, collectionPath(id, "floor", "history"), q.values(), &e)
	return e.Data, err
}

// Listings is one page of GET /v1/collections/{id}/listings: items with
// their fees and buyerPrice, and the snapshot's depth and freshness. A page
// with Meta set is degraded (Meta.StaleSources names the failed sources); a
// 502 (every source failed) is ErrUnknown.
func (c *Client) Listings(ctx context.Context, id string, q PageQuery) (ListingsPage, error) {
	var p ListingsPage
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

// Events is one page of GET /v1/collections/{id}/events, the collection's
// change feed, oldest first. Every page, the newest too, carries a
// NextCursor: pass it back later to resume. HasMore is true when the page
// is full (more may be read at once).
func (c *Client) Events(ctx context.Context, id string, q EventsQuery) (Page[Event], error) {
	var p Page[Event]
	err := c.get(ctx, collectionPath(id, "events"), q.values(), &p)
	return p, err
}

// MarketEvents is one page of GET /v1/events, every collection's change
// feed in the order the node applied them, oldest first, as Events pages
// a collection's. A page with a filter may hold fewer events than the
// limit and HasMore true (the server reads a bounded stretch of the feed
// per page): keep following NextCursor. A collection id that does not
// resolve is ErrNotFound.
func (c *Client) MarketEvents(ctx context.Context, q MarketEventsQuery) (Page[Event], error) {
	var p Page[Event]
	err := c.get(ctx, "/v1/events", q.values(), &p)
	return p, err
}

// Sweep is GET /v1/collections/{id}/sweep?count=N: what buying the count
// cheapest listings of the current snapshot costs, each item with its
// fees and buyerPrice, and their totals (a total is nil when a fee in it
// is unknown). count 0 is the server's default (10); 1 to 50 otherwise.
// A 502 (every listing source failed) is ErrUnknown.
func (c *Client) Sweep(ctx context.Context, id string, count int) (SweepResponse, error) {
	var r SweepResponse
	var v url.Values
	if count != 0 {
		v = url.Values{"count": {strconv.Itoa(count)}}
	}
	err := c.get(ctx, collectionPath(id, "sweep"), v, &r)
	return r, err
}

// Status is GET /v1/status: each upstream source's health as the
// answering node's views hold it, and the node's readiness and lag.
func (c *Client) Status(ctx context.Context) (Status, error) {
	var e wire.Envelope[Status]
	err := c.get(ctx, "/v1/status", nil, &e)
	return e.Data, err
}

// Token is GET /v1/tokens/{chain}/{address}/{tokenId}. On Solana address
// is the collection mint (the collection's contractAddress, case kept) and
// tokenID the asset mint.
func (c *Client) Token(ctx context.Context, chain readmodel.Chain, address, tokenID string) (TokenDetail, error) {
	var e wire.Envelope[TokenDetail]
	err := c.get(ctx, "/v1/tokens/"+url.PathEscape(string(chain))+"/"+url.PathEscape(address)+"/"+url.PathEscape(tokenID), nil, &e)
	return e.Data, err
}

// TokenRef names one token as Token's arguments do.
type TokenRef struct {
	Chain   readmodel.Chain
	Address string // EVM: the contract; Solana: the collection mint
	TokenID string // EVM: the decimal token id; Solana: the asset mint
}

// String is the ref as GET /v1/tokens' ids name it: chain/address/tokenId.
func (r TokenRef) String() string { return string(r.Chain) + "/" + r.Address + "/" + r.TokenID }

// TokenResult is one answer of Tokens: the token, or Err, an *Error with
// the status and code Token answers for that ref (ErrNotFound for a token
// not indexed, ErrBadRequest for a malformed ref).
type TokenResult struct {
	Token *TokenDetail
	Err   error
}

// Tokens is GET /v1/tokens?ids=...: up to 50 tokens in one request (one
// request of the item rate bucket); result i answers refs[i]. The request
// fails as a whole (ErrBadRequest) with no refs, more than 50, or a ref
// with an empty part or a '/' or ',' inside one.
func (c *Client) Tokens(ctx context.Context, refs ...TokenRef) ([]TokenResult, error) {
	ids := make([]string, len(refs))
	for i, r := range refs {
		ids[i] = r.String()
	}
	var e wire.Envelope[[]wire.TokenResult]
	if err := c.get(ctx, "/v1/tokens", url.Values{"ids": {strings.Join(ids, ",")}}, &e); err != nil {
		return nil, err
	}
	out := make([]TokenResult, len(e.Data))
	for i, r := range e.Data {
		switch {
		case r.Error != nil:
			out[i].Err = itemError(r.Error)
		case r.TokenDetail != nil:
			out[i].Token = r.TokenDetail
		default:
			out[i].Err = &Error{Status: http.StatusBadGateway, Code: readmodel.UpstreamError, Message: "the answer holds neither a token nor an error"}
		}
	}
	return out, nil
}

// itemError is a batch item's error as the single endpoint answers it.
func itemError(o *wire.ErrorObject) *Error {
	st := http.StatusBadGateway
	switch o.Code {
	case readmodel.BadRequest:
		st = http.StatusBadRequest
	case readmodel.NotFound:
		st = http.StatusNotFound
	case readmodel.RateLimited:
		st = http.StatusTooManyRequests
	}
	return &Error{Status: st, Code: o.Code, Message: o.Message}
}

// walk pages through fetch from start and yields each item whose key was
// not yielded before (an empty key is always yielded). It stops after the
// page whose hasMore is false, at the first error (yielded once), or when
// the consumer stops.
func walk[T any](ctx context.Context, start PageQuery, fetch func(context.Context, PageQuery) ([]T, Pagination, error), key func(T) string) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		seen := map[string]bool{}
		q := start
		for {
			items, pg, err := fetch(ctx, q)
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, it := range items {
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
			if !pg.HasMore || pg.NextCursor == nil {
				return
			}
			q.Cursor = *pg.NextCursor
		}
	}
}

// pageFetch adapts a call answering Page[T] to walk's fetch.
func pageFetch[T any](call func(context.Context, PageQuery) (Page[T], error)) func(context.Context, PageQuery) ([]T, Pagination, error) {
	return func(ctx context.Context, q PageQuery) ([]T, Pagination, error) {
		p, err := call(ctx, q)
		return p.Data, p.Pagination, err
	}
}

// AllCollections walks every page of GET /v1/collections (q.Cursor is
// ignored), yielding each collection id once.
func (c *Client) AllCollections(ctx context.Context, q CollectionsQuery) iter.Seq2[CollectionSummary, error] {
	return walk(ctx, PageQuery{Limit: q.Limit}, pageFetch(func(ctx context.Context, pq PageQuery) (Page[CollectionSummary], error) {
		q.PageQuery = pq
		return c.Collections(ctx, q)
	}), func(s CollectionSummary) string { return s.ID })
}

// AllListings walks a collection's listings snapshot (at most about 250
// items), yielding each orderId once (SPEC §4 listings rule 5: a walk is not
// a consistent read). A degraded page's meta and the snapshot's depth are
// not reported: use Listings for them.
func (c *Client) AllListings(ctx context.Context, id string, limit int) iter.Seq2[ListingItem, error] {
	return walk(ctx, PageQuery{Limit: limit}, func(ctx context.Context, q PageQuery) ([]ListingItem, Pagination, error) {
		p, err := c.Listings(ctx, id, q)
		return p.Data, p.Pagination, err
	}, func(li ListingItem) string { return ListingKey(li.MarketItem) })
}

// AllSales walks a collection's sales newest first to the start of
// history, yielding each (tx, orderId) once (SPEC §8).
func (c *Client) AllSales(ctx context.Context, id string, limit int) iter.Seq2[readmodel.MarketItem, error] {
	return walk(ctx, PageQuery{Limit: limit}, pageFetch(func(ctx context.Context, q PageQuery) (Page[readmodel.MarketItem], error) {
		return c.Sales(ctx, id, q)
	}), SaleKey)
}

// AllEvents walks a collection's change feed from q.Cursor (empty: the
// oldest event kept) to its newest event, in order, yielding each eventId
// once. A cursor older than the events kept is ErrBadRequest. To resume
// later where a walk ended, page with Events and keep the last page's
// NextCursor.
func (c *Client) AllEvents(ctx context.Context, id string, q EventsQuery) iter.Seq2[Event, error] {
	return walk(ctx, q.PageQuery, pageFetch(func(ctx context.Context, pq PageQuery) (Page[Event], error) {
		q.PageQuery = pq
		return c.Events(ctx, id, q)
	}), EventKey)
}

// AllMarketEvents walks the market's change feed from q.Cursor (empty: the
// oldest event kept) to its newest event, in order, yielding each eventId
// once, as AllEvents walks a collection's.
func (c *Client) AllMarketEvents(ctx context.Context, q MarketEventsQuery) iter.Seq2[Event, error] {
	return walk(ctx, q.PageQuery, pageFetch(func(ctx context.Context, pq PageQuery) (Page[Event], error) {
		q.PageQuery = pq
		return c.MarketEvents(ctx, q)
	}), EventKey)
}

// EventKey is an event's deduplication key: its eventId.
func EventKey(e Event) string { return e.EventID }

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

package source

import (
	"context"
	"encoding/json"
	"net/url"
	"strconv"

	"github.com/marketd/marketd/readmodel/normalize"
)

// RawGroup is one collection's undecoded rows.
type RawGroup = Group[json.RawMessage]

func flat[R any](body []byte) (Rows[R], string, error) {
	p, rejects, err := DecodeFlat[R](body)
	if err != nil {
		return Rows[R]{}, "", err
	}
	return Rows[R]{Rows: p.Items, Rejects: rejects}, p.NextCursor, nil
}

type groupedPage[R any] struct {
	groups    []RowsGroup[R]
	watermark string
}

func grouped[R any](body []byte) (groupedPage[R], string, error) {
	p, err := DecodeGrouped[R](body)
	if err != nil {
		return groupedPage[R]{}, "", err
	}
	return groupedPage[R]{groups: p.Items, watermark: p.Watermark}, p.NextCursor, nil
}

// Collections walks collection-index GET /collections, calling fn with each
// page's documents and row rejections.
func (c *Client) Collections(ctx context.Context, limit int, fn func(Rows[normalize.RawCollection]) error) error {
	return walk(ctx, c, "/collections", nil, limit, flat[normalize.RawCollection], fn)
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

// Listings walks GET /listings (order-book or indexer-mirror), calling fn
// with each page's groups, undecoded: most collections' listings do not
// change between polls, and fn can skip decoding those (LazyGroup).
func (c *Client) Listings(ctx context.Context, limit int, fn func(groups []LazyGroup[normalize.RawListing]) error) error {
	return walk(ctx, c, "/listings", nil, limit, lazyGrouped[normalize.RawListing], fn)
}

func lazyGrouped[R any](body []byte) ([]LazyGroup[R], string, error) {
	p, err := DecodeLazyGrouped[R](body)
	if err != nil {
		return nil, "", err
	}
	return p.Items, p.NextCursor, nil
}

// Tokens walks indexer-mirror GET /tokens?since=, calling fn with each
// page's groups (each the complete token set of a changed collection). It
// returns the watermark to pass as since on the next walk; since "" reads
// every collection.
func (c *Client) Tokens(ctx context.Context, since string, limit int, fn func(groups []RowsGroup[normalize.RawToken]) error) (watermark string, err error) {
	q := url.Values{}
	if since != "" {
		q.Set("since", since)
	}
	err = walk(ctx, c, "/tokens", q, limit, grouped[normalize.RawToken], func(p groupedPage[normalize.RawToken]) error {
		if watermark == "" {
			watermark = p.watermark
		}
		return fn(p.groups)
	})
	if err != nil {
		return "", err
	}
	return watermark, nil
}

// Stats walks indexer-stats GET /stats.
func (c *Client) Stats(ctx context.Context, limit int, fn func(Rows[normalize.RawStats]) error) error {
	return walk(ctx, c, "/stats", nil, limit, flat[normalize.RawStats], fn)
}

// Analytics walks analytics GET /analytics.
func (c *Client) Analytics(ctx context.Context, limit int, fn func(Rows[normalize.RawAnalytics]) error) error {
	return walk(ctx, c, "/analytics", nil, limit, flat[normalize.RawAnalytics], fn)
}

// Sales reads the sales feed from cursor ("" = the start of history) until
// it has no more items now, calling fn with each page's rows and the
// cursor after them. fn's error stops the walk. It returns the cursor after
// the last page fn accepted: store it once the rows are durable.
func (c *Client) Sales(ctx context.Context, cursor string, limit int, fn func(rows Rows[normalize.RawSale], next string) error) (string, error) {
	q := url.Values{}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	for pages := 0; pages < 1_000_000; pages++ {
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		body, err := c.get(ctx, "/sales", q)
		if err != nil {
			return cursor, err
		}
		p, rejects, err := DecodeFlat[normalize.RawSale](body)
		if err != nil {
			return cursor, c.fail(err)
		}
		if p.NextCursor == "" {
			return cursor, c.fail(classed(ClassBadPayload, errEmptyCursor))
		}
		if err := fn(Rows[normalize.RawSale]{Rows: p.Items, Rejects: rejects}, p.NextCursor); err != nil {
			return cursor, err
		}
		same := p.NextCursor == cursor
		cursor = p.NextCursor
		if !p.HasMore || same {
			return cursor, nil
		}
	}
	return cursor, nil
}

var errEmptyCursor = errString("sales answer without nextCursor")

type errString string

func (e errString) Error() string { return string(e) }

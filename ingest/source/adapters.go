package source

import (
	"context"
	"encoding/json"
	"net/url"
	"strconv"
)

// RawGroup is one collection's undecoded rows.
type RawGroup = Group[json.RawMessage]

// Collections walks collection-index GET /collections, calling fn with each
// page's undecoded documents.
func (c *Client) Collections(ctx context.Context, limit int, fn func(items []json.RawMessage) error) error {
	return walk(ctx, c, "/collections", nil, limit, func(p *Page[json.RawMessage]) error { return fn(p.Items) })
}

// Rates reads price-feed GET /rates. Rates that are not JSON numbers are
// returned in bad (sorted by nothing in particular) and left out of rates.
func (c *Client) Rates(ctx context.Context) (rates map[string]float64, bad []string, err error) {
	var a RatesAnswer
	if err := c.get(ctx, "/rates", nil, &a); err != nil {
		return nil, nil, err
	}
	rates = make(map[string]float64, len(a.Rates))
	for k, v := range a.Rates {
		f, perr := strconv.ParseFloat(string(v), 64)
		if perr != nil || len(k) > 16 {
			bad = append(bad, readmodelClip(k))
			continue
		}
		rates[k] = f
	}
	return rates, bad, nil
}

// Listings walks GET /listings (order-book or indexer-mirror), calling fn
// with each page's groups.
func (c *Client) Listings(ctx context.Context, limit int, fn func(groups []RawGroup) error) error {
	return walk(ctx, c, "/listings", nil, limit, func(p *Page[RawGroup]) error { return fn(p.Items) })
}

// Tokens walks indexer-mirror GET /tokens?since=, calling fn with each
// page's groups (each the complete token set of a changed collection). It
// returns the watermark to pass as since on the next walk; since "" reads
// every collection.
func (c *Client) Tokens(ctx context.Context, since string, limit int, fn func(groups []RawGroup) error) (watermark string, err error) {
	q := url.Values{}
	if since != "" {
		q.Set("since", since)
	}
	err = walk(ctx, c, "/tokens", q, limit, func(p *Page[RawGroup]) error {
		if watermark == "" {
			watermark = p.Watermark
		}
		return fn(p.Items)
	})
	if err != nil {
		return "", err
	}
	return watermark, nil
}

// Stats walks indexer-stats GET /stats.
func (c *Client) Stats(ctx context.Context, limit int, fn func(items []json.RawMessage) error) error {
	return walk(ctx, c, "/stats", nil, limit, func(p *Page[json.RawMessage]) error { return fn(p.Items) })
}

// Analytics walks analytics GET /analytics.
func (c *Client) Analytics(ctx context.Context, limit int, fn func(items []json.RawMessage) error) error {
	return walk(ctx, c, "/analytics", nil, limit, func(p *Page[json.RawMessage]) error { return fn(p.Items) })
}

// Sales reads the sales feed from cursor ("" = the start of history) until
// it has no more items now, calling fn with each page's items and the
// cursor after them. fn's error stops the walk. It returns the cursor after
// the last page read: store it once the rows are durable.
func (c *Client) Sales(ctx context.Context, cursor string, limit int, fn func(items []json.RawMessage, next string) error) (string, error) {
	q := url.Values{}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	for pages := 0; pages < 1_000_000; pages++ {
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		var p Page[json.RawMessage]
		if err := c.get(ctx, "/sales", q, &p); err != nil {
			return cursor, err
		}
		if p.NextCursor == "" {
			return cursor, c.fail(classed(ClassBadPayload, errEmptyCursor))
		}
		if err := fn(p.Items, p.NextCursor); err != nil {
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

var errEmptyCursor = jsonErr("sales answer without nextCursor")

type jsonErr string

func (e jsonErr) Error() string { return string(e) }

func readmodelClip(s string) string {
	if len(s) > 16 {
		return s[:16]
	}
	return s
}

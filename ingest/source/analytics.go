package source

import (
	"context"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/normalize"
)

// Analytics polls analytics: live floor, volumes and sale counts, one
// KindAnalytics message per collection.
type Analytics struct{ c *Client }

// NewAnalytics returns the analytics poller over c.
func NewAnalytics(c *Client) Analytics { return Analytics{c: c} }

// Spec implements the ingest Poller.
func (p Analytics) Spec() Spec {
	return Spec{Name: string(readmodel.SourceAnalytics), Source: readmodel.SourceAnalytics,
		Collections: Checked, Status: PerCollection}
}

// Poll yields one unit per well-formed row.
func (p Analytics) Poll(ctx context.Context, req Request, sink Sink) (string, error) {
	return "", flatPoll(ctx, req, sink, readmodel.KindAnalytics, p.c.Analytics,
		func(ra *normalize.RawAnalytics) (string, *readmodel.Message, error) {
			id, a, err := normalize.Analytics(*ra)
			if err != nil {
				return "", nil, err
			}
			return id, &readmodel.Message{Analytics: &a}, nil
		})
}

// Analytics walks analytics GET /analytics.
func (c *Client) Analytics(ctx context.Context, limit int, fn func(Rows[normalize.RawAnalytics]) error) error {
	return walk(ctx, c, "/analytics", nil, limit, flat[normalize.RawAnalytics], fn)
}

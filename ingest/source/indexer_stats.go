package source

import (
	"context"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/normalize"
)

// IndexerStats polls indexer-stats: owners and counts, one KindStats
// message per collection.
type IndexerStats struct{ c *Client }

// NewIndexerStats returns the indexer-stats poller over c.
func NewIndexerStats(c *Client) IndexerStats { return IndexerStats{c: c} }

// Spec implements the ingest Poller.
func (p IndexerStats) Spec() Spec {
	return Spec{Name: string(readmodel.SourceIndexerStats), Source: readmodel.SourceIndexerStats,
		Collections: Checked, Status: PerCollection}
}

// Poll yields one unit per well-formed row.
func (p IndexerStats) Poll(ctx context.Context, req Request, sink Sink) (string, error) {
	return "", flatPoll(ctx, req, sink, readmodel.KindStats, p.c.Stats,
		func(rs *normalize.RawStats) (string, *readmodel.Message, error) {
			id, st, err := normalize.Stats(*rs)
			if err != nil {
				return "", nil, err
			}
			return id, &readmodel.Message{Stats: &st}, nil
		})
}

// Stats walks indexer-stats GET /stats.
func (c *Client) Stats(ctx context.Context, limit int, fn func(Rows[normalize.RawStats]) error) error {
	return walk(ctx, c, "/stats", nil, limit, flat[normalize.RawStats], fn)
}

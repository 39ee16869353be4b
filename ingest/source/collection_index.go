package source

import (
	"context"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/normalize"
)

// CollectionIndex polls collection-index: the collection list, which the
// per-collection polls are checked against.
type CollectionIndex struct{ c *Client }

// NewCollectionIndex returns the collection-index poller over c.
func NewCollectionIndex(c *Client) CollectionIndex { return CollectionIndex{c: c} }

// Spec implements the ingest Poller.
func (p CollectionIndex) Spec() Spec {
	return Spec{Name: string(readmodel.SourceCollectionIndex), Source: readmodel.SourceCollectionIndex,
		First: true, Collections: Lists, Status: SourceWide}
}

// Poll yields one KindCollection unit per collection; a second row of the
// same id is rejected.
func (p CollectionIndex) Poll(ctx context.Context, req Request, sink Sink) (string, error) {
	seen := map[string]bool{}
	return "", p.c.Collections(ctx, req.Limit, func(page Rows[normalize.RawCollection]) error {
		rejectAll(sink, page.Rejects)
		for _, rc := range page.Rows {
			d, err := normalize.Collection(rc)
			if err != nil {
				sink.Reject(err, 1)
				continue
			}
			if seen[d.ID] {
				sink.Reject(&normalize.RejectError{Reason: normalize.RejectBadField, Field: "id", Detail: "duplicate"}, 1)
				continue
			}
			seen[d.ID] = true
			if err := sink.Emit(Unit{Kind: readmodel.KindCollection, Collection: d.ID,
				Build: func(string) Built { return one(&readmodel.Message{Collection: &d}, 1) }}); err != nil {
				return err
			}
		}
		return nil
	})
}

// Collections walks collection-index GET /collections, calling fn with each
// page's documents and row rejections.
func (c *Client) Collections(ctx context.Context, limit int, fn func(Rows[normalize.RawCollection]) error) error {
	return walk(ctx, c, "/collections", nil, limit, flat[normalize.RawCollection], fn)
}

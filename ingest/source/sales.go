package source

import (
	"context"
	"net/url"
	"strconv"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/normalize"
)

// SalesBatch bounds the sales in one KindSales message.
const SalesBatch = 500

// Sales polls the sales feed from where the last recorded poll ended (its
// mark is the feed's cursor): new sales only, appended.
type Sales struct{ c *Client }

// NewSales returns the sales poller over c.
func NewSales(c *Client) Sales { return Sales{c: c} }

// Spec implements the ingest Poller.
func (p Sales) Spec() Spec {
	return Spec{Name: string(readmodel.SourceSales), Source: readmodel.SourceSales,
		Collections: Checked, Status: SourceWide, Append: true}
}

// Poll yields, for each page, one unit per collection (in the order the
// page first names them) holding its new sales in messages of at most
// SalesBatch, numbered 1, 2, … across the poll in Bucket so that their
// IDs differ. It returns the cursor after the last page the cycle took.
func (p Sales) Poll(ctx context.Context, req Request, sink Sink) (string, error) {
	batch := uint32(0)
	return p.c.Sales(ctx, req.Mark, req.Limit, func(page Rows[normalize.RawSale], _ string) error {
		by := map[string][]readmodel.SaleRow{}
		var order []string
		rejectAll(sink, page.Rejects)
		for i := range page.Rows {
			s, err := normalize.Sale(page.Rows[i])
			if err != nil {
				sink.Reject(err, 1)
				continue
			}
			if _, ok := by[s.CollectionID]; !ok {
				order = append(order, s.CollectionID)
			}
			by[s.CollectionID] = append(by[s.CollectionID], s)
		}
		for _, id := range order {
			rows := by[id]
			u := Unit{Kind: readmodel.KindSales, Collection: id, Size: func() int { return len(rows) },
				Build: func(string) Built {
					b := Built{Rows: len(rows), Clean: true}
					for rest := rows; len(rest) > 0; {
						n := min(len(rest), SalesBatch)
						batch++
						b.Msgs = append(b.Msgs, &readmodel.Message{Bucket: batch, Sales: rest[:n]})
						rest = rest[n:]
					}
					return b
				}}
			if err := sink.Emit(u); err != nil {
				return err
			}
		}
		return nil
	})
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

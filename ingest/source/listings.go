package source

import (
	"context"
	"sort"
	"time"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/normalize"
)

// GET /listings, as order-book and indexer-mirror both serve it: one
// KindListings unit per collection, replacing the collection's rows from
// that source. Most collections' rows do not change between polls (83–91%
// of them per source in a steady cycle at 100,000 collections): the units
// are Lazy, so the cycle recognizes those by their bytes and they are
// neither decoded nor normalized, which were most of a listings poll's
// CPU.

// listingsSpec is the Spec of the listings poll of src.
func listingsSpec(src readmodel.Source) Spec {
	return Spec{Name: string(src), Source: src, Collections: Checked, Status: PerCollection, Empty: readmodel.KindListings}
}

// pollListings walks c's GET /listings, keeping the keep cheapest rows of
// each collection.
func pollListings(ctx context.Context, c *Client, keep int, req Request, sink Sink) error {
	src := c.Source()
	return c.Listings(ctx, req.Limit, func(groups []LazyGroup[normalize.RawListing]) error {
		now := req.Now
		for _, g := range groups {
			u := Unit{Kind: readmodel.KindListings, Collection: g.CollectionID, At: now, Lazy: true, Raw: g.Raw,
				Size:  func() int { rows, rejects := g.Decode(); return len(rows) + len(rejects) },
				Build: func(id string) Built { return listingsBuild(src, sink, keep, id, g, now) }}
			if err := sink.Emit(u); err != nil {
				return err
			}
		}
		return nil
	})
}

// listingsBuild decodes and normalizes one collection's listing rows.
func listingsBuild(src readmodel.Source, sink Sink, keep int, id string, g LazyGroup[normalize.RawListing], now time.Time) Built {
	raws, rejects := g.Decode()
	rejectAll(sink, rejects)
	clean := len(rejects) == 0
	rows := make([]readmodel.ListingRow, 0, len(raws))
	var minExp int64
	for i := range raws {
		r, err := normalize.Listing(src, raws[i], now)
		if err != nil {
			sink.Reject(err, 1)
			clean = false
			continue
		}
		r.CollectionID = id
		if r.ExpiresAt != nil {
			if e := r.ExpiresAt.UnixNano(); minExp == 0 || e < minExp {
				minExp = e
			}
		}
		rows = append(rows, r)
	}
	sortListings(rows)
	if len(rows) > keep {
		rows = rows[:keep]
	}
	return Built{Msgs: []*readmodel.Message{{Listings: rows}}, Rows: len(rows), Clean: clean, Expires: minExp}
}

func lessRaw(a, b string) int {
	if len(a) != len(b) {
		if len(a) < len(b) {
			return -1
		}
		return 1
	}
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func sortListings(rows []readmodel.ListingRow) {
	sort.SliceStable(rows, func(i, j int) bool {
		if d := lessRaw(rows[i].PriceRaw, rows[j].PriceRaw); d != 0 {
			return d < 0
		}
		if rows[i].OrderID != rows[j].OrderID {
			return rows[i].OrderID < rows[j].OrderID
		}
		return rows[i].AssetKey() < rows[j].AssetKey()
	})
}

// Listings walks GET /listings (order-book or indexer-mirror), calling fn
// with each page's groups, undecoded: most collections' listings do not
// change between polls, and fn can skip decoding those (LazyGroup).
func (c *Client) Listings(ctx context.Context, limit int, fn func(groups []LazyGroup[normalize.RawListing]) error) error {
	return walk(ctx, c, "/listings", nil, limit, lazyGrouped[normalize.RawListing], fn)
}

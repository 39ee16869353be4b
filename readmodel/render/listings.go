package render

import (
	"sync"

	"github.com/marketd/marketd/readmodel"
)

// ListingsRecord is a collection's listing snapshot as the projector
// stores it: the rows it serves, not their JSON. A row renders to about
// 900 bytes of JSON and is about a hundred as a record, and the store's
// listing snapshots were 75 of its 415 MB at 10,000 collections x 100
// tokens as S2-compressed JSON. View renders it when the store loads it
// (its cache keeps the rendered view), the way token records are.
type ListingsRecord struct {
	Version uint64
	// Rows are the snapshot's rows: merged, deduplicated per asset
	// (native wins), active and unexpired as of projection, sorted by
	// price.decimal then orderId, at most ListingsCeiling. A row without
	// a timestamp of its own carries its observation time instead
	// (ListingRowJSON's observedAt), so the record renders alone.
	Rows []readmodel.ListingRow
	// RoyaltyBps is the collection's royalty as of projection (fees).
	RoyaltyBps *int64
	// StaleSources, AllFailed, Listed, BeyondExpires and AsOf are
	// ListingsView's; Listed counts every row, including any that does
	// not render (View drops those and lowers it).
	StaleSources  []readmodel.Source
	AllFailed     bool
	Listed        int
	BeyondExpires []int64
	AsOf          Freshness
}

// View renders r under quote q: each row as AppendListingRow renders it
// (its MarketItem with fees and buyerPrice, usd values from q), and its
// expiry. A row whose price cannot be interpreted is left out and not
// counted in Listed. The items share one allocation, and none with r.
func (r ListingsRecord) View(q *USDQuote) ListingsView {
	v := ListingsView{
		Version:       r.Version,
		Items:         make([][]byte, 0, len(r.Rows)),
		ExpiresAt:     make([]int64, 0, len(r.Rows)),
		StaleSources:  r.StaleSources,
		AllFailed:     r.AllFailed,
		Listed:        r.Listed,
		BeyondExpires: r.BeyondExpires,
		AsOf:          r.AsOf,
	}
	if q != nil {
		v.USD = q.Version
	}
	bp := viewBufs.Get().(*[]byte)
	defer viewBufs.Put(bp)
	out := (*bp)[:0]
	ends := make([]int, 0, len(r.Rows))
	for i := range r.Rows {
		row := &r.Rows[i]
		var ok bool
		if out, ok = AppendListingRow(out, row, r.RoyaltyBps, q); !ok {
			v.Listed--
			continue
		}
		ends = append(ends, len(out))
		var exp int64
		if row.ExpiresAt != nil {
			exp = row.ExpiresAt.UnixMilli()
		}
		v.ExpiresAt = append(v.ExpiresAt, exp)
	}
	*bp = out
	// The items are copied out of the work buffer into one exact
	// allocation: the store's cache counts a view by its items' bytes.
	items := append([]byte(nil), out...)
	start := 0
	for _, end := range ends {
		v.Items = append(v.Items, items[start:end:end])
		start = end
	}
	return v
}

// viewBufs holds View's work buffers.
var viewBufs = sync.Pool{New: func() any { return new([]byte) }}

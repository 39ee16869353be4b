package render

import (
	"math/big"
	"sort"
	"sync"
	"time"

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

// ListingSource is one listing source's stored state for a collection.
type ListingSource struct {
	Rows       []readmodel.ListingRow
	ObservedAt time.Time
	// Failed is true when the source's latest poll for the collection
	// failed; LastGoodAt is then when it last answered well.
	Failed     bool
	LastGoodAt time.Time
}

// SnapshotInputs is what a listing snapshot is merged from.
type SnapshotInputs struct {
	// HasContract is false for a collection with no contract address or
	// collection mint: it contributes no native rows and order-book is stale.
	HasContract bool
	OrderBook   ListingSource
	Mirror      ListingSource
	// Now decides liveness (status active and unexpired) and whether a
	// failing source's last good rows are still within Retention of its
	// LastGoodAt.
	Now       time.Time
	Retention time.Duration
}

// Snapshot is a merged listing snapshot.
type Snapshot struct {
	Rows         []readmodel.ListingRow // deduplicated (native wins), live, sorted, at most ListingsCeiling
	StaleSources []readmodel.Source
	AllFailed    bool
	// MirrorCheapest is the cheapest live indexer-mirror row (askFloor's
	// second choice), nil when there is none.
	MirrorCheapest *readmodel.ListingRow
	// Deadline is the earliest future time at which the clock alone
	// changes what this snapshot serves in a way that skipping expired
	// rows at request time cannot reproduce (see MergeListings); zero when
	// none. Rows carry their own expiry, so an expiring row is a deadline
	// only when it is the floor's row or the mirror's cheapest, when it
	// hides a row of the same asset that outlives it, or when the
	// snapshot was cut at ListingsCeiling (a row beyond the cut moves in).
	// A failing source's rows aging out is always one.
	Deadline time.Time
	// Listed counts every live, deduplicated listing known, Rows and those
	// the ceiling cut; BeyondExpires holds the expiries (unix ms) of the
	// cut rows that have one, ascending, so a reader can count the cut
	// rows still live at its time.
	Listed        int
	BeyondExpires []int64
}

type sortedRow struct {
	row      *readmodel.ListingRow
	raw      *big.Int
	fromBook bool // a native row read from the order book itself
}

func lessRow(a, b sortedRow) bool {
	if c := a.raw.Cmp(b.raw); c != 0 {
		return c < 0
	}
	return a.row.OrderID < b.row.OrderID
}

// MergeListings merges the order book's and the mirror's rows for one
// collection by SPEC's listings rules: only live rows with interpretable
// prices; one row per asset key with the native order-book row winning
// (then the cheaper, then the smaller orderId, so the result never depends
// on input order); sorted by price (exact big-integer compare, which agrees
// with price.decimal) then orderId; capped at ListingsCeiling.
//
// Its rows serve until Deadline with the rows expired by request time
// skipped: for every now before Deadline, MergeListings at now yields
// exactly those rows, the same floor row and the same mirror cheapest.
// A projector therefore re-merges on the clock only at Deadline, not at
// every row's expiry.
func MergeListings(in SnapshotInputs) Snapshot {
	var snap Snapshot
	obStale := !in.HasContract || in.OrderBook.Failed
	if obStale {
		snap.StaleSources = append(snap.StaleSources, readmodel.SourceOrderBook)
	}
	if in.Mirror.Failed {
		snap.StaleSources = append(snap.StaleSources, readmodel.SourceIndexerMirror)
	}
	snap.AllFailed = obStale && in.Mirror.Failed

	note := func(t time.Time) {
		if t.After(in.Now) && (snap.Deadline.IsZero() || t.Before(snap.Deadline)) {
			snap.Deadline = t
		}
	}
	usable := func(s *ListingSource) bool {
		if !s.Failed {
			return true
		}
		until := s.LastGoodAt.Add(in.Retention)
		if s.LastGoodAt.IsZero() || !until.After(in.Now) {
			return false
		}
		note(until)
		return true
	}
	best := make(map[string]sortedRow)
	// outlived holds, per asset key, the latest expiry among the rows the
	// key's winner hides (forever: one of them never expires). When the
	// winner expires first, one of those takes its place.
	type hidden struct {
		until   time.Time
		forever bool
	}
	var outlived map[string]hidden
	hide := func(k string, r *readmodel.ListingRow) {
		if outlived == nil {
			outlived = make(map[string]hidden)
		}
		h := outlived[k]
		switch {
		case r.ExpiresAt == nil:
			h.forever = true
		case r.ExpiresAt.After(h.until):
			h.until = *r.ExpiresAt
		}
		outlived[k] = h
	}
	var mirrorCheapest *sortedRow
	add := func(s *ListingSource, native bool) {
		for i := range s.Rows {
			r := &s.Rows[i]
			if !r.Live(in.Now) {
				continue
			}
			raw, err := readmodel.ParseRaw(r.PriceRaw)
			if err != nil {
				continue
			}
			cand := sortedRow{row: r, raw: raw, fromBook: native && r.Native()}
			if !native {
				if mirrorCheapest == nil || lessRow(cand, *mirrorCheapest) {
					c := cand
					mirrorCheapest = &c
				}
			}
			k := r.AssetKey()
			cur, ok := best[k]
			switch {
			case !ok:
				best[k] = cand
			case cand.fromBook && !cur.fromBook:
				best[k] = cand
				hide(k, cur.row)
			case cur.fromBook && !cand.fromBook:
				hide(k, cand.row)
			case lessRow(cand, cur):
				best[k] = cand
				hide(k, cur.row)
			default:
				hide(k, cand.row)
			}
		}
	}
	expires := func(r *readmodel.ListingRow) {
		if r.ExpiresAt != nil {
			note(*r.ExpiresAt)
		}
	}
	if in.HasContract && usable(&in.OrderBook) {
		add(&in.OrderBook, true)
	}
	if usable(&in.Mirror) {
		add(&in.Mirror, false)
	}
	rows := make([]sortedRow, 0, len(best))
	for k, r := range best {
		rows = append(rows, r)
		if h, ok := outlived[k]; ok && r.row.ExpiresAt != nil && (h.forever || h.until.After(*r.row.ExpiresAt)) {
			expires(r.row)
		}
	}
	sort.Slice(rows, func(i, j int) bool { return lessRow(rows[i], rows[j]) })
	snap.Listed = len(rows)
	if len(rows) > readmodel.ListingsCeiling {
		for _, r := range rows[readmodel.ListingsCeiling:] {
			if r.row.ExpiresAt != nil {
				snap.BeyondExpires = append(snap.BeyondExpires, r.row.ExpiresAt.UnixMilli())
			}
		}
		sort.Slice(snap.BeyondExpires, func(i, j int) bool { return snap.BeyondExpires[i] < snap.BeyondExpires[j] })
		rows = rows[:readmodel.ListingsCeiling]
		for _, r := range rows {
			expires(r.row)
		}
	}
	if len(rows) > 0 {
		expires(rows[0].row) // the floor's row
	}
	if mirrorCheapest != nil {
		expires(mirrorCheapest.row)
	}
	snap.Rows = make([]readmodel.ListingRow, len(rows))
	for i, r := range rows {
		snap.Rows[i] = *r.row
	}
	if mirrorCheapest != nil {
		c := *mirrorCheapest.row
		snap.MirrorCheapest = &c
	}
	return snap
}

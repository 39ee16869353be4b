package render_test

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/render"
	"github.com/stretchr/testify/assert"
)

// TestMergeListingsStaleness: SPEC listings rules 6, 8 and 9 as the
// projector decides them; the API serves StaleSources and AllFailed as is.
func TestMergeListingsStaleness(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	row := func(market, token, raw string) readmodel.ListingRow {
		return readmodel.ListingRow{Chain: readmodel.Ethereum, ContractAddress: "0x" + "ab", TokenID: token,
			CollectionID: "ethereum_0xab", PriceRaw: raw, Marketplace: market, Status: readmodel.StatusActive,
			Timestamp: now.Add(-time.Hour), OrderID: market + token}
	}
	ok := func(rows ...readmodel.ListingRow) render.ListingSource {
		return render.ListingSource{Rows: rows, ObservedAt: now, LastGoodAt: now}
	}
	failed := render.ListingSource{Failed: true, LastGoodAt: now.Add(-time.Hour)}
	tests := []struct {
		name      string
		in        render.SnapshotInputs
		stale     []readmodel.Source
		allFailed bool
		rows      int
	}{
		{"healthy", render.SnapshotInputs{HasContract: true, OrderBook: ok(row("NATIVE", "1", "5")), Mirror: ok(row("ext", "2", "6"))}, nil, false, 2},
		{"no contract: order-book stale, no native rows", render.SnapshotInputs{HasContract: false, OrderBook: ok(row("NATIVE", "1", "5")), Mirror: ok(row("ext", "2", "6"))},
			[]readmodel.Source{readmodel.SourceOrderBook}, false, 1},
		{"no contract and mirror failed: every source failed", render.SnapshotInputs{HasContract: false, OrderBook: ok(), Mirror: failed},
			[]readmodel.Source{readmodel.SourceOrderBook, readmodel.SourceIndexerMirror}, true, 0},
		{"order-book failed", render.SnapshotInputs{HasContract: true, OrderBook: failed, Mirror: ok(row("ext", "2", "6"))},
			[]readmodel.Source{readmodel.SourceOrderBook}, false, 1},
		{"both failed", render.SnapshotInputs{HasContract: true, OrderBook: failed, Mirror: failed},
			[]readmodel.Source{readmodel.SourceOrderBook, readmodel.SourceIndexerMirror}, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.in.Now, tt.in.Retention = now, time.Minute
			snap := render.MergeListings(tt.in)
			assert.Equal(t, tt.stale, snap.StaleSources)
			assert.Equal(t, tt.allFailed, snap.AllFailed)
			assert.Len(t, snap.Rows, tt.rows)
		})
	}
}

// TestMergeListingsHoldsUntilDeadline: a snapshot is re-merged on the
// clock only at its Deadline; until then the API serves its rows with the
// ones expired by request time skipped. That must be exactly what a merge
// at request time would give (SPEC listings rule 3: only non-expired rows,
// deduplicated per asset with the native row winning, rule 4: the 250
// cheapest), with the same floor row and mirror cheapest. Random markets
// with colliding assets, ties, expiries, a failing source's retention
// and, in some, more rows than the ceiling.
func TestMergeListingsHoldsUntilDeadline(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(7, 11))
	row := func(token int, market string) readmodel.ListingRow {
		r := readmodel.ListingRow{Chain: readmodel.Ethereum, ContractAddress: "0xab", TokenID: strconv.Itoa(token),
			CollectionID: "ethereum_0xab", PriceRaw: strconv.Itoa(100 + rng.IntN(40)), Marketplace: market,
			Status: readmodel.StatusActive, OrderID: fmt.Sprintf("%s-%d-%d", market, token, rng.IntN(1000))}
		if rng.IntN(5) > 0 {
			r.ExpiresAt = ptr(now.Add(time.Duration(1+rng.IntN(20)) * 30 * time.Second))
		}
		return r
	}
	source := func(rows []readmodel.ListingRow) render.ListingSource {
		s := render.ListingSource{Rows: rows, ObservedAt: now}
		if rng.IntN(6) == 0 {
			s.Failed, s.LastGoodAt = true, now.Add(-time.Duration(rng.IntN(8))*time.Minute)
		}
		return s
	}
	// served is what the API shows from a snapshot at a time: its rows
	// live then (the listings handler skips the others), and, prepared at
	// merge time and shown as they are, the floor's row and the mirror's
	// cheapest.
	type served struct {
		rows                  []string
		floor, mirrorCheapest string
	}
	view := func(s render.Snapshot, at time.Time) served {
		var v served
		for i := range s.Rows {
			if s.Rows[i].Live(at) {
				v.rows = append(v.rows, s.Rows[i].OrderID+"@"+s.Rows[i].PriceRaw)
			}
		}
		if len(s.Rows) > 0 {
			v.floor = s.Rows[0].OrderID
		}
		if m := s.MirrorCheapest; m != nil {
			v.mirrorCheapest = m.OrderID
		}
		return v
	}
	held, cut := 0, 0
	for n := 0; n < 2000; n++ {
		var book, mirror []readmodel.ListingRow
		tokens := 1 + rng.IntN(12)
		if n%50 == 0 {
			// Past the ceiling, one row per asset: only the cut decides.
			for i := 0; i < readmodel.ListingsCeiling+20; i++ {
				book = append(book, row(i, readmodel.MarketplaceNative))
			}
			tokens = 0
		}
		for i := 0; i < tokens; i++ {
			if rng.IntN(3) > 0 {
				nat := row(i, readmodel.MarketplaceNative)
				book = append(book, nat)
				if rng.IntN(2) == 0 { // the mirror's lagged copy, sometimes with another expiry
					cp := nat
					if rng.IntN(3) == 0 {
						cp.ExpiresAt = row(i, "x").ExpiresAt
					}
					mirror = append(mirror, cp)
				}
			}
			for k := rng.IntN(3); k > 0; k-- {
				mirror = append(mirror, row(i, "opensea"))
			}
		}
		in := render.SnapshotInputs{HasContract: rng.IntN(8) > 0, OrderBook: source(book), Mirror: source(mirror),
			Now: now, Retention: 5 * time.Minute}
		snap := render.MergeListings(in)
		if len(book)+len(mirror) > readmodel.ListingsCeiling {
			cut++
		}
		for at := now; at.Before(now.Add(12 * time.Minute)); at = at.Add(15 * time.Second) {
			if !snap.Deadline.IsZero() && !at.Before(snap.Deadline) {
				break
			}
			in.Now = at
			want := render.MergeListings(in)
			if !assert.Equal(t, view(want, at), view(snap, at), "market %d at +%s (deadline +%s)", n, at.Sub(now), snap.Deadline.Sub(now)) {
				return
			}
			held++
		}
	}
	assert.Positive(t, cut, "some markets exceed the ceiling")
	assert.Greater(t, held, 2000, "snapshots were checked at later times")
}

func ptr[T any](v T) *T { return &v }

package readmodel_test

import (
	"testing"
	"time"

	"github.com/marketd/marketd/readmodel"
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
	ok := func(rows ...readmodel.ListingRow) readmodel.ListingSource {
		return readmodel.ListingSource{Rows: rows, ObservedAt: now, LastGoodAt: now}
	}
	failed := readmodel.ListingSource{Failed: true, LastGoodAt: now.Add(-time.Hour)}
	tests := []struct {
		name      string
		in        readmodel.SnapshotInputs
		stale     []readmodel.Source
		allFailed bool
		rows      int
	}{
		{"healthy", readmodel.SnapshotInputs{HasContract: true, OrderBook: ok(row("NATIVE", "1", "5")), Mirror: ok(row("ext", "2", "6"))}, nil, false, 2},
		{"no contract: order-book stale, no native rows", readmodel.SnapshotInputs{HasContract: false, OrderBook: ok(row("NATIVE", "1", "5")), Mirror: ok(row("ext", "2", "6"))},
			[]readmodel.Source{readmodel.SourceOrderBook}, false, 1},
		{"no contract and mirror failed: every source failed", readmodel.SnapshotInputs{HasContract: false, OrderBook: ok(), Mirror: failed},
			[]readmodel.Source{readmodel.SourceOrderBook, readmodel.SourceIndexerMirror}, true, 0},
		{"order-book failed", readmodel.SnapshotInputs{HasContract: true, OrderBook: failed, Mirror: ok(row("ext", "2", "6"))},
			[]readmodel.Source{readmodel.SourceOrderBook}, false, 1},
		{"both failed", readmodel.SnapshotInputs{HasContract: true, OrderBook: failed, Mirror: failed},
			[]readmodel.Source{readmodel.SourceOrderBook, readmodel.SourceIndexerMirror}, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.in.Now, tt.in.Retention = now, time.Minute
			snap := readmodel.MergeListings(tt.in)
			assert.Equal(t, tt.stale, snap.StaleSources)
			assert.Equal(t, tt.allFailed, snap.AllFailed)
			assert.Len(t, snap.Rows, tt.rows)
		})
	}
}

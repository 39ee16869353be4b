package projector

import (
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel"
)

// TestRenderTokensOf: an order-book change renders exactly the tokens
// whose cheapest live native listing changed. Unchanged views would keep
// their version anyway (the store skips identical writes), so this checks
// the decision itself: what gets rendered.
func TestRenderTokensOf(t *testing.T) {
	t0 := time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)
	row := func(token, raw, market, order string, exp *time.Time) readmodel.ListingRow {
		return readmodel.ListingRow{Chain: readmodel.Ethereum, ContractAddress: "0xc0", TokenID: token, CollectionID: "ethereum_0xc0",
			PriceRaw: raw, Seller: "0xs" + token, Marketplace: market, Status: readmodel.StatusActive, Timestamp: t0.Add(-time.Hour), OrderID: order, ExpiresAt: exp}
	}
	soon := t0.Add(30 * time.Second)
	old := &rowsInput{ObservedAt: t0, Rows: []readmodel.ListingRow{
		row("1", "100", "NATIVE", "a1", nil), row("2", "200", "NATIVE", "a2", nil), row("3", "300", "NATIVE", "a3", nil),
		row("4", "400", "opensea", "x4", nil), row("6", "600", "NATIVE", "a6", &soon)}}
	tests := []struct {
		name string
		old  *rowsInput
		cur  []readmodel.ListingRow
		want []string
	}{
		{"first book: every native listing", nil, old.Rows, []string{"1", "2", "3"}},
		{"same book, later: only the one that expired meanwhile", old, old.Rows, []string{"6"}},
		{"repriced, dearer duplicate, gone, non-native, new", old, []readmodel.ListingRow{
			row("1", "100", "NATIVE", "a1", nil), row("1", "150", "NATIVE", "b1", nil), // dearer second listing: not shown
			row("2", "250", "NATIVE", "a2", nil),  // repriced
			row("4", "450", "opensea", "x4", nil), // not native: not a token view input
			row("5", "500", "NATIVE", "a5", nil),  // new; 3 and 6 are gone
		}, []string{"2", "3", "5", "6"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &applier{deferred: true}
			require.NoError(t, a.renderTokensOf(tt.old, &rowsInput{ObservedAt: t0.Add(time.Minute), Rows: tt.cur}))
			var got, want []string
			for k := range a.dirtyTok {
				got = append(got, k)
			}
			for _, id := range tt.want {
				want = append(want, readmodel.TokenKey(readmodel.Ethereum, "0xc0", id))
			}
			sort.Strings(got)
			sort.Strings(want)
			assert.Equal(t, want, got)
		})
	}
}

package httpapi

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func memoHits(h *harness) float64 {
	return testutil.ToFloat64(h.srv.memo.hits)
}

// firstItem is a page's first item, decoded.
func firstItem(t *testing.T, r result) any {
	t.Helper()
	d := data(t, r)
	require.NotEmpty(t, d, "empty page: %s", r.body)
	return d[0]
}

func decodeItem(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal(b, &v))
	return v
}

// TestPageMemo checks that a page answered from the memo is the page that
// would be built now: after each change below, the next read shows it.
func TestPageMemo(t *testing.T) {
	listings := "/v1/collections/" + testID + "/listings?limit=10"
	sales := "/v1/collections/" + testID + "/sales?limit=5"
	browse := "/v1/collections?limit=3"
	tests := []struct {
		name   string
		path   string
		setup  func(h *harness)
		change func(h *harness)
		check  func(t *testing.T, h *harness, before, after result)
	}{
		{
			name:   "listings: a new snapshot version",
			path:   listings,
			change: func(h *harness) { h.r.putListings(testID, listingsView(9, 30, nil)) },
			check: func(t *testing.T, h *harness, before, after result) {
				assert.Equal(t, "o9-0", firstItem(t, after).(map[string]any)["orderId"])
			},
		},
		{
			name: "listings: the cheapest listing expires",
			path: listings,
			setup: func(h *harness) {
				h.r.putListings(testID, listingsView(3, 30, func(i int) int64 {
					if i == 0 {
						return t0.Add(10 * time.Second).UnixMilli()
					}
					return 0
				}))
			},
			// 20 s later the cursor's minute is unchanged: only the expiry
			// changes the page.
			change: func(h *harness) { h.clock.Add(20 * time.Second) },
			check: func(t *testing.T, h *harness, before, after result) {
				assert.Equal(t, "o3-0", firstItem(t, before).(map[string]any)["orderId"])
				assert.Equal(t, "o3-1", firstItem(t, after).(map[string]any)["orderId"])
			},
		},
		{
			name:   "listings: the cursor's minute passes",
			path:   listings,
			change: func(h *harness) { h.clock.Add(time.Minute) },
			check:  checkFreshCursor(cursorListings, testID),
		},
		{
			name: "sales: a new sale",
			path: sales,
			change: func(h *harness) {
				h.r.mu.Lock()
				h.r.sales[testID] = append(h.r.sales[testID], saleItem(testID, 99))
				h.r.salesVer++
				h.r.mu.Unlock()
			},
			check: func(t *testing.T, h *harness, before, after result) {
				assert.NotEqual(t, firstItem(t, before), firstItem(t, after))
				assert.Equal(t, decodeItem(t, saleItem(testID, 99)), firstItem(t, after))
			},
		},
		{
			name:   "sales: the cursor's minute passes",
			path:   sales,
			change: func(h *harness) { h.clock.Add(time.Minute) },
			check:  checkFreshCursor(cursorSales, testID),
		},
		{
			name:   "collections: the cursor's minute passes",
			path:   browse,
			change: func(h *harness) { h.clock.Add(time.Minute) },
			check:  checkFreshCursor(cursorCollections, "volume|"),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := MustHarness(t, nil)
			if tc.setup != nil {
				tc.setup(h)
			}
			// A body is kept on its second miss and served on the third read.
			first := h.get(tc.path)
			require.Equal(t, 200, first.status, "%s", first.body)
			h.get(tc.path)
			hits := memoHits(h)
			before := h.get(tc.path)
			require.Equal(t, hits+1, memoHits(h), "the third read is answered from the memo")
			assert.Equal(t, first.body, before.body, "a remembered body is the built one")

			tc.change(h)
			after := h.get(tc.path)
			require.Equal(t, 200, after.status, "%s", after.body)
			assert.Equal(t, hits+1, memoHits(h), "after the change the page is built again")
			tc.check(t, h, before, after)
		})
	}
}

// checkFreshCursor checks that the page read after the minute passed
// carries a cursor minted then: it still verifies when the one served
// before has expired.
func checkFreshCursor(kind cursorKind, bind string) func(t *testing.T, h *harness, before, after result) {
	return func(t *testing.T, h *harness, before, after result) {
		old, _ := pagination(t, before)
		fresh, more := pagination(t, after)
		require.True(t, more)
		require.NotEqual(t, old, fresh)
		late := h.clock.Now().Add(DefaultCursorTTL)
		_, err := h.srv.cursors.parse(old, kind, bind, late)
		assert.ErrorIs(t, err, errCursorExpired)
		_, err = h.srv.cursors.parse(fresh, kind, bind, late)
		assert.NoError(t, err)
	}
}

// TestPageMemoConcurrent: readers and writers racing on the same keys (and
// on keys sharing slots) only ever get a key's own body.
func TestPageMemoConcurrent(t *testing.T) {
	m, err := newPageMemo(prometheus.NewRegistry())
	require.NoError(t, err)
	keyOf := func(i int) []byte {
		return newMemoKey(nil, cursorListings).str("collection").num(uint64(i))
	}
	bodyOf := func(i int) []byte { return []byte(fmt.Sprintf(`{"data":[%d]}`, i)) }
	const keys = 4 * memoSlots // every slot is shared by several keys
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			r := rand.New(rand.NewSource(int64(w)))
			for n := 0; n < 20000; n++ {
				i := r.Intn(keys)
				if n%2 == 0 {
					i %= 64 // a hot set, so that bodies are kept
				}
				k := keyOf(i)
				e, h := m.lookup(k, 0)
				if e != nil {
					if string(e.body) != string(bodyOf(i)) {
						t.Errorf("key %d got body %s", i, e.body)
						return
					}
					continue
				}
				m.keep(k, h, memoEntry{body: bodyOf(i)})
			}
		}(w)
	}
	wg.Wait()
	assert.Positive(t, testutil.ToFloat64(m.hits), "the hot keys were answered from the memo")
}

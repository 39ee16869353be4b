package source

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/normalize"
)

// TestWalkKeepsTheBodyUntilHandled: lazy groups point into their page's
// body, so walk gives a body's buffer back for the next pages only once
// the page's handler has returned, including when the handler fails with
// the next page already on its way.
func TestWalkKeepsTheBodyUntilHandled(t *testing.T) {
	const pages = 3
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var k int
		_, _ = fmt.Sscan(r.URL.Query().Get("cursor"), &k)
		next := ""
		if k+1 < pages {
			next = fmt.Sprint(k + 1)
		}
		fmt.Fprintf(w, `{"items":[{"collectionId":"c%d","rows":[{"tokenId":"%d"}]}],"nextCursor":%q}`, k, k, next)
	}))
	t.Cleanup(srv.Close)
	var mu sync.Mutex
	released := 0
	saved := releaseBody
	releaseBody = func(buf *bytes.Buffer) {
		mu.Lock()
		released++
		mu.Unlock()
		saved(buf)
	}
	t.Cleanup(func() { releaseBody = saved })
	releases := func() int { mu.Lock(); defer mu.Unlock(); return released }

	tests := []struct {
		name     string
		failAt   int // the page whose handler fails; -1 for none
		handled  int
		released int
	}{
		{name: "every page handled", failAt: -1, handled: pages, released: pages},
		{name: "handler fails with the next page in flight", failAt: 0, handled: 1, released: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			released = 0
			mu.Unlock()
			c := NewClient(readmodel.SourceIndexerMirror, srv.URL, 10*time.Second, srv.Client())
			handled := 0
			err := c.Listings(context.Background(), 1, func(groups []LazyGroup[normalize.RawListing]) error {
				k := handled
				handled++
				assert.Equal(t, k, releases(), "page %d: its body was given back before it was handled", k)
				require.Len(t, groups, 1)
				assert.Equal(t, fmt.Sprintf(`[{"tokenId":"%d"}]`, k), string(groups[0].Raw))
				if k == tc.failAt {
					return errors.New("handler failed")
				}
				return nil
			})
			if tc.failAt >= 0 {
				require.Error(t, err)
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, tc.handled, handled)
			assert.Equal(t, tc.released, releases(), "every body fetched goes back to the pool")
		})
	}
}

package store

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/render"
)

func putBrowse(t *testing.T, s *Store, cid string, volume float64) {
	t.Helper()
	require.NoError(t, s.Update(context.Background(), func(tx *Tx) error {
		tx.SetBrowse(cid, []BrowseEntry{{Sort: readmodel.SortVolume, Present: true, Value: volume}}, []byte(`{"id":"`+cid+`"}`))
		return nil
	}))
}

// blockPageReads makes each page read from Badger report its flight on
// the returned channel and wait for release to be closed.
func blockPageReads(s *Store) (started <-chan *pageFlight, release chan struct{}) {
	ch := make(chan *pageFlight, 16)
	release = make(chan struct{})
	s.beforePageRead = func(f *pageFlight) {
		ch <- f
		<-release
	}
	return ch, release
}

func waiters(s *Store, f *pageFlight) int {
	s.flightMu.Lock()
	defer s.flightMu.Unlock()
	return f.waiters
}

func TestConcurrentPageMissesShareOneRead(t *testing.T) {
	ctx := context.Background()
	s := mustOpen(t)
	putBrowse(t, s, "a", 2)
	putBrowse(t, s, "b", 1)
	started, release := blockPageReads(s)

	const readers = 8
	pages := make([]render.Page, readers)
	errs := make([]error, readers)
	var wg sync.WaitGroup
	for i := range readers {
		wg.Go(func() { pages[i], errs[i] = s.Browse(ctx, readmodel.SortVolume, "", "", 10) })
	}
	leader := <-started
	assert.Eventually(t, func() bool { return waiters(s, leader) == readers-1 }, 5*time.Second, time.Millisecond,
		"the other readers join the leader's read instead of starting their own")
	close(release)
	wg.Wait()
	select {
	case f := <-started:
		t.Fatalf("a second read from Badger for the same page and generation (%d waiters)", waiters(s, f))
	default:
	}
	for i := range readers {
		require.NoError(t, errs[i])
		assert.Equal(t, []string{`{"id":"a"}`, `{"id":"b"}`}, itemStrings(pages[i]), "reader %d", i)
	}
}

func TestPageReadOfAnOlderGenerationIsNotShared(t *testing.T) {
	ctx := context.Background()
	s := mustOpen(t)
	putBrowse(t, s, "a", 2)
	started, release := blockPageReads(s)

	older := browseAsync(ctx, s)
	<-started // the first read is in flight at the first generation
	s.beforePageRead = nil
	putBrowse(t, s, "b", 3) // a commit invalidates every browse page

	var fresh browseResult
	select {
	case fresh = <-browseAsync(ctx, s):
	case <-time.After(5 * time.Second):
		close(release)
		t.Fatal("a reader after the commit waited for the read in flight at the older generation")
	}
	require.NoError(t, fresh.err)
	assert.Equal(t, []string{`{"id":"b"}`, `{"id":"a"}`}, itemStrings(fresh.page),
		"a reader after the commit reads it, not the page of the read still in flight")
	close(release)
	old := <-older
	require.NoError(t, old.err)
	assert.Contains(t, itemStrings(old.page), `{"id":"a"}`)
}

type browseResult struct {
	page render.Page
	err  error
}

// browseAsync reads the first page by volume in a goroutine; its result
// arrives on the returned channel.
func browseAsync(ctx context.Context, s *Store) <-chan browseResult {
	ch := make(chan browseResult, 1)
	go func() {
		p, err := s.Browse(ctx, readmodel.SortVolume, "", "", 10)
		ch <- browseResult{p, err}
	}()
	return ch
}

func itemStrings(p render.Page) []string {
	out := make([]string, len(p.Items))
	for i, it := range p.Items {
		out[i] = string(it)
	}
	return out
}

// TestBrowseSummaryStoredOnce: a collection's summary is stored once for
// all its browse entries, every order shows it, an edit shows in each and
// changes their versions, and a collection that leaves the orders leaves
// no summary behind.
func TestBrowseSummaryStoredOnce(t *testing.T) {
	s := mustOpen(t)
	ctx := context.Background()
	set := func(cid, item string, entries ...BrowseEntry) {
		require.NoError(t, s.Update(ctx, func(tx *Tx) error {
			tx.SetBrowse(cid, entries, []byte(item))
			return nil
		}))
	}
	both := []BrowseEntry{{Sort: readmodel.SortVolume, Present: true, Value: 5}, {Sort: readmodel.SortRecent, Chain: readmodel.Base, Present: true, Value: 1}}
	set("c1", `{"id":"c1","v":1}`, both...)
	set("c2", `{"id":"c2"}`, BrowseEntry{Sort: readmodel.SortVolume, Present: true, Value: 9})
	page := func(sort readmodel.Sort, chain readmodel.Chain) render.Page {
		p, err := s.Browse(ctx, sort, chain, "", 10)
		require.NoError(t, err)
		return p
	}
	vol, recent := page(readmodel.SortVolume, ""), page(readmodel.SortRecent, readmodel.Base)
	assert.Equal(t, []string{`{"id":"c2"}`, `{"id":"c1","v":1}`}, strs(vol.Items))
	assert.Equal(t, []string{`{"id":"c1","v":1}`}, strs(recent.Items))
	count := func(prefix []byte) (n, valueBytes int) {
		require.NoError(t, s.db.View(func(txn *badger.Txn) error {
			it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
			defer it.Close()
			for it.Rewind(); it.Valid(); it.Next() {
				n++
				valueBytes += int(it.Item().ValueSize())
			}
			return nil
		}))
		return n, valueBytes
	}
	n, vb := count(pBrowse)
	assert.Equal(t, [2]int{3, 3 * 8}, [2]int{n, vb}, "entries hold the summary's hash only")
	n, _ = count(pBrowseItem)
	assert.Equal(t, 2, n, "a summary per collection")

	set("c1", `{"id":"c1","v":2}`, both...)
	vol2, recent2 := page(readmodel.SortVolume, ""), page(readmodel.SortRecent, readmodel.Base)
	assert.Equal(t, []string{`{"id":"c2"}`, `{"id":"c1","v":2}`}, strs(vol2.Items))
	assert.Equal(t, []string{`{"id":"c1","v":2}`}, strs(recent2.Items))
	assert.NotEqual(t, vol.Version, vol2.Version, "an edit changes the page's version")
	assert.NotEqual(t, recent.Version, recent2.Version)

	set("c1", `{"id":"c1","v":2}`)
	assert.Equal(t, []string{`{"id":"c2"}`}, strs(page(readmodel.SortVolume, "").Items))
	assert.Empty(t, page(readmodel.SortRecent, readmodel.Base).Items)
	n, _ = count(pBrowseItem)
	assert.Equal(t, 1, n, "a collection out of every order keeps no summary")
}

func strs(bs [][]byte) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = string(b)
	}
	return out
}

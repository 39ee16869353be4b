package store

import (
	"sync"
	"sync/atomic"

	"github.com/marketd/marketd/readmodel/render"
)

// cache is a bounded in-process cache of decoded views in front of Badger.
// Entries are immutable values shared with readers. Commits invalidate the
// keys they wrote; gen guards against a reader storing a value it read
// before a concurrent commit invalidated it.
type cache struct {
	mu        sync.RWMutex
	max       int   // entries per map
	maxBytes  int64 // approximate bytes of cached views and pages
	bytes     int64
	gen       uint64
	views     map[string]any // view key → decoded view
	sizes     map[string]int64
	resolve   map[string]string
	pages     map[string]cachedPage
	browseGen uint64
	salesGen  map[string]uint64
	// tokenGen moves (after the write) with every commit that changed a
	// token record, and with every reset (a new USD quote, a swapped
	// store): read without the lock by Store.TokensVersion.
	tokenGen atomic.Uint64
	// viewsGen moves (after the write) with every commit and every reset:
	// read without the lock by Store.ViewsVersion.
	viewsGen atomic.Uint64
}

type cachedPage struct {
	gen    uint64
	page   render.Page
	events render.EventPage // for an events page (key "e|…", family feedFamily)
	size   int64
}

func newCache(max int, maxBytes int64) *cache {
	return &cache{
		max:      max,
		maxBytes: maxBytes,
		views:    make(map[string]any),
		sizes:    make(map[string]int64),
		resolve:  make(map[string]string),
		pages:    make(map[string]cachedPage),
		salesGen: make(map[string]uint64),
	}
}

func (c *cache) get(k string) (any, uint64, bool) {
	c.mu.RLock()
	v, ok := c.views[k]
	g := c.gen
	c.mu.RUnlock()
	return v, g, ok
}

// getBytes is get of string(k), without allocating the string.
func (c *cache) getBytes(k []byte) (any, uint64, bool) {
	c.mu.RLock()
	v, ok := c.views[string(k)]
	g := c.gen
	c.mu.RUnlock()
	return v, g, ok
}

func (c *cache) put(k string, v any, gen uint64) {
	size := sizeOf(v) + int64(len(k)) + 64
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen || size > c.maxBytes/16 {
		return
	}
	for (len(c.views) >= c.max || c.bytes+size > c.maxBytes) && len(c.views)+len(c.pages) > 0 {
		c.evictSome()
	}
	c.dropView(k)
	c.views[k] = v
	c.sizes[k] = size
	c.bytes += size
}

func (c *cache) dropView(k string) {
	if _, ok := c.views[k]; ok {
		c.bytes -= c.sizes[k]
		delete(c.views, k)
		delete(c.sizes, k)
	}
}

// evictSome removes about an eighth of the views and pages (Go's map order
// is random enough for a cache whose hot set is re-filled on the next
// read).
func (c *cache) evictSome() {
	n := len(c.views)/8 + 1
	for k := range c.views {
		if n <= 0 {
			break
		}
		c.dropView(k)
		n--
	}
	n = len(c.pages)/8 + 1
	for k, p := range c.pages {
		if n <= 0 {
			break
		}
		c.bytes -= p.size
		delete(c.pages, k)
		n--
	}
}

// sizeOf approximates the bytes a cached view holds.
func sizeOf(v any) int64 {
	var n int64
	switch x := v.(type) {
	case render.CollectionView:
		n = int64(len(x.ID) + len(x.Detail))
	case render.FloorView:
		n = int64(len(x.Body.Head) + len(x.Body.Tail) + len(x.Fallback.Head) + len(x.Fallback.Tail))
	case render.ViewValue:
		n = x.Size
	case cachedToken:
		n = int64(len(x.view.Body.Head) + len(x.view.Body.Tail))
	case *natives:
		n = x.size
	case render.ListingsView:
		for _, it := range x.Items {
			n += int64(len(it)) + 32
		}
	case render.Page:
		for _, it := range x.Items {
			n += int64(len(it)) + 24
		}
		n += int64(len(x.Next))
	}
	return n + 64
}

func (c *cache) getResolve(id string) (string, uint64, bool) {
	c.mu.RLock()
	v, ok := c.resolve[id]
	g := c.gen
	c.mu.RUnlock()
	return v, g, ok
}

func (c *cache) putResolve(id, cid string, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return
	}
	if len(c.resolve) >= c.max {
		evict(c.resolve, c.max/8+1)
	}
	c.resolve[id] = cid
}

// pageGen returns the generation a page under family must match.
func (c *cache) pageGen(salesOf string) uint64 {
	if salesOf == "" {
		return c.browseGen
	}
	return c.salesGen[salesOf]
}

func (c *cache) getPage(k, salesOf string) (render.Page, uint64, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	g := c.pageGen(salesOf)
	p, ok := c.pages[k]
	if !ok || p.gen != g {
		return render.Page{}, g, false
	}
	return p.page, g, true
}

func (c *cache) putPage(k, salesOf string, gen uint64, p render.Page) {
	c.putCachedPage(k, salesOf, gen, cachedPage{page: p, size: sizeOf(p) + int64(len(k))})
}

// feedFamily is the page family of collection cid's change feed: the
// generation AppendEvents moves (through Tx.sales).
func feedFamily(cid string) string { return "e|" + cid }

// getEventPage is getPage of the feed page under key k of collection
// cid; neither is copied.
func (c *cache) getEventPage(k []byte, cid string) (render.EventPage, uint64, bool) {
	var fb [192]byte
	family := append(append(fb[:0], "e|"...), cid...) // feedFamily(cid), on the stack
	c.mu.RLock()
	defer c.mu.RUnlock()
	g := c.salesGen[string(family)]
	p, ok := c.pages[string(k)]
	if !ok || p.gen != g {
		return render.EventPage{}, g, false
	}
	return p.events, g, true
}

func (c *cache) putEventPage(k, cid string, gen uint64, p render.EventPage) {
	size := int64(len(k)+len(p.LastID)) + 64
	for _, it := range p.Items {
		size += int64(len(it)) + 24
	}
	c.putCachedPage(k, feedFamily(cid), gen, cachedPage{events: p, size: size})
}

func (c *cache) putCachedPage(k, family string, gen uint64, p cachedPage) {
	c.mu.Lock()
	defer c.mu.Unlock()
	size := p.size
	if gen != c.pageGen(family) || size > c.maxBytes/16 {
		return
	}
	for (len(c.pages) >= c.max || c.bytes+size > c.maxBytes) && len(c.views)+len(c.pages) > 0 {
		c.evictSome()
	}
	if old, ok := c.pages[k]; ok {
		c.bytes -= old.size
	}
	p.gen = gen
	c.pages[k] = p
	c.bytes += size
}

// invalidate drops what a commit wrote; tokens says it changed token
// records.
func (c *cache) invalidate(keys []string, aliases, browse, tokens bool, sales []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.viewsGen.Add(1)
	if tokens {
		c.tokenGen.Add(1)
	}
	for _, k := range keys {
		c.dropView(k)
	}
	if aliases {
		clear(c.resolve)
	}
	if browse {
		c.browseGen++
	}
	for _, s := range sales {
		c.salesGen[s]++
	}
}

func (c *cache) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.tokenGen.Add(1)
	c.viewsGen.Add(1)
	c.browseGen++
	clear(c.views)
	clear(c.sizes)
	clear(c.resolve)
	clear(c.pages)
	c.bytes = 0
	for k := range c.salesGen {
		c.salesGen[k]++
	}
}

// evict removes n arbitrary entries (Go's map order is random enough for a
// cache whose hot set is re-filled on the next read).
func evict[V any](m map[string]V, n int) {
	for k := range m {
		if n <= 0 {
			return
		}
		delete(m, k)
		n--
	}
}

// stats reports the cache's entry count (views, pages and resolved ids) and
// approximate bytes.
func (c *cache) stats() (entries int, bytes int64) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.views) + len(c.pages) + len(c.resolve), c.bytes
}

package store

import (
	"sync"

	"github.com/marketd/marketd/readmodel"
)

// cache is a bounded in-process cache of decoded views in front of Badger.
// Entries are immutable values shared with readers. Commits invalidate the
// keys they wrote; gen guards against a reader storing a value it read
// before a concurrent commit invalidated it.
type cache struct {
	mu        sync.RWMutex
	max       int
	gen       uint64
	views     map[string]any // view key → decoded view
	resolve   map[string]string
	pages     map[string]cachedPage
	browseGen uint64
	salesGen  map[string]uint64
}

type cachedPage struct {
	gen  uint64
	page readmodel.Page
}

func newCache(max int) *cache {
	return &cache{
		max:      max,
		views:    make(map[string]any),
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

func (c *cache) put(k string, v any, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return
	}
	if len(c.views) >= c.max {
		evict(c.views, c.max/8+1)
	}
	c.views[k] = v
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

func (c *cache) getPage(k, salesOf string) (readmodel.Page, uint64, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	g := c.pageGen(salesOf)
	p, ok := c.pages[k]
	if !ok || p.gen != g {
		return readmodel.Page{}, g, false
	}
	return p.page, g, true
}

func (c *cache) putPage(k, salesOf string, gen uint64, p readmodel.Page) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.pageGen(salesOf) {
		return
	}
	if len(c.pages) >= c.max {
		evict(c.pages, c.max/8+1)
	}
	c.pages[k] = cachedPage{gen: gen, page: p}
}

// invalidate drops what a commit wrote.
func (c *cache) invalidate(keys []string, aliases, browse bool, sales []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	for _, k := range keys {
		delete(c.views, k)
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
	c.browseGen++
	clear(c.views)
	clear(c.resolve)
	clear(c.pages)
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

package ingest

import (
	"context"
	"hash/fnv"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/marketd/marketd/ingest/source"
	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/normalize"
)

// cycle is one run's working state. Its pending maps are recorded on the
// Ingest only after a successful Flush.
type cycle struct {
	in    *Ingest
	start time.Time
	ns    string
	known map[string]bool // collections of this cycle; nil = unknown
	colls []collInfo

	pubMu sync.Mutex // serializes Publish calls

	mu         sync.Mutex // guards everything below
	sum        Summary
	hashes     map[hkey][16]byte
	attempted  []hkey
	status     map[hkey]statusState
	newColls   []collInfo
	collsOK    bool
	tokWM      string
	tokOK      bool
	buckets    map[hkey]int
	listMemos  map[hkey]listingsMemo
	salesAt    string
	salesMoved bool
	pubErr     error
}

func (in *Ingest) run(ctx context.Context, set map[readmodel.Source]bool) (Summary, error) {
	in.cycleMu.Lock()
	defer in.cycleMu.Unlock()
	start := in.now().UTC()
	// Message IDs must differ between cycles even under a frozen clock, or
	// the bus would drop a later cycle's messages as duplicates.
	ns := max(start.UnixNano(), in.lastNS+1)
	in.lastNS = ns
	c := &cycle{in: in, start: start, ns: strconv.FormatInt(ns, 10),
		sum:    Summary{Start: start, Sources: map[string]*SourceSummary{}},
		hashes: map[hkey][16]byte{}, status: map[hkey]statusState{}, buckets: map[hkey]int{}, listMemos: map[hkey]listingsMemo{}}
	if err := ctx.Err(); err != nil {
		return c.sum, readmodel.Wrap(readmodel.Internal, err, "ingest: cycle not started")
	}
	if in.colls == nil {
		set[readmodel.SourceCollectionIndex] = true // the list drives the rest
	}
	var wg sync.WaitGroup
	goIf := func(s readmodel.Source, f func(context.Context)) {
		if set[s] {
			wg.Add(1)
			go func() { defer wg.Done(); f(ctx) }()
		}
	}
	goIf(readmodel.SourceCollectionIndex, c.pollCollections)
	goIf(readmodel.SourcePriceFeed, c.pollRates)
	wg.Wait()
	c.colls = in.colls
	if c.collsOK {
		c.colls = c.newColls
	}
	if c.colls != nil {
		c.known = make(map[string]bool, len(c.colls))
		for _, ci := range c.colls {
			c.known[ci.id] = true
		}
	}
	goIf(readmodel.SourceOrderBook, func(ctx context.Context) { c.pollListings(ctx, readmodel.SourceOrderBook) })
	goIf(readmodel.SourceIndexerMirror, func(ctx context.Context) { c.pollListings(ctx, readmodel.SourceIndexerMirror) })
	goIf(readmodel.SourceIndexerMirror, c.pollTokens)
	goIf(readmodel.SourceIndexerStats, c.pollStats)
	goIf(readmodel.SourceAnalytics, c.pollAnalytics)
	goIf(readmodel.SourceSales, c.pollSales)
	wg.Wait()

	if c.pubErr != nil {
		in.forget(c.attempted)
		return c.sum, readmodel.Wrap(readmodel.Internal, c.pubErr, "ingest: publish failed")
	}
	if err := ctx.Err(); err != nil {
		in.forget(c.attempted)
		return c.sum, readmodel.Wrap(readmodel.Internal, err, "ingest: cycle cancelled")
	}
	pos, err := in.pub.Flush(ctx)
	if err != nil {
		in.forget(c.attempted)
		return c.sum, readmodel.Wrap(readmodel.Internal, err, "ingest: flush failed")
	}
	for k, h := range c.hashes {
		in.hashes[k] = h
	}
	for k, s := range c.status {
		in.status[k] = s
	}
	for k, n := range c.buckets {
		in.buckets[k] = n
	}
	for k, m := range c.listMemos {
		in.listMemos[k] = m
	}
	if c.collsOK {
		in.colls = c.newColls
	}
	if c.tokOK {
		in.tokWM = c.tokWM
	}
	if c.salesMoved {
		in.salesAt = c.salesAt
	}
	c.sum.End = in.now().UTC()
	c.sum.Position = pos
	in.stats.add(&c.sum)
	return c.sum, nil
}

// forget drops the recorded hashes of subjects whose publish may or may
// not have reached the bus, so the next cycle publishes them again.
func (in *Ingest) forget(keys []hkey) {
	for _, k := range keys {
		delete(in.hashes, k)
	}
}

func (c *cycle) src(key string) *SourceSummary {
	s := c.sum.Sources[key]
	if s == nil {
		s = &SourceSummary{}
		c.sum.Sources[key] = s
	}
	return s
}

func (c *cycle) reject(key string, err error, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.src(key)
	if s.Rejected == nil {
		s.Rejected = map[string]int{}
	}
	s.Rejected[string(normalize.ReasonOf(err))] += n
}

func (c *cycle) rejectAll(key string, errs []error) {
	for _, err := range errs {
		c.reject(key, err, 1)
	}
}

func (c *cycle) accept(key string, n int) {
	c.mu.Lock()
	c.src(key).RowsAccepted += n
	c.mu.Unlock()
}

// pollDone records a poll's outcome. It reports false when the cycle was
// cancelled or already failed to publish (then nothing more should be
// published).
func (c *cycle) pollDone(ctx context.Context, key string, err error, began time.Time) bool {
	if ctx.Err() != nil {
		return false // the cycle was cancelled: not the upstream's failure
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pubErr != nil {
		return false
	}
	s := c.src(key)
	s.TookMS = time.Since(began).Milliseconds()
	if err != nil {
		s.PollsFailed++
		s.ErrorClass = source.ErrorClass(err)
	} else {
		s.PollsOK++
	}
	return true
}

func (c *cycle) failed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pubErr != nil
}

func subject(m *readmodel.Message) hkey {
	return keyOf(string(m.Kind) + "/" + string(m.Source) + "/" + m.CollectionID + "/" + strconv.FormatUint(uint64(m.Bucket), 10))
}

// offer publishes msg unless its content hash h equals the hash of the
// last flushed publish of its subject.
func (c *cycle) offer(ctx context.Context, key string, msg *readmodel.Message, h [16]byte) error {
	subj := subject(msg)
	if old, ok := c.in.hashes[subj]; ok && old == h {
		c.unchanged(key)
		return nil
	}
	return c.publish(ctx, key, msg, subj, &h)
}

// publish sends msg with its ID and observation time set.
func (c *cycle) publish(ctx context.Context, key string, msg *readmodel.Message, subj hkey, h *[16]byte) error {
	msg.ID = c.ns + "/" + string(msg.Kind) + "/" + string(msg.Source) + "/" + msg.CollectionID + "/" + strconv.FormatUint(uint64(msg.Bucket), 10)
	msg.ObservedAt = c.start
	c.mu.Lock()
	if c.pubErr != nil {
		err := c.pubErr
		c.mu.Unlock()
		return err
	}
	if h != nil {
		c.attempted = append(c.attempted, subj)
	}
	c.mu.Unlock()
	c.pubMu.Lock()
	err := c.in.pub.Publish(ctx, msg)
	c.pubMu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		if c.pubErr == nil {
			c.pubErr = err
		}
		return err
	}
	if h != nil {
		c.hashes[subj] = *h
	}
	c.src(key).Published++
	c.sum.Published++
	return nil
}

// setStatus records the poll outcome of (src, coll) and publishes it on the
// first cycle after start and whenever (ok, errorClass) changes.
func (c *cycle) setStatus(ctx context.Context, src readmodel.Source, coll string, pollErr error) error {
	sk := keyOf(string(src) + "|" + coll)
	prev, had := c.in.status[sk]
	class := source.ErrorClass(pollErr)
	st := statusState{ok: pollErr == nil, class: classIndex(class)}
	start := unixNano(c.start)
	if st.ok {
		st.lastGoodAt = start
	} else {
		st.lastGoodAt = prev.lastGoodAt
		st.failingSince = start
		if had && !prev.ok {
			st.failingSince = prev.failingSince
		}
	}
	c.mu.Lock()
	c.status[sk] = st
	c.mu.Unlock()
	if had && prev.ok == st.ok && prev.class == st.class {
		return nil
	}
	msg := &readmodel.Message{Kind: readmodel.KindStatus, Source: src, CollectionID: coll, Status: &readmodel.PollStatus{
		OK: st.ok, ErrorClass: errorClasses[st.class], LastGoodAt: fromUnixNano(st.lastGoodAt), FailingSince: fromUnixNano(st.failingSince)}}
	return c.publish(ctx, string(src), msg, hkey{}, nil)
}

func (c *cycle) pollCollections(ctx context.Context) {
	began := time.Now()
	src := readmodel.SourceCollectionIndex
	key := string(src)
	var list []collInfo
	seen := map[string]bool{}
	err := c.in.clients[src].Collections(ctx, c.in.cfg.PageLimit, func(page source.Rows[normalize.RawCollection]) error {
		c.rejectAll(key, page.Rejects)
		for _, rc := range page.Rows {
			d, err := normalize.Collection(rc)
			if err != nil {
				c.reject(key, err, 1)
				continue
			}
			if seen[d.ID] {
				c.reject(key, &normalize.RejectError{Reason: normalize.RejectBadField, Field: "id", Detail: "duplicate"}, 1)
				continue
			}
			seen[d.ID] = true
			c.accept(key, 1)
			list = append(list, collInfo{id: d.ID, hasContract: d.ContractAddress != ""})
			msg := &readmodel.Message{Kind: readmodel.KindCollection, Source: src, CollectionID: d.ID, Collection: &d}
			if err := c.offer(ctx, key, msg, contentHash(&d)); err != nil {
				return err
			}
		}
		return nil
	})
	if !c.pollDone(ctx, key, err, began) {
		return
	}
	if err == nil {
		c.mu.Lock()
		c.newColls, c.collsOK = list, true
		if c.newColls == nil {
			c.newColls = []collInfo{}
		}
		c.mu.Unlock()
	}
	_ = c.setStatus(ctx, src, "", err)
}

func (c *cycle) pollRates(ctx context.Context) {
	began := time.Now()
	src := readmodel.SourcePriceFeed
	key := string(src)
	rates, bad, err := c.in.clients[src].Rates(ctx)
	if err == nil {
		norm, rejected := normalize.Rates(rates)
		if n := len(bad) + len(rejected); n > 0 {
			c.reject(key, &normalize.RejectError{Reason: normalize.RejectBadPrice, Field: "rates"}, n)
		}
		c.accept(key, len(norm))
		msg := &readmodel.Message{Kind: readmodel.KindRates, Source: src, Rates: norm}
		if perr := c.offer(ctx, key, msg, contentHash(norm)); perr != nil {
			return
		}
	}
	if !c.pollDone(ctx, key, err, began) {
		return
	}
	_ = c.setStatus(ctx, src, "", err)
}

// groupID validates a group's collection id against this cycle's list;
// n() rows are rejected with the reason when it fails.
func (c *cycle) groupID(key, raw string, n func() int) (string, bool) {
	id, err := normalize.CollectionID(raw)
	if err == nil && c.known != nil && !c.known[id] {
		err = &normalize.RejectError{Reason: normalize.RejectUnknownCollect, Field: "collectionId"}
	}
	if err != nil {
		c.reject(key, err, max(n(), 1))
		return "", false
	}
	return id, true
}

// finish publishes, for every listed collection the poll did not deliver,
// either ok with emptyFn (complete poll) or a failure status.
func (c *cycle) finish(ctx context.Context, src readmodel.Source, seen map[string]bool, pollErr error, emptyFn func(id string) error) {
	for _, ci := range c.colls {
		if seen[ci.id] {
			continue
		}
		if pollErr == nil && emptyFn != nil {
			if emptyFn(ci.id) != nil {
				return
			}
		}
		if c.setStatus(ctx, src, ci.id, pollErr) != nil {
			return
		}
	}
}

func lessRaw(a, b string) int {
	if len(a) != len(b) {
		if len(a) < len(b) {
			return -1
		}
		return 1
	}
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func sortListings(rows []readmodel.ListingRow) {
	sort.SliceStable(rows, func(i, j int) bool {
		if d := lessRaw(rows[i].PriceRaw, rows[j].PriceRaw); d != 0 {
			return d < 0
		}
		if rows[i].OrderID != rows[j].OrderID {
			return rows[i].OrderID < rows[j].OrderID
		}
		return rows[i].AssetKey() < rows[j].AssetKey()
	})
}

func (c *cycle) publishListings(ctx context.Context, src readmodel.Source, id string, rows []readmodel.ListingRow, pollTime time.Time) error {
	msg := &readmodel.Message{Kind: readmodel.KindListings, Source: src, CollectionID: id, Listings: rows}
	return c.offer(ctx, string(src), msg, hashListings(rows, pollTime))
}

// listingsMemo remembers what one collection's listing rows, as an
// upstream sent them, came to on the poll that last decoded them: the hash
// of the raw rows, the content hash of the normalized rows, how many were
// kept and the earliest expiry among them (unix nanoseconds, 0 = none
// expires). Pointer-free, like Ingest's other maps.
type listingsMemo struct {
	raw, content [16]byte
	minExp       int64
	n            int32
}

// unchangedListings reports whether a group whose raw rows hash to raw
// would normalize, at now, to what the last recorded publish of subj holds.
// It holds when the upstream sent the same bytes as on the poll memo was
// taken from (which rejected no row), no row has expired since, and that
// poll's rows are still the subject's last recorded publish. Normalization
// depends on nothing else: a row's time-of-poll default timestamp is left
// out of the content hash.
func (c *cycle) unchangedListings(subj hkey, raw [16]byte, now time.Time) (listingsMemo, bool) {
	m, ok := c.in.listMemos[subj]
	if !ok || m.raw != raw || (m.minExp != 0 && m.minExp <= now.UnixNano()) {
		return m, false
	}
	h, ok := c.in.hashes[subj]
	return m, ok && h == m.content
}

func (c *cycle) unchanged(key string) {
	c.mu.Lock()
	c.src(key).Unchanged++
	c.sum.Unchanged++
	c.mu.Unlock()
}

// listingsGroup normalizes, and publishes if changed, one collection's
// listing rows from src. Most collections' rows do not change between
// polls (83–91% of them per source in a steady cycle at 100,000
// collections): their groups are recognized by their bytes
// (unchangedListings) and neither decoded nor normalized, which were
// most of a listings poll's CPU.
func (c *cycle) listingsGroup(ctx context.Context, src readmodel.Source, key string, keep int, id string, g source.LazyGroup[normalize.RawListing], now time.Time) error {
	msg := &readmodel.Message{Kind: readmodel.KindListings, Source: src, CollectionID: id}
	subj := subject(msg)
	raw := sum16(g.Raw)
	if m, ok := c.unchangedListings(subj, raw, now); ok {
		c.accept(key, int(m.n))
		c.unchanged(key)
		return nil
	}
	raws, rejects := g.Decode()
	c.rejectAll(key, rejects)
	clean := len(rejects) == 0
	rows := make([]readmodel.ListingRow, 0, len(raws))
	var minExp int64
	for i := range raws {
		r, err := normalize.Listing(src, raws[i], now)
		if err != nil {
			c.reject(key, err, 1)
			clean = false
			continue
		}
		r.CollectionID = id
		if r.ExpiresAt != nil {
			if e := r.ExpiresAt.UnixNano(); minExp == 0 || e < minExp {
				minExp = e
			}
		}
		rows = append(rows, r)
	}
	sortListings(rows)
	if len(rows) > keep {
		rows = rows[:keep]
	}
	c.accept(key, len(rows))
	msg.Listings = rows
	h := hashListings(rows, now)
	if err := c.offer(ctx, key, msg, h); err != nil {
		return err
	}
	if clean {
		c.mu.Lock()
		c.listMemos[subj] = listingsMemo{raw: raw, content: h, minExp: minExp, n: int32(len(rows))}
		c.mu.Unlock()
	}
	return nil
}

func (c *cycle) pollListings(ctx context.Context, src readmodel.Source) {
	began := time.Now()
	key := string(src)
	keep := readmodel.OrderBookMax
	if src == readmodel.SourceIndexerMirror {
		keep = MirrorKeep
	}
	seen := map[string]bool{}
	err := c.in.clients[src].Listings(ctx, c.in.cfg.PageLimit, func(groups []source.LazyGroup[normalize.RawListing]) error {
		now := c.in.now().UTC()
		for _, g := range groups {
			id, ok := c.groupID(key, g.CollectionID, func() int { rows, rejects := g.Decode(); return len(rows) + len(rejects) })
			if !ok || seen[id] {
				continue
			}
			seen[id] = true
			if err := c.listingsGroup(ctx, src, key, keep, id, g, now); err != nil {
				return err
			}
			if err := c.setStatus(ctx, src, id, nil); err != nil {
				return err
			}
		}
		return nil
	})
	if !c.pollDone(ctx, key, err, began) {
		return
	}
	now := c.in.now().UTC()
	c.finish(ctx, src, seen, err, func(id string) error { return c.publishListings(ctx, src, id, nil, now) })
}

// BucketCount is how many token buckets a collection of n tokens uses: a
// power of two keeping buckets near 128 tokens (at most about 256).
func BucketCount(n int) int {
	b := 1
	for b*128 < n {
		b *= 2
	}
	return b
}

// TokenBucket is the stable bucket of a token key (readmodel.TokenKey)
// among n buckets.
func TokenBucket(tokenKey string, n int) uint32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(tokenKey))
	return h.Sum32() % uint32(max(n, 1))
}

func (c *cycle) pollTokens(ctx context.Context) {
	began := time.Now()
	src := readmodel.SourceIndexerMirror
	key := TokensPoll
	wm, err := c.in.clients[src].Tokens(ctx, c.in.tokWM, c.in.cfg.PageLimit, func(groups []source.RowsGroup[normalize.RawToken]) error {
		now := c.in.now().UTC()
		for _, g := range groups {
			id, ok := c.groupID(key, g.CollectionID, func() int { return len(g.Rows) + len(g.Rejects) })
			if !ok {
				continue
			}
			c.rejectAll(key, g.Rejects)
			docs := make([]readmodel.TokenDoc, 0, len(g.Rows))
			for i := range g.Rows {
				d, err := normalize.Token(g.Rows[i], now)
				if err != nil {
					c.reject(key, err, 1)
					continue
				}
				d.CollectionID = id
				if d.Overlay != nil {
					d.Overlay.CollectionID = id
				}
				docs = append(docs, d)
			}
			c.accept(key, len(docs))
			nb := BucketCount(len(docs))
			buckets := make([][]readmodel.TokenDoc, nb)
			for _, d := range docs {
				b := TokenBucket(readmodel.TokenKey(d.Chain, d.ContractAddress, d.TokenID), nb)
				buckets[b] = append(buckets[b], d)
			}
			ck := keyOf(id)
			prev := c.in.buckets[ck]
			for b := 0; b < max(nb, prev); b++ {
				var toks []readmodel.TokenDoc
				if b < nb {
					toks = buckets[b]
					sort.Slice(toks, func(i, j int) bool { return toks[i].TokenID < toks[j].TokenID })
				}
				msg := &readmodel.Message{Kind: readmodel.KindTokens, Source: src, CollectionID: id, Bucket: uint32(b), Buckets: uint32(nb), Tokens: toks}
				if err := c.offer(ctx, key, msg, hashTokens(toks, nb, now)); err != nil {
					return err
				}
			}
			c.mu.Lock()
			c.buckets[ck] = nb
			c.mu.Unlock()
		}
		return nil
	})
	if !c.pollDone(ctx, key, err, began) {
		return
	}
	if err == nil {
		c.mu.Lock()
		c.tokWM, c.tokOK = wm, true
		c.mu.Unlock()
	}
}

// pollFlat polls a flat per-collection endpoint (indexer-stats, analytics):
// walk delivers pages, build normalizes one row into (collection id,
// message, content hash).
func pollFlat[R any](ctx context.Context, c *cycle, src readmodel.Source,
	walk func(context.Context, int, func(source.Rows[R]) error) error,
	build func(r *R) (string, *readmodel.Message, [16]byte, error)) {
	began := time.Now()
	key := string(src)
	seen := map[string]bool{}
	err := walk(ctx, c.in.cfg.PageLimit, func(page source.Rows[R]) error {
		c.rejectAll(key, page.Rejects)
		for i := range page.Rows {
			rawID, msg, h, err := build(&page.Rows[i])
			if err != nil {
				c.reject(key, err, 1)
				continue
			}
			id, ok := c.groupID(key, rawID, func() int { return 1 })
			if !ok || seen[id] {
				continue
			}
			seen[id] = true
			c.accept(key, 1)
			msg.Source, msg.CollectionID = src, id
			if err := c.offer(ctx, key, msg, h); err != nil {
				return err
			}
			if err := c.setStatus(ctx, src, id, nil); err != nil {
				return err
			}
		}
		return nil
	})
	if !c.pollDone(ctx, key, err, began) {
		return
	}
	c.finish(ctx, src, seen, err, nil)
}

func (c *cycle) pollStats(ctx context.Context) {
	pollFlat(ctx, c, readmodel.SourceIndexerStats, c.in.clients[readmodel.SourceIndexerStats].Stats,
		func(rs *normalize.RawStats) (string, *readmodel.Message, [16]byte, error) {
			id, st, err := normalize.Stats(*rs)
			if err != nil {
				return "", nil, [16]byte{}, err
			}
			return id, &readmodel.Message{Kind: readmodel.KindStats, Stats: &st}, contentHash(&st), nil
		})
}

func (c *cycle) pollAnalytics(ctx context.Context) {
	pollFlat(ctx, c, readmodel.SourceAnalytics, c.in.clients[readmodel.SourceAnalytics].Analytics,
		func(ra *normalize.RawAnalytics) (string, *readmodel.Message, [16]byte, error) {
			id, a, err := normalize.Analytics(*ra)
			if err != nil {
				return "", nil, [16]byte{}, err
			}
			return id, &readmodel.Message{Kind: readmodel.KindAnalytics, Analytics: &a}, contentHash(&a), nil
		})
}

func (c *cycle) pollSales(ctx context.Context) {
	began := time.Now()
	src := readmodel.SourceSales
	key := string(src)
	batch := uint32(0)
	next, err := c.in.clients[src].Sales(ctx, c.in.salesAt, c.in.cfg.PageLimit, func(page source.Rows[normalize.RawSale], _ string) error {
		by := map[string][]readmodel.SaleRow{}
		var order []string
		c.rejectAll(key, page.Rejects)
		for i := range page.Rows {
			s, err := normalize.Sale(page.Rows[i])
			if err != nil {
				c.reject(key, err, 1)
				continue
			}
			if c.known != nil && !c.known[s.CollectionID] {
				c.reject(key, &normalize.RejectError{Reason: normalize.RejectUnknownCollect, Field: "collectionId"}, 1)
				continue
			}
			if _, ok := by[s.CollectionID]; !ok {
				order = append(order, s.CollectionID)
			}
			by[s.CollectionID] = append(by[s.CollectionID], s)
		}
		for _, id := range order {
			rows := by[id]
			c.accept(key, len(rows))
			for len(rows) > 0 {
				n := min(len(rows), SalesBatch)
				batch++
				msg := &readmodel.Message{Kind: readmodel.KindSales, Source: src, CollectionID: id, Bucket: batch, Sales: rows[:n]}
				if err := c.publish(ctx, key, msg, subject(msg), nil); err != nil {
					return err
				}
				rows = rows[n:]
			}
		}
		return nil
	})
	if !c.pollDone(ctx, key, err, began) {
		return
	}
	c.mu.Lock()
	if next != c.in.salesAt {
		c.salesAt, c.salesMoved = next, true
	}
	c.mu.Unlock()
	_ = c.setStatus(ctx, src, "", err)
}

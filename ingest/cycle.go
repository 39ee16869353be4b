package ingest

import (
	"context"
	"maps"
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
	colls []string

	pubMu sync.Mutex // serializes Publish calls

	mu        sync.Mutex // guards everything below
	sum       Summary
	hashes    map[hkey][16]byte
	attempted []hkey
	status    map[hkey]statusState
	polledAt  map[string]int64
	newColls  []string
	collsOK   bool
	marks     map[string]string
	parts     map[hkey]int
	listMemos map[hkey]listingsMemo
	pubErr    error
}

func (in *Ingest) run(ctx context.Context, set map[readmodel.Source]bool) (Summary, error) {
	in.cycleMu.Lock()
	defer in.cycleMu.Unlock()
	if in.cfg.Busy != nil {
		defer in.cfg.Busy()()
	}
	start := in.now().UTC()
	// Message IDs must differ between cycles even under a frozen clock, or
	// the bus would drop a later cycle's messages as duplicates.
	ns := max(start.UnixNano(), in.lastNS+1)
	in.lastNS = ns
	c := &cycle{in: in, start: start, ns: strconv.FormatInt(ns, 10),
		sum:    Summary{Start: start, Sources: map[string]*SourceSummary{}},
		hashes: map[hkey][16]byte{}, status: map[hkey]statusState{}, polledAt: map[string]int64{}, marks: map[string]string{},
		parts: map[hkey]int{}, listMemos: map[hkey]listingsMemo{}}
	if in.resumeDue && !in.full {
		in.resume(ctx, c)
	}
	in.beginFull(c, set)
	if err := ctx.Err(); err != nil {
		return c.sum, readmodel.Wrap(readmodel.Internal, err, "ingest: cycle not started")
	}
	if in.colls == nil {
		for _, p := range in.pollers {
			if sp := p.Spec(); sp.Collections == source.Lists {
				set[sp.Source] = true // the list drives the rest
			}
		}
	}
	// The first polls (collection list, rates), then the others.
	for _, first := range []bool{true, false} {
		var wg sync.WaitGroup
		for _, p := range in.pollers {
			if sp := p.Spec(); sp.First == first && set[sp.Source] {
				wg.Add(1)
				go func() { defer wg.Done(); c.poll(ctx, p, sp) }()
			}
		}
		wg.Wait()
		if first {
			c.colls = in.colls
			if c.collsOK {
				c.colls = c.newColls
			}
			if c.colls != nil {
				c.known = make(map[string]bool, len(c.colls))
				for _, id := range c.colls {
					c.known[id] = true
				}
			}
		}
	}

	if c.pubErr != nil {
		in.forget(c.attempted)
		return c.sum, readmodel.Wrap(readmodel.Internal, c.pubErr, "ingest: publish failed")
	}
	if err := ctx.Err(); err != nil {
		in.forget(c.attempted)
		return c.sum, readmodel.Wrap(readmodel.Internal, err, "ingest: cycle cancelled")
	}
	if err := c.endFull(ctx); err != nil {
		in.forget(c.attempted)
		return c.sum, readmodel.Wrap(readmodel.Internal, err, "ingest: publish the full cycle's end")
	}
	pos, err := in.pub.Flush(ctx)
	if err != nil {
		in.forget(c.attempted)
		return c.sum, readmodel.Wrap(readmodel.Internal, err, "ingest: flush failed")
	}
	if c.sum.Full {
		in.full, in.resumeDue = false, false // it published everything: nothing left to learn
	}
	for k, h := range c.hashes {
		in.hashes[k] = h
	}
	for k, s := range c.status {
		in.status[k] = s
	}
	maps.Copy(in.polled, c.polledAt)
	for k, n := range c.parts {
		in.parts[k] = n
	}
	for k, m := range c.listMemos {
		in.listMemos[k] = m
	}
	if c.collsOK {
		in.colls = c.newColls
	}
	// The marks as they were after the cycle before: what they cover was
	// acknowledged a cycle ago (see resume.go).
	prev := maps.Clone(in.marks)
	for k, m := range c.marks {
		in.marks[k] = m
	}
	if in.cfg.Marks != nil {
		if err := in.cfg.Marks.SaveMarks(ctx, prev); err != nil {
			c.sum.MarksError = err.Error()
		}
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

func subject(m *readmodel.Message) hkey {
	return subjectOf(m.Kind, m.Source, m.CollectionID, m.Bucket)
}

func subjectOf(kind readmodel.Kind, src readmodel.Source, coll string, bucket uint32) hkey {
	return keyOf(string(kind) + "/" + string(src) + "/" + coll + "/" + strconv.FormatUint(uint64(bucket), 10))
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

// setStatus records the outcome of poll sp for (sp.Source, coll) and
// publishes it when (ok, errorClass) changes; sent says that a message of
// the collection's rows from sp went out in this cycle.
//
// A collection with no status recorded is healthy since its poll's last
// success (Ingest.polled): healthy collections carry no status on the
// bus, only failures and the recoveries after them. At 100,000
// collections a status per (source, collection) was a third of a first
// cycle's messages and 40 % of the state stream's subjects, each held in
// the NATS server's memory and read back by every replay. A source-wide
// status (coll "") is published on the first cycle after start, as
// before. A full cycle publishes every status again but a healthy one
// whose collection's rows it sent: a node that lost the recovery of a
// failure (a damaged or purged stream) is healed by those rows
// (projector: renderHealed).
func (c *cycle) setStatus(ctx context.Context, sp source.Spec, coll string, pollErr error, sent bool) error {
	src := sp.Source
	sk := statusKey(src, coll)
	prev, had := c.in.status[sk]
	if !had && coll != "" {
		prev, had = statusState{ok: true, lastGoodAt: c.in.polled[sp.Name]}, true
	}
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
	changed := !had || prev.ok != st.ok || prev.class != st.class
	if !changed && (!c.sum.Full || (coll != "" && st.ok && sent)) {
		return nil
	}
	msg := &readmodel.Message{Kind: readmodel.KindStatus, Source: src, CollectionID: coll, Status: st.pollStatus()}
	return c.publish(ctx, string(src), msg, hkey{}, nil)
}

func (c *cycle) unchanged(key string) {
	c.mu.Lock()
	c.src(key).Unchanged++
	c.sum.Unchanged++
	c.mu.Unlock()
}

// poll runs one poller and records its outcome: the collection list, its
// mark, its statuses.
func (c *cycle) poll(ctx context.Context, p Poller, sp source.Spec) {
	began := time.Now()
	pr := &pollRun{c: c, ctx: ctx, spec: sp, key: sp.Name}
	if sp.Status == source.PerCollection {
		pr.seen = map[string]bool{}
	}
	// Every page is normalized as of the cycle's start, the messages'
	// ObservedAt: a time-less listing row is stamped with it, so the
	// content hash of a subject (which leaves that stamp out) can be
	// computed again from its message on the bus (resume.go).
	req := source.Request{Limit: c.in.cfg.PageLimit, Mark: c.in.marks[sp.Name], Now: c.start}
	mark, err := p.Poll(ctx, req, pr)
	if !c.pollDone(ctx, pr.key, err, began) {
		return
	}
	c.mu.Lock()
	if mark != c.in.marks[sp.Name] {
		c.marks[sp.Name] = mark
	}
	if sp.Collections == source.Lists && err == nil {
		c.newColls, c.collsOK = pr.list, true
		if c.newColls == nil {
			c.newColls = []string{}
		}
	}
	c.mu.Unlock()
	switch sp.Status {
	case source.SourceWide:
		_ = c.setStatus(ctx, sp, "", err, false)
	case source.PerCollection:
		c.finish(ctx, sp, pr.seen, err)
	}
	if err == nil {
		// Every cycle, changed or not, after the poll's statuses: what
		// asOf is resolved from (readmodel.Polled).
		c.polled(ctx, sp)
	}
}

// polled publishes that poll sp succeeded in this cycle. It is not
// counted as published: it carries no data, and a cycle in which nothing
// changed still publishes one per successful poll.
func (c *cycle) polled(ctx context.Context, sp source.Spec) {
	msg := &readmodel.Message{Kind: readmodel.KindPolled, Source: sp.Source, Polled: &readmodel.Polled{Poll: sp.Name, At: c.start}}
	msg.ID = c.ns + "/" + string(msg.Kind) + "/" + sp.Name
	msg.ObservedAt = c.start
	c.mu.Lock()
	failed := c.pubErr != nil
	c.mu.Unlock()
	if failed {
		return
	}
	c.pubMu.Lock()
	err := c.in.pub.Publish(ctx, msg)
	c.pubMu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		if c.pubErr == nil {
			c.pubErr = err
		}
		return
	}
	c.polledAt[sp.Name] = unixNano(c.start)
}

// finish publishes, for every listed collection the poll did not deliver,
// either ok with the empty message of sp.Empty (complete poll) or a
// failure status.
func (c *cycle) finish(ctx context.Context, sp source.Spec, seen map[string]bool, pollErr error) {
	now := c.in.now().UTC()
	for _, id := range c.colls {
		if seen[id] {
			continue
		}
		sent := false
		if pollErr == nil && sp.Empty != "" {
			msg := &readmodel.Message{Kind: sp.Empty, Source: sp.Source, CollectionID: id}
			if c.offer(ctx, string(sp.Source), msg, hashOf(msg, now)) != nil {
				return
			}
			sent = true
		}
		if c.setStatus(ctx, sp, id, pollErr, sent) != nil {
			return
		}
	}
}

// pollRun is the source.Sink of one poll.
type pollRun struct {
	c    *cycle
	ctx  context.Context
	spec source.Spec
	key  string
	seen map[string]bool // collections delivered (PerCollection)
	list []string        // the collection list (Lists)
}

func (pr *pollRun) Reject(err error, n int) { pr.c.reject(pr.key, err, n) }

// Emit checks a unit's collection, builds it unless its bytes show it
// unchanged, and publishes what changed (Append: everything).
func (pr *pollRun) Emit(u source.Unit) error {
	c, ctx, sp := pr.c, pr.ctx, pr.spec
	if c.in.cfg.Yield != nil {
		c.in.cfg.Yield()
	}
	id := u.Collection
	switch sp.Collections {
	case source.Checked:
		var ok bool
		if id, ok = c.checkCollection(pr.key, u.Collection, u.Size); !ok {
			return nil
		}
		if pr.seen != nil {
			if pr.seen[id] {
				return nil
			}
			pr.seen[id] = true
		}
	case source.Global:
		id = ""
	}
	var subj hkey
	var raw [16]byte
	if u.Lazy {
		subj = subjectOf(u.Kind, sp.Source, id, 0)
		raw = sum16(u.Raw)
		if m, ok := c.unchangedRaw(subj, raw, u.At); ok {
			c.accept(pr.key, int(m.n))
			c.unchanged(pr.key)
			return pr.delivered(id, false)
		}
	}
	b := u.Build(id)
	c.accept(pr.key, b.Rows)
	if sp.Collections == source.Lists {
		pr.list = append(pr.list, id)
	}
	for _, m := range b.Msgs {
		m.Kind, m.Source, m.CollectionID = u.Kind, sp.Source, id
	}
	if sp.Append {
		for _, m := range b.Msgs {
			if err := c.publish(ctx, pr.key, m, subject(m), nil); err != nil {
				return err
			}
		}
		return pr.delivered(id, len(b.Msgs) > 0)
	}
	var h [16]byte
	for _, m := range b.Msgs {
		h = hashOf(m, u.At)
		if err := c.offer(ctx, pr.key, m, h); err != nil {
			return err
		}
	}
	if len(b.Msgs) > 0 && b.Msgs[0].Buckets > 0 {
		// A bucketed subject: empty the buckets it had and has no more.
		nb := len(b.Msgs)
		pk := subjectOf(u.Kind, sp.Source, id, 0)
		for bk := nb; bk < c.in.parts[pk]; bk++ {
			m := &readmodel.Message{Kind: u.Kind, Source: sp.Source, CollectionID: id, Bucket: uint32(bk), Buckets: uint32(nb)}
			if err := c.offer(ctx, pr.key, m, hashOf(m, u.At)); err != nil {
				return err
			}
		}
		c.mu.Lock()
		c.parts[pk] = nb
		c.mu.Unlock()
	}
	if u.Lazy && b.Clean && len(b.Msgs) == 1 {
		c.mu.Lock()
		c.listMemos[subj] = listingsMemo{raw: raw, content: h, minExp: b.Expires, n: int32(b.Rows)}
		c.mu.Unlock()
	}
	return pr.delivered(id, len(b.Msgs) > 0)
}

// delivered records a collection's ok status (PerCollection); sent says
// whether this cycle offered a message of its rows (in a full cycle every
// offer is published).
func (pr *pollRun) delivered(id string, sent bool) error {
	if pr.spec.Status != source.PerCollection {
		return nil
	}
	return pr.c.setStatus(pr.ctx, pr.spec, id, nil, sent)
}

// checkCollection normalizes a unit's collection id and checks it against
// this cycle's list; size() rows (nil: 1) are rejected with the reason
// when it fails.
func (c *cycle) checkCollection(key, raw string, size func() int) (string, bool) {
	id, err := normalize.CollectionID(raw)
	if err == nil && c.known != nil && !c.known[id] {
		err = &normalize.RejectError{Reason: normalize.RejectUnknownCollect, Field: "collectionId"}
	}
	if err != nil {
		n := 1
		if size != nil {
			n = max(size(), 1)
		}
		c.reject(key, err, n)
		return "", false
	}
	return id, true
}

// hashOf is the change-detection hash of msg's payload; at is the poll
// time its rows were normalized at.
func hashOf(m *readmodel.Message, at time.Time) [16]byte {
	switch m.Kind {
	case readmodel.KindListings:
		return hashListings(m.Listings, at)
	case readmodel.KindTokens:
		return hashTokens(m.Tokens, int(m.Buckets), at)
	case readmodel.KindCollection:
		return contentHash(m.Collection)
	case readmodel.KindRates:
		return contentHash(m.Rates)
	case readmodel.KindStats:
		return contentHash(m.Stats)
	case readmodel.KindAnalytics:
		return contentHash(m.Analytics)
	}
	return contentHash(m)
}

// listingsMemo remembers what one subject's rows, as an upstream sent
// them, came to on the poll that last built them (a Lazy unit): the hash
// of the raw rows, the content hash of the normalized rows, how many were
// kept and the earliest expiry among them (unix nanoseconds, 0 = none
// expires). Pointer-free, like Ingest's other maps.
type listingsMemo struct {
	raw, content [16]byte
	minExp       int64
	n            int32
}

// unchangedRaw reports whether a Lazy unit whose raw rows hash to raw
// would build, at now, to what the last recorded publish of subj holds.
// It holds when the upstream sent the same bytes as on the poll memo was
// taken from (which rejected no row), no row has expired since, and that
// poll's rows are still the subject's last recorded publish. Building
// depends on nothing else: a row's time-of-poll default timestamp is left
// out of the content hash.
func (c *cycle) unchangedRaw(subj hkey, raw [16]byte, now time.Time) (listingsMemo, bool) {
	m, ok := c.in.listMemos[subj]
	if !ok || m.raw != raw || (m.minExp != 0 && m.minExp <= now.UnixNano()) {
		return m, false
	}
	h, ok := c.in.hashes[subj]
	return m, ok && h == m.content
}

package httpapi

import (
	"bytes"
	"encoding/binary"
	"hash/maphash"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// pageMemo remembers the bodies of recently written pages (listings, sales,
// collections, the change feed, batches of tokens) so that a hot page is
// answered from one immutable buffer (fasthttp's SetBodyRaw): no item is
// copied and no cursor is signed per request. A page body is a pure
// function of its key, a response's identity (identity.go), until the
// entry's expiry, that identity's bound by the clock (a next cursor's
// minute: cursorCodec.expiry rounds to the minute, so within a minute
// identical requests mint identical cursors).
//
// It is a direct-mapped table of atomic pointers: a lookup takes no lock,
// and two keys that share a slot evict each other. A body is kept only
// when its key misses twice in a row in its slot, so pages read once (a
// crawler walking a large market) never pay for the copy; one that
// expired is replaced by the next offer. Safe for concurrent use; a
// stored body is never modified.
type pageMemo struct {
	seed         maphash.Seed
	slots        []atomic.Pointer[memoEntry]
	hits, misses prometheus.Counter
}

// memoSlots bounds the memo: at most this many bodies, each at most a
// limit=100 page (about 50 KB), so a few tens of MB in the worst case.
const memoSlots = 1024

type memoEntry struct {
	hash    uint64
	key     string
	body    []byte // nil: a candidate, missed once
	tag     uint64 // the body's entity tag
	expires int64  // unix nanoseconds the body is good until; 0: while its key holds
	// The response memo's (prepared.go): where the request's time goes
	// back into body (ascending offsets; none: nowhere), and the cache
	// headers sent with it.
	timeAt               []int
	cacheControl, cdnCtl []byte
	// stamped is the body with the time of one millisecond in its slots,
	// made by the first answer of that millisecond and shared by the rest
	// (set when timeAt is).
	stamped *atomic.Pointer[stampedBody]
}

// stampedBody is a memo entry's body with the time of millisecond ms in
// its slots; never modified.
type stampedBody struct {
	ms   int64
	body []byte
}

func newPageMemo(reg *prometheus.Registry) (*pageMemo, error) {
	return newMemo(reg, "marketd_http_page_memo_total",
		"Paged responses (listings, sales, collections) answered from a remembered body (hit) or built (miss).")
}

// newMemo is a memo counted under the metric name (labelled by result).
func newMemo(reg *prometheus.Registry, name, help string) (*pageMemo, error) {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, []string{"result"})
	if err := reg.Register(c); err != nil {
		return nil, err
	}
	return &pageMemo{
		seed:   maphash.MakeSeed(),
		slots:  make([]atomic.Pointer[memoEntry], memoSlots),
		hits:   c.WithLabelValues("hit"),
		misses: c.WithLabelValues("miss"),
	}, nil
}

// lookup returns the entry of key whose body is good at now (unix
// nanoseconds), or nil and the key's hash for a later keep. The entry is
// shared: never modify it.
func (m *pageMemo) lookup(key []byte, now int64) (*memoEntry, uint64) {
	hash := maphash.Bytes(m.seed, key)
	e := m.slots[hash%memoSlots].Load()
	if e != nil && e.body != nil && e.hash == hash && (e.expires == 0 || now < e.expires) && e.key == string(key) {
		m.hits.Inc()
		return e, hash
	}
	m.misses.Inc()
	return nil, hash
}

// keep offers entry e for key (hash from lookup): the first offer marks
// the key in its slot, the next one keeps e with a copy of its body.
func (m *pageMemo) keep(key []byte, hash uint64, e memoEntry) {
	slot := &m.slots[hash%memoSlots]
	old := slot.Load()
	switch {
	case old == nil || old.hash != hash || old.key != string(key):
		slot.Store(&memoEntry{hash: hash, key: string(key)})
	case old.body == nil || old.expires != 0: // a candidate, or a body that expired
		e.hash, e.key, e.body = hash, old.key, bytes.Clone(e.body)
		slot.Store(&e)
	}
}

// memoKey builds a memo key: its kind, then strings and numbers, each
// length- or width-delimited so that no two argument lists share a key.
type memoKey []byte

func newMemoKey(buf []byte, kind cursorKind) memoKey { return append(buf[:0], byte(kind)) }

func (k memoKey) str(s string) memoKey {
	k = binary.AppendUvarint(k, uint64(len(s)))
	return append(k, s...)
}

func (k memoKey) num(v uint64) memoKey { return binary.LittleEndian.AppendUint64(k, v) }

package store

import (
	"bytes"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/google/btree"
)

// memEngine is an engine in memory: a B-tree of keys, copied on write so
// that a transaction's writes are its own until it commits and a reader
// keeps the tree it began with. Read-write transactions run one at a
// time (begin waits for the one before to end); read-only ones run
// beside them. Entries with a TTL expire as in Badger (seconds since the
// epoch, by the wall clock).
type memEngine struct {
	writing sync.Mutex // held by the read-write transaction in progress

	// committed is the writer's last committed tree: cloned by each
	// read-write transaction (under writing), never read by readers,
	// because a clone writes to the tree it is taken from.
	committed *btree.BTreeG[memItem]

	mu        sync.RWMutex
	published *btree.BTreeG[memItem] // readers' copy of committed; never written or cloned
}

type memItem struct {
	k       string
	v       []byte
	expires int64 // unix seconds; 0: never
}

func lessMemItem(a, b memItem) bool { return a.k < b.k }

func newMemEngine() *memEngine {
	t := btree.NewG(32, lessMemItem)
	return &memEngine{committed: t, published: t.Clone()}
}

func (e *memEngine) begin(update bool) kvTxn {
	if !update {
		e.mu.RLock()
		t := e.published
		e.mu.RUnlock()
		return &memTxn{tree: t}
	}
	e.writing.Lock()
	return &memTxn{e: e, tree: e.committed.Clone()}
}

// memTxn is a transaction of a memEngine: e is nil for a read-only one.
type memTxn struct {
	e    *memEngine
	tree *btree.BTreeG[memItem]
	done bool
}

var errMemReadOnly = errors.New("memory store: write in a read-only transaction")

func live(it memItem) bool { return it.expires == 0 || it.expires > time.Now().Unix() }

func (t *memTxn) get(k []byte) ([]byte, bool, error) {
	it, ok := t.tree.Get(memItem{k: string(k)})
	if !ok || !live(it) {
		return nil, false, nil
	}
	return bytes.Clone(it.v), true, nil
}

func (t *memTxn) put(it memItem) error {
	if t.e == nil || t.done {
		return errMemReadOnly
	}
	t.tree.ReplaceOrInsert(it)
	return nil
}

// set keeps copies: Badger lets a caller reuse its slices once the
// transaction has ended, and this engine keeps values for good.
func (t *memTxn) set(k, v []byte) error {
	return t.put(memItem{k: string(k), v: bytes.Clone(v)})
}

func (t *memTxn) setTTL(k, v []byte, ttl time.Duration) error {
	return t.put(memItem{k: string(k), v: bytes.Clone(v), expires: time.Now().Add(ttl).Unix()})
}

func (t *memTxn) del(k []byte) error {
	if t.e == nil || t.done {
		return errMemReadOnly
	}
	t.tree.Delete(memItem{k: string(k)})
	return nil
}

func (t *memTxn) scan(prefix, seek []byte, values bool, fn func(k, v []byte) (bool, error)) error {
	if seek == nil || bytes.Compare(seek, prefix) < 0 {
		seek = prefix
	}
	p := string(prefix)
	var err error
	t.tree.AscendGreaterOrEqual(memItem{k: string(seek)}, func(it memItem) bool {
		if !strings.HasPrefix(it.k, p) {
			return false
		}
		if !live(it) {
			return true
		}
		var v []byte
		if values {
			v = it.v
		}
		var more bool
		more, err = fn([]byte(it.k), v)
		return more && err == nil
	})
	return err
}

func (t *memTxn) commit() error {
	if t.e == nil || t.done {
		return errMemReadOnly
	}
	t.done = true
	e := t.e
	e.committed = t.tree
	pub := t.tree.Clone()
	e.mu.Lock()
	e.published = pub
	e.mu.Unlock()
	e.writing.Unlock()
	return nil
}

func (t *memTxn) discard() {
	if t.e == nil || t.done {
		return
	}
	t.done = true
	t.e.writing.Unlock()
}

// take empties the engine and returns the tree it held, for its caller
// alone: no transaction or clone shares it any more, so what the caller
// deletes from it is freed (WriteMemory). It waits for the read-write
// transaction in progress.
func (e *memEngine) take() *btree.BTreeG[memItem] {
	e.writing.Lock()
	defer e.writing.Unlock()
	t := e.committed
	e.committed = btree.NewG(32, lessMemItem)
	e.mu.Lock()
	e.published = e.committed.Clone()
	e.mu.Unlock()
	return t
}

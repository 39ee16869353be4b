package store

import (
	"encoding/binary"
	"runtime"
	"slices"
	"strings"
	"sync"
)

// A store in memory (OpenMemory, a build) holds the open block of each
// feed family (a collection's feed, the market's log) uncompressed,
// outside its keys, instead of writing it as a base and a part per append
// (evblock.go) that the block's seal decodes and compresses again: a block
// is compressed once, when it fills, and the blocks still open when the
// build ends are written then (WriteMemory, Each) as the transactions
// would have left them, a base and a part per append, so the keys and
// values are the same byte for byte. In a profile of a replay of 10,000
// collections x 100 tokens the parts and seals took about 4 of 44 CPU-s.
//
// A transaction's changes to the held blocks are its own until it
// commits (Tx.held), as its writes are.

// feedGather holds the open blocks of a memory store's feed families,
// by family prefix (feedFam, pMarket), as committed. It is safe for
// concurrent use.
type feedGather struct {
	mu   sync.Mutex
	held map[string]*heldBlock
}

func newFeedGather() *feedGather { return &feedGather{held: map[string]*heldBlock{}} }

func (g *feedGather) get(fam string) *heldBlock {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.held[fam]
}

// commit makes a transaction's held blocks (nil: none any more) the
// committed ones.
func (g *feedGather) commit(held map[string]*heldBlock) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for fam, b := range held {
		if b == nil {
			delete(g.held, fam)
		} else {
			g.held[fam] = b
		}
	}
}

// items returns the keys and values of the held blocks as the
// transactions would have written them, sorted by key; take also empties
// g. It compresses them on up to GOMAXPROCS goroutines.
func (g *feedGather) items(take bool) []memItem {
	g.mu.Lock()
	held := g.held
	if take {
		g.held = map[string]*heldBlock{}
	}
	g.mu.Unlock()
	fams := make([]string, 0, len(held))
	for fam := range held {
		fams = append(fams, fam)
	}
	// Compressing them is the most of it (0.75 CPU-s at 10,000
	// collections x 100 tokens, before the write can start): one
	// goroutine per core.
	workers := max(min(runtime.GOMAXPROCS(0), len(fams)), 1)
	outs := make([][]memItem, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(fams); i += workers {
				held[fams[i]].put([]byte(fams[i]), func(k, v []byte) { outs[w] = append(outs[w], memItem{k: string(k), v: v}) })
			}
		}()
	}
	wg.Wait()
	out := slices.Concat(outs...)
	slices.SortFunc(out, func(a, b memItem) int { return strings.Compare(a.k, b.k) })
	return out
}

// heldBlock is a feed family's open block k, held uncompressed: its
// first stored event is the block's start-th, and segs are the appends
// to it (the base's, then one per part), oldest first. Its arrays may be
// shared with the copy a transaction extends (with), which writes past
// their lengths only.
type heldBlock struct {
	k, start, n uint64    // n: events held
	raw         []byte    // the events' records, as a segment lays them out (appendRawEvent)
	segs        []heldSeg // one per append
}

type heldSeg struct {
	n   uint8  // events of the append
	end uint32 // where they end in raw
}

// with returns a copy of b extended by an append of the events from..from+n-1
// (rec gives their records).
func (b heldBlock) with(rec func(i uint64) []byte, from, n uint64) *heldBlock {
	for i := from; i < from+n; i++ {
		b.raw = appendRawEvent(b.raw, rec(i))
	}
	b.segs = append(b.segs, heldSeg{n: uint8(n), end: uint32(len(b.raw))})
	b.n += n
	return &b
}

// sealed is the value of b as a full block: its events compressed as one
// segment, as Tx.seal writes it.
func (b *heldBlock) sealed() []byte {
	return appendRawSegment(binary.AppendUvarint(nil, b.start), b.n, b.raw)
}

// put calls fn with the keys and values the transactions would have
// written for b in family fam: its base (newBlock of the first append)
// and a part per later append.
func (b *heldBlock) put(fam []byte, fn func(k, v []byte)) {
	start, from := b.start, uint32(0)
	for i, s := range b.segs {
		v := appendRawSegment(binary.AppendUvarint(nil, start), uint64(s.n), b.raw[from:s.end])
		if i == 0 {
			fn(famBlockKey(fam, b.k), v)
		} else {
			fn(famPartKey(fam, b.k, start+uint64(s.n)-1), v)
		}
		start, from = start+uint64(s.n), s.end
	}
}

// heldBlock returns family fam's open block as this transaction sees it
// (nil: none held).
func (t *Tx) heldBlock(fam []byte) *heldBlock {
	if b, ok := t.held[string(fam)]; ok {
		return b
	}
	return t.s.gather.get(string(fam))
}

// hold makes b family fam's open block in this transaction (nil: none).
func (t *Tx) hold(fam []byte, b *heldBlock) {
	if t.held == nil {
		t.held = map[string]*heldBlock{}
	}
	t.held[string(fam)] = b
}

// gatherBlocks is appendBlocks for a store that holds its open blocks
// (feedGather): the same head, and in the end the same keys and values.
// ok is false, with nothing done, when the held block is not the one h
// says is open (blocks written otherwise): the caller appends as on
// Badger.
func (t *Tx) gatherBlocks(fam []byte, h FeedHead, keep, n uint64, rec func(i uint64) []byte) (FeedHead, bool) {
	next := h.Next + n
	first := max(h.First, next-min(next-1, keep))
	had := h.First < h.Next
	w := max(h.Next, first)
	goesOn := had && w == h.Next && (w-1)%feedBlock > 0
	b := t.heldBlock(fam)
	if had {
		open, last := blockOf(h.Next-1), (h.Next-2)%feedBlock // last: the open block's newest event
		holds := b != nil && b.k == open && b.start+b.n == last+1
		if !holds && (b != nil || last != feedBlock-1) {
			return h, false
		}
		if holds && !goesOn {
			// The open block is deleted below or written anew, and its
			// parts with it: it is no longer held.
			t.hold(fam, nil)
			b = nil
		}
		for k := blockOf(h.First); k <= open && k < blockOf(first); k++ {
			t.del(famBlockKey(fam, k))
		}
	}
	for i := w - h.Next; i < n; {
		k, off := blockOf(w), (w-1)%feedBlock
		c := min(n-i, feedBlock-off)
		var nb *heldBlock
		if goesOn && w == h.Next {
			nb = b.with(rec, i, c) // a part of the open block
		} else {
			nb = heldBlock{k: k, start: off}.with(rec, i, c) // a block's base
		}
		if off+c == feedBlock {
			t.set(famBlockKey(fam, k), nb.sealed())
			nb = nil
		}
		t.hold(fam, nb)
		i, w = i+c, w+c
	}
	return FeedHead{First: first, Next: next}, true
}

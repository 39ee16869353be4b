package store

import (
	"context"
	"encoding/binary"
	"errors"
	"strconv"

	"github.com/cespare/xxhash/v2"
	"github.com/dgraph-io/badger/v4"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/render"
)

// The change feed (GET /v1/collections/{id}/events) lives in its own
// family, e/…: node-local history like o/…, outside Digest (a node built
// by replay from the compacted state stream saw fewer messages than one
// that ran live, so its history is shorter; the views are the same).
//
//	e/e/<cid><k>  the events seq k*feedBlock+1 .. (k+1)*feedBlock, a block
//	              (evblock.go): k big-endian, 8 bytes
//	e/e/<cid><k><l>  a part of the open block k: events appended to it
//	              after its first write, up to its l-th (one byte)
//	e/s/<cid>     the collection's feed head: first and next seq, 8 bytes
//	              each (the projector's feed state, its last listing set,
//	              is in the collection's state record: state.go)
//
// seq is a per-collection counter from 1, so a collection's blocks are in
// key order and a page is a range that never changes. A block may hold
// events below the head's first (retention drops whole blocks only);
// reads skip them.
var (
	pEvent = []byte("e/e/")
	pFeed  = []byte("e/s/")
)

// DefaultFeedEvents is how many events of each collection a store keeps
// when Options.FeedEvents is 0.
const DefaultFeedEvents = 1000

func (s *Store) feedEvents() uint64 {
	if s.opts.FeedEvents > 0 {
		return uint64(s.opts.FeedEvents)
	}
	return DefaultFeedEvents
}

// FeedHead is where a collection's feed stands: it holds the events
// First..Next-1 (none when First == Next).
type FeedHead struct{ First, Next uint64 }

// OrderHash is how a feed's sold orderIds (SecFeedSold) hold an orderId: 8 bytes instead of a
// native order id's ~130. A removed listing whose orderId shares a hash
// with one of the collection's last 256 sales would be reported as sold:
// odds of about 2^-56 per removal.
func OrderHash(orderID string) uint64 { return xxhash.Sum64String(orderID) }

// FeedHead returns collection cid's feed head as stored apart for the
// feed's readers (e/s/<cid>; the projector keeps its own in the
// collection's state record).
func (t *Tx) FeedHead(cid string) (FeedHead, error) {
	raw, ok, err := t.getRaw(key(pFeed, cid))
	if err != nil {
		t.err = errors.Join(t.err, err)
		return FeedHead{}, err
	}
	if !ok || len(raw) < 16 {
		return FeedHead{First: 1, Next: 1}, nil
	}
	return FeedHead{First: binary.BigEndian.Uint64(raw), Next: binary.BigEndian.Uint64(raw[8:])}, nil
}

// PutFeedHead stores collection cid's feed head h for the feed's readers.
func (t *Tx) PutFeedHead(cid string, h FeedHead) { t.set(key(pFeed, cid), EncodeFeedHead(h)) }

// AppendEvents appends events to collection cid's feed, whose head was h,
// drops the events beyond the retention (Options.FeedEvents) and returns
// the new head, which the caller stores (PutFeedHead, or with the
// collection's state) in the same transaction. Of a longer append only the last are written; a block
// wholly below the new head's first is deleted, one partly below it kept.
// An append to the open block writes its events as a part of the block (a
// key of their own, evblock.go); one that fills the block seals it: the
// block's events compressed again as one, its parts deleted. A stored
// block that does not match h, met on the way, is the transaction's error
// (damage).
func (t *Tx) AppendEvents(cid string, h FeedHead, events []NewEvent) FeedHead {
	var recs []eventRec
	h = t.appendBlocks(feedFam(cid), h, t.s.feedEvents(), uint64(len(events)), func(i uint64) []byte {
		r := encodeEvent(nil, cid, &events[i])
		recs = append(recs, eventRec{ev: &events[i], rec: r})
		return r
	})
	t.noteEventRecords(cid, recs)
	t.sales = append(t.sales, feedFamily(cid)) // cached pages of this feed are stale after the commit
	return h
}

// appendBlocks appends n events to the blocks of family fam, whose head
// was h, keeping the last keep, and returns the new head (see
// AppendEvents); rec(i) is the record of the i-th event appended, asked
// only of those written. A memory store holds the open block instead
// (gatherBlocks, evgather.go), to the same keys and values.
func (t *Tx) appendBlocks(fam []byte, h FeedHead, keep, n uint64, rec func(i uint64) []byte) FeedHead {
	if t.s.gather != nil {
		if h, ok := t.gatherBlocks(fam, h, keep, n, rec); ok {
			return h
		}
	}
	next := h.Next + n
	first := max(h.First, next-min(next-1, keep))
	had := h.First < h.Next // events were stored before: blocks blockOf(h.First)..blockOf(h.Next-1)
	w := max(h.Next, first) // the first event written; those below first are not
	// The append goes on in the open block (the one holding h.Next-1),
	// which is kept: it is not below first's block.
	goesOn := had && w == h.Next && (w-1)%feedBlock > 0
	if had {
		open := blockOf(h.Next - 1)
		if !goesOn && (h.Next-1)%feedBlock != 0 {
			// The open block, not full (a full one has no parts: its
			// seal deleted them), is deleted below or written anew (an
			// append past the retention): its parts go with it.
			t.deleteParts(fam, open, (h.Next-2)%feedBlock)
		}
		for k := blockOf(h.First); k <= open && k < blockOf(first); k++ {
			t.del(famBlockKey(fam, k))
		}
	}
	recs := make([][]byte, 0, n-(w-h.Next))
	for i := w - h.Next; i < n; i++ {
		recs = append(recs, rec(i))
	}
	for evs := recs; len(evs) > 0; {
		k, off := blockOf(w), (w-1)%feedBlock
		n := min(uint64(len(evs)), feedBlock-off)
		switch {
		case goesOn && w == h.Next && off+n == feedBlock:
			t.set(famBlockKey(fam, k), t.seal(fam, k, off, evs[:n]))
		case goesOn && w == h.Next:
			t.set(famPartKey(fam, k, off+n-1), newBlock(off, evs[:n]))
		default:
			t.set(famBlockKey(fam, k), newBlock(off, evs[:n]))
		}
		evs, w = evs[n:], w+n
	}
	return FeedHead{First: first, Next: next}
}

// openBlock reads the base of family fam's open block k and its parts
// up to the one ending with the block's last-th event: the base's start
// and the values, oldest first. A missing or damaged one is
// errCorruptBlock.
func (t *Tx) openBlock(fam []byte, k, last uint64) (uint64, [][]byte, error) {
	base, ok, err := t.getRaw(famBlockKey(fam, k))
	if err != nil {
		return 0, nil, err
	}
	start, n, shapeOK := blockShape(base)
	if !ok || !shapeOK || start+n > last+1 {
		return 0, nil, errCorruptBlock()
	}
	parts, err := openParts(t.getRaw, fam, k, start+n, last)
	if err != nil {
		return 0, nil, err
	}
	return start, append([][]byte{base}, parts...), nil
}

// seal returns family fam's open block k with evs, which fill it from
// its off-th event, compressed as one, and deletes the block's parts.
func (t *Tx) seal(fam []byte, k, off uint64, evs [][]byte) []byte {
	start, vals, err := t.openBlock(fam, k, off-1)
	if err != nil {
		t.err = errors.Join(t.err, err)
		return nil
	}
	var all [][]byte
	for i, v := range vals {
		_, stored, err := decodeBlock(v)
		if err != nil {
			t.err = errors.Join(t.err, err)
			return nil
		}
		for _, e := range stored {
			all = append(all, e.rec)
		}
		if i > 0 {
			t.del(famPartKey(fam, k, start+uint64(len(all))-1))
		}
	}
	return newBlock(start, append(all, evs...))
}

// deleteParts deletes the parts of family fam's open block k, whose
// newest event is its last-th.
func (t *Tx) deleteParts(fam []byte, k, last uint64) {
	_, vals, err := t.openBlock(fam, k, last)
	if err != nil {
		t.err = errors.Join(t.err, err)
		return
	}
	for _, v := range vals[1:] {
		s, n, _ := blockShape(v)
		t.del(famPartKey(fam, k, s+n-1))
	}
}

// Events returns up to limit events of collection cid, oldest first,
// after the event at seq after whose id is afterID (after 0: from the
// oldest kept), keeping only the types whose bits are set in types (0:
// every type). A position that no longer resolves is BadRequest: older
// than the retention (the message names the oldest event kept), or not
// the event it was minted for (a rebuilt feed). A block that does not
// decode, or lacks an event the head says is kept, is an Internal
// "corrupt event block" error (Damaged), never a panic. Events is safe
// for concurrent use.
//
// Pages are cached until the collection's feed next changes (the head
// page too: it is the one pollers ask for again and again).
func (s *Store) Events(ctx context.Context, cid string, after uint64, afterID string, limit int, types uint8) (render.EventPage, error) {
	if limit <= 0 {
		limit = 1
	}
	// The cache key is built on the stack: a cached page is read without
	// allocating.
	var kb [viewKeyBuf]byte
	kk := append(append(append(kb[:0], "e|"...), cid...), '|')
	kk = append(append(strconv.AppendUint(kk, after, 10), '|'), afterID...)
	kk = strconv.AppendInt(append(kk, '|'), int64(limit), 10)
	kk = strconv.AppendInt(append(kk, '|'), int64(types), 10)
	p, gen, ok := s.cache.getEventPage(kk, cid) // gen: a commit during the read makes the page stale
	if ok {
		return p, nil
	}
	ck := string(kk)
	var page render.EventPage
	err := s.db.View(func(txn *badger.Txn) error {
		h := FeedHead{First: 1, Next: 1}
		if it, err := txn.Get(key(pFeed, cid)); err == nil {
			if err := it.Value(func(v []byte) error {
				if len(v) >= 16 {
					h = FeedHead{First: binary.BigEndian.Uint64(v), Next: binary.BigEndian.Uint64(v[8:])}
				}
				return nil
			}); err != nil {
				return err
			}
		} else if !errors.Is(err, badger.ErrKeyNotFound) {
			return err
		}
		blocks := blockReader{txn: txn, fam: feedFam(cid), cid: cid, head: h}
		sale := blocks.sale
		if after != 0 {
			if after >= h.Next {
				return readmodel.Errorf(readmodel.BadRequest, "cursor does not resolve on this node's feed; restart without a cursor")
			}
			if after+1 < h.First {
				return s.tooOld(&blocks, h)
			}
			if after >= h.First {
				e, err := blocks.event(after)
				if err != nil {
					return err
				}
				id, _, err := renderEvent(cid, e.rec, sale)
				if err != nil {
					return err
				}
				if id != afterID {
					return readmodel.Errorf(readmodel.BadRequest, "cursor does not resolve on this node's feed; restart without a cursor")
				}
			}
		}
		page.Last, page.LastID = after, afterID
		var last []byte // the record of event page.Last when its id is still to render
		for seq := max(after+1, h.First); seq < h.Next; seq++ {
			e, err := blocks.event(seq)
			if err != nil {
				return err
			}
			page.Last, last = seq, e.rec
			if types == 0 || e.typ&types != 0 {
				// Rendered into a buffer of its own: a cached page holds
				// nothing of the decoded block.
				id, body, err := renderEvent(cid, e.rec, sale)
				if err != nil {
					return err
				}
				page.Items = append(page.Items, body)
				page.LastID, last = id, nil
			}
			if len(page.Items) == limit {
				page.Full = true
				break
			}
		}
		if last != nil {
			id, _, err := renderEvent(cid, last, sale)
			if err != nil {
				return err
			}
			page.LastID = id
		}
		return nil
	})
	if err != nil {
		return render.EventPage{}, internal(err, "read events")
	}
	s.cache.putEventPage(ck, cid, gen, page)
	return page, nil
}

// tooOld is the BadRequest for a position older than the retention; it
// names the oldest event kept (h.First), or says nothing of it when that
// does not read.
func (s *Store) tooOld(blocks *blockReader, h FeedHead) error {
	var id string
	if e, err := blocks.event(h.First); err == nil {
		id, _, _ = renderEvent(blocks.cid, e.rec, blocks.sale)
	}
	return readmodel.Errorf(readmodel.BadRequest, "cursor is older than the %d events kept per collection; the oldest available is eventId %q: restart without a cursor", s.feedEvents(), id)
}

// blockReader reads the events of a collection's feed through a read
// transaction, keeping the last block it decoded. It is not safe for
// concurrent use.
type blockReader struct {
	txn    *badger.Txn
	fam    []byte   // the blocks' key prefix (feedFam, or pMarket)
	cid    string   // the collection whose sales sale reads
	head   FeedHead // the events the blocks must hold
	k      uint64   // the block in evs, when loaded
	start  uint64
	evs    []storedEvent
	loaded bool
}

// sale reads the record of the collection's sale whose key suffix is suf.
func (r *blockReader) sale(suf []byte) ([]byte, bool, error) {
	return txnGet(r.txn, append(salesPrefix(r.cid), suf...))
}

// event returns event seq, which the feed's head says is stored: a block
// that is missing or does not hold every event of it the head says is
// stored is damage (errCorruptBlock), like one that does not decode.
func (r *blockReader) event(seq uint64) (*storedEvent, error) {
	k := blockOf(seq)
	if !r.loaded || r.k != k {
		r.loaded = false
		it, err := r.txn.Get(famBlockKey(r.fam, k))
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil, errCorruptBlock()
		}
		if err != nil {
			return nil, err
		}
		if err := it.Value(func(v []byte) error {
			r.start, r.evs, err = decodeBlock(v)
			return err
		}); err != nil {
			return nil, err
		}
		base := k * feedBlock // seq base+1 is the block's first
		lo, hi := max(r.head.First, base+1), min(r.head.Next-1, base+feedBlock)
		if end := r.start + uint64(len(r.evs)); base+end < hi {
			// The open block: its newer events are in its parts.
			parts, err := openParts(func(k []byte) ([]byte, bool, error) { return txnGet(r.txn, k) }, r.fam, k, end, hi-base-1)
			if err != nil {
				return nil, err
			}
			for _, p := range parts {
				_, evs, err := decodeBlock(p)
				if err != nil {
					return nil, err
				}
				r.evs = append(r.evs, evs...)
			}
		}
		if base+1+r.start > lo || base+r.start+uint64(len(r.evs)) < hi {
			return nil, errCorruptBlock()
		}
		r.k, r.loaded = k, true
	}
	i := (seq-1)%feedBlock - r.start // wraps when seq is before the block's start
	if i >= uint64(len(r.evs)) {
		return nil, errCorruptBlock()
	}
	return &r.evs[i], nil
}

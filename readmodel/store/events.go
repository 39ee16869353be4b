package store

import (
	"context"
	"encoding/binary"
	"errors"
	"strconv"

	"github.com/dgraph-io/badger/v4"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/render"
)

// The change feed (GET /v1/collections/{id}/events) lives in its own
// family, e/…: node-local history like o/…, outside Digest (a node built
// by replay from the compacted state stream saw fewer messages than one
// that ran live, so its history is shorter; the views are the same).
//
//	e/e/<cid><seq>  one event: type bit, uvarint length and event id, then its
//	                JSON as an S2 block against eventDict
//	e/s/<cid>       the collection's feed head (first and next seq) and the
//	                projector's state (its last listing set), packed
//
// seq is a per-collection counter from 1, big-endian, so a collection's
// events are in key order and a page is a range that never changes.
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

// NewEvent is an event to append: its type bit (render.EventTypeBit), id
// and JSON body.
type NewEvent struct {
	Type uint8
	ID   string
	Body []byte
}

func eventKey(cid string, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(key(pEvent, cid, ""), seq)
}

// FeedState returns collection cid's feed head and the state the
// projector stored with it (nil when none).
func (t *Tx) FeedState(cid string) (FeedHead, []byte, error) {
	raw, ok, err := t.getRaw(key(pFeed, cid))
	if err != nil || !ok || len(raw) < 16 {
		if err != nil {
			t.err = errors.Join(t.err, err)
		}
		return FeedHead{First: 1, Next: 1}, nil, err
	}
	h := FeedHead{First: binary.BigEndian.Uint64(raw), Next: binary.BigEndian.Uint64(raw[8:])}
	state, err := unpackInput(raw[16:])
	if err != nil {
		t.err = errors.Join(t.err, err)
	}
	return h, state, err
}

// AppendEvents appends events to collection cid's feed, whose head was h,
// drops the events beyond the retention (Options.FeedEvents) and returns
// the new head, which the caller stores with PutFeedState in the same
// transaction.
func (t *Tx) AppendEvents(cid string, h FeedHead, events []NewEvent) FeedHead {
	keep := t.s.feedEvents()
	next := h.Next + uint64(len(events))
	first := max(h.First, next-min(next-1, keep))
	for ; h.First < first; h.First++ {
		if h.First < h.Next { // an event written before; the new ones below first are never written
			t.del(eventKey(cid, h.First))
		}
	}
	for _, e := range events {
		if h.Next >= first {
			body := eventDict.Encode(nil, e.Body)
			v := make([]byte, 0, 1+binary.MaxVarintLen64+len(e.ID)+len(body))
			v = append(v, e.Type)
			v = lp(v, e.ID)
			t.set(eventKey(cid, h.Next), append(v, body...))
		}
		h.Next++
	}
	t.sales = append(t.sales, feedFamily(cid)) // cached pages of this feed are stale after the commit
	return h
}

// FeedRetention is how many events of each collection the store keeps
// (Options.FeedEvents): of a longer append only the last are written.
func (t *Tx) FeedRetention() int { return int(t.s.feedEvents()) }

// PutFeedState stores collection cid's feed head h and the projector's
// state with it.
func (t *Tx) PutFeedState(cid string, h FeedHead, state []byte) {
	v := make([]byte, 16, 16+len(state))
	binary.BigEndian.PutUint64(v, h.First)
	binary.BigEndian.PutUint64(v[8:], h.Next)
	t.set(key(pFeed, cid), append(v, packInput(state)...))
}

// decodeEvent splits a stored event into its type bit, id and body.
func decodeEvent(v []byte) (uint8, string, []byte, bool) {
	if len(v) < 2 {
		return 0, "", nil, false
	}
	n, w := binary.Uvarint(v[1:])
	if w <= 0 || uint64(len(v)-1-w) < n {
		return 0, "", nil, false
	}
	return v[0], string(v[1+w : 1+w+int(n)]), v[1+w+int(n):], true
}

// Events returns up to limit events of collection cid, oldest first,
// after the event at seq after whose id is afterID (after 0: from the
// oldest kept), keeping only the types whose bits are set in types (0:
// every type). A position that no longer resolves is BadRequest: older
// than the retention (the message names the oldest event kept), or not
// the event it was minted for (a rebuilt feed).
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
		if after != 0 {
			if after >= h.Next {
				return readmodel.Errorf(readmodel.BadRequest, "cursor does not resolve on this node's feed; restart without a cursor")
			}
			if after+1 < h.First {
				return s.tooOld(txn, cid, h)
			}
			if after >= h.First {
				it, err := txn.Get(eventKey(cid, after))
				if err != nil {
					return err
				}
				var id string
				if err := it.Value(func(v []byte) error {
					_, id, _, _ = decodeEvent(v)
					return nil
				}); err != nil {
					return err
				}
				if id != afterID {
					return readmodel.Errorf(readmodel.BadRequest, "cursor does not resolve on this node's feed; restart without a cursor")
				}
			}
		}
		page.Last, page.LastID = after, afterID
		prefix := key(pEvent, cid, "")
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix, PrefetchValues: true, PrefetchSize: min(limit, 100)})
		defer it.Close()
		for it.Seek(eventKey(cid, max(after+1, h.First))); it.ValidForPrefix(prefix); it.Next() {
			k := it.Item().Key()
			if len(k) != len(prefix)+8 {
				continue
			}
			seq := binary.BigEndian.Uint64(k[len(prefix):])
			err := it.Item().Value(func(v []byte) error {
				typ, id, packed, ok := decodeEvent(v)
				if !ok {
					return readmodel.Errorf(readmodel.Internal, "corrupt event")
				}
				page.Last, page.LastID = seq, id
				if types == 0 || typ&types != 0 {
					body, ok := decodeBounded(packed, maxEventBody, eventDict.Decode)
					if !ok {
						return readmodel.Errorf(readmodel.Internal, "corrupt event")
					}
					page.Items = append(page.Items, body)
				}
				return nil
			})
			if err != nil {
				return err
			}
			if len(page.Items) == limit {
				page.Full = true
				break
			}
		}
		return nil
	})
	if err != nil {
		return render.EventPage{}, internal(err, "read events")
	}
	s.cache.putEventPage(ck, cid, gen, page)
	return page, nil
}

// tooOld is the BadRequest for a position older than the retention.
func (s *Store) tooOld(txn *badger.Txn, cid string, h FeedHead) error {
	var id string
	if it, err := txn.Get(eventKey(cid, h.First)); err == nil {
		_ = it.Value(func(v []byte) error {
			_, id, _, _ = decodeEvent(v)
			return nil
		})
	}
	return readmodel.Errorf(readmodel.BadRequest, "cursor is older than the %d events kept per collection; the oldest available is eventId %q: restart without a cursor", s.feedEvents(), id)
}

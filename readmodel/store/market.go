package store

import (
	"context"
	"encoding/binary"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/dgraph-io/badger/v4"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/render"
)

// The market's change feed (GET /v1/events) is one log of every
// collection's events, in the order the projector applied them: each
// transaction that appends events to collections' feeds (AppendEvents)
// appends the same events, in the order their messages were applied, to
// this log (AppendMarket). It is node-local history like the collections'
// feeds (e/…, outside Digest), in blocks of the same form (evblock.go):
//
//	e/m/<k>     the log's events seq k*feedBlock+1 .. (k+1)*feedBlock, a
//	            block: k big-endian, 8 bytes
//	e/m/<k><l>  a part of the open block k (one byte: its last event)
//	e/n         the log's head: first and next seq, 8 bytes each
//
// seq is a counter from 1 over the whole market. An entry holds all that
// renders its event, so it outlives the collection feed's retention (a
// busy collection's 1,000 events may be minutes): the type's bit (a types
// filter reads no further), lp(collection id) (a chain or collections
// filter reads no further), then the event's record (evrec.go). A sale
// event names its sale record, which is kept to the start of history as
// for the collection's feed. The collection id costs some 40 bytes an
// event in a block, where a collection's own blocks share it. Its keys,
// pMarket and kMarketHead, are in codec.go's list.

// DefaultMarketEvents is how many of the market log's events a store keeps
// when Options.MarketEvents is 0: at the medium size's first cycle
// (10,000 collections x 100 tokens, ~700,000 events) the whole of it.
const DefaultMarketEvents = 1_000_000

// MarketScan bounds how many of the market log's events one read of it
// (MarketEvents) goes through: a filter that matches few events ends its
// page there, full, instead of reading the whole log.
const MarketScan = 10_000

// marketFeed names the market log's page family in the cache (feedFamily):
// no collection id is empty or holds a NUL.
const marketFeed = "\x00"

func (s *Store) marketEvents() uint64 {
	if s.opts.MarketEvents > 0 {
		return uint64(s.opts.MarketEvents)
	}
	return DefaultMarketEvents
}

// MarketEvent is an event to append to the market log: a collection's
// event as AppendEvents takes it.
type MarketEvent struct {
	CollectionID string
	Event        NewEvent
}

// AppendMarket appends events, in their order, to the market log and drops
// those beyond its retention (Options.MarketEvents), in the transaction.
// The projector calls it once per transaction, with every event it
// appended to collections' feeds in it, in the order it applied them. A
// stored head or block that does not read is the transaction's error
// (damage).
func (t *Tx) AppendMarket(events []MarketEvent) {
	if len(events) == 0 {
		return
	}
	raw, _, err := t.getRaw(kMarketHead)
	if err != nil {
		t.err = errors.Join(t.err, err)
		return
	}
	h, err := DecodeFeedHead(raw)
	if err != nil {
		t.err = errors.Join(t.err, errCorruptBlock())
		return
	}
	h = t.appendBlocks(pMarket, h, t.s.marketEvents(), uint64(len(events)), func(i uint64) []byte {
		e := &events[i]
		if r := t.eventRecord(e); r != nil {
			b := make([]byte, 0, 1+binary.MaxVarintLen64+len(e.CollectionID)+len(r))
			return append(marketRecordHead(b, e), r...)
		}
		return encodeMarketEvent(nil, e)
	})
	t.set(kMarketHead, EncodeFeedHead(h))
	t.sales = append(t.sales, feedFamily(marketFeed)) // cached pages of the log are stale after the commit
}

// encodeMarketEvent appends e as a market log's record to b.
func encodeMarketEvent(b []byte, e *MarketEvent) []byte {
	return encodeEvent(marketRecordHead(b, e), e.CollectionID, &e.Event)
}

// marketRecordHead appends what a market log's record of e holds before
// the collection feed's record of its event (encodeEvent) to b.
func marketRecordHead(b []byte, e *MarketEvent) []byte {
	return lp(append(b, render.EventTypeBit(e.Event.Type)), e.CollectionID)
}

// eventRec is an event AppendEvents appended and the record encodeEvent
// made of it.
type eventRec struct {
	ev  *NewEvent
	rec []byte
}

// noteEventRecords keeps the records AppendEvents encoded for collection
// cid's events, in their order, for AppendMarket, which appends the same
// events later in the transaction, each collection's in the same order:
// encoding an event (its listing row above all) took about 0.8 CPU-s
// each way in a replay of 10,000 collections x 100 tokens.
func (t *Tx) noteEventRecords(cid string, recs []eventRec) {
	if len(recs) == 0 {
		return
	}
	if t.evRecs == nil {
		t.evRecs = map[string]*[]eventRec{}
	}
	if q, ok := t.evRecs[cid]; ok {
		*q = append(*q, recs...)
		return
	}
	t.evRecs[cid] = &recs
}

// eventRecord returns the collection feed's record of e when
// AppendEvents encoded it (the next of its collection's, and the same
// event: its pointers point to the same values), or nil.
func (t *Tx) eventRecord(e *MarketEvent) []byte {
	q := t.evRecs[e.CollectionID]
	if q == nil || len(*q) == 0 || *(*q)[0].ev != e.Event {
		return nil
	}
	r := (*q)[0].rec
	*q = (*q)[1:]
	return r
}

// splitMarketEvent reads a market log's record: its collection id and
// the event's record; ok is false for a damaged one.
func splitMarketEvent(rec []byte) (cid string, ev []byte, ok bool) {
	if len(rec) < 2 {
		return "", nil, false
	}
	n, w := binary.Uvarint(rec[1:])
	if w <= 0 || n == 0 || n > uint64(len(rec)-1-w) {
		return "", nil, false
	}
	at := 1 + w
	return string(rec[at : at+int(n)]), rec[at+int(n):], true
}

// renderMarketEvent renders a market log's record rec read in txn: its
// eventId and its JSON, as the collection's feed renders it (renderEvent).
func renderMarketEvent(txn *badger.Txn, rec []byte) (string, []byte, error) {
	cid, ev, ok := splitMarketEvent(rec)
	if !ok {
		return "", nil, errCorruptEvent()
	}
	return renderEvent(cid, ev, func(suf []byte) ([]byte, bool, error) {
		return txnGet(txn, append(salesPrefix(cid), suf...))
	})
}

// MarketFilter is what a read of the market log keeps: the types whose
// bits are set in Types (0: every type), the collections of Chain ("":
// every chain) and those of Collections (canonical ids; none: every
// collection).
type MarketFilter struct {
	Types       uint8
	Chain       readmodel.Chain
	Collections []string
}

// keeps reports whether f keeps an event of type bit typ of collection
// cid.
func (f *MarketFilter) keeps(typ uint8, cid string) bool {
	if f.Types != 0 && typ&f.Types == 0 {
		return false
	}
	if f.Chain != "" {
		if c, _, _ := strings.Cut(cid, "_"); c != string(f.Chain) {
			return false
		}
	}
	return len(f.Collections) == 0 || slices.Contains(f.Collections, cid)
}

// MarketEvents returns up to limit events of the market log that f keeps,
// oldest first, after the event at seq after whose id is afterID (after
// 0: from the oldest kept). It goes through at most MarketScan events: a
// page that stops there is Full (it never changes) and its Last is the
// last event gone through, kept or not. A position that no longer
// resolves is BadRequest: older than the retention (the message names the
// oldest event kept), or not the event it was minted for (a rebuilt
// store). A block that does not decode, or lacks an event the head says
// is kept, is an Internal "corrupt event block" error (Damaged), never a
// panic. MarketEvents is safe for concurrent use; pages are cached until
// the log next changes.
func (s *Store) MarketEvents(ctx context.Context, after uint64, afterID string, limit int, f MarketFilter) (render.EventPage, error) {
	if limit <= 0 {
		limit = 1
	}
	var kb [viewKeyBuf]byte
	kk := append(kb[:0], "m|"...)
	kk = append(append(strconv.AppendUint(kk, after, 10), '|'), afterID...)
	kk = strconv.AppendInt(append(kk, '|'), int64(limit), 10)
	kk = strconv.AppendInt(append(kk, '|'), int64(f.Types), 10)
	kk = append(append(kk, '|'), f.Chain...)
	for _, c := range f.Collections {
		kk = append(append(kk, '|'), c...)
	}
	p, gen, ok := s.cache.getEventPage(kk, marketFeed)
	if ok {
		return p, nil
	}
	ck := string(kk)
	var page render.EventPage
	err := s.db.View(func(txn *badger.Txn) error {
		raw, _, err := txnGet(txn, kMarketHead)
		if err != nil {
			return err
		}
		h, err := DecodeFeedHead(raw)
		if err != nil {
			return errCorruptBlock()
		}
		blocks := blockReader{txn: txn, fam: pMarket, head: h}
		if after != 0 {
			if after >= h.Next {
				return readmodel.Errorf(readmodel.BadRequest, "cursor does not resolve on this node's feed; restart without a cursor")
			}
			if after+1 < h.First {
				var id string
				if e, err := blocks.event(h.First); err == nil {
					id, _, _ = renderMarketEvent(txn, e.rec)
				}
				return readmodel.Errorf(readmodel.BadRequest, "cursor is older than the %d events the market's feed keeps; the oldest available is eventId %q: restart without a cursor", s.marketEvents(), id)
			}
			if after >= h.First {
				e, err := blocks.event(after)
				if err != nil {
					return err
				}
				id, _, err := renderMarketEvent(txn, e.rec)
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
		scanned := 0
		for seq := max(after+1, h.First); seq < h.Next; seq++ {
			e, err := blocks.event(seq)
			if err != nil {
				return err
			}
			page.Last, last = seq, e.rec
			cid, _, ok := splitMarketEvent(e.rec)
			if !ok {
				return errCorruptEvent()
			}
			if f.keeps(e.typ, cid) {
				id, body, err := renderMarketEvent(txn, e.rec)
				if err != nil {
					return err
				}
				page.Items = append(page.Items, body)
				page.LastID, last = id, nil
			}
			scanned++
			if len(page.Items) == limit || (scanned == MarketScan && seq+1 < h.Next) {
				page.Full = true
				break
			}
		}
		if last != nil {
			id, _, err := renderMarketEvent(txn, last)
			if err != nil {
				return err
			}
			page.LastID = id
		}
		return nil
	})
	if err != nil {
		return render.EventPage{}, internal(err, "read market events")
	}
	s.cache.putEventPage(ck, marketFeed, gen, page)
	return page, nil
}

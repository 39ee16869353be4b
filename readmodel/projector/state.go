package projector

import (
	"bytes"
	"sort"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/store"
)

// collState is one collection's inputs as this transaction last read or
// wrote them: its state (store.CollectionState), its small record read the
// first time a message or render of the transaction needs the collection
// and its listings record the first time one needs its listings, decoded
// section by section as they are asked for, and saved (saveStates) before
// the transaction commits when a section changed. A section never
// decoded is written back as it was read.
type collState struct {
	cid          string
	tx           inputTx               // reads the listings record when first needed
	stored       store.CollectionState // as read: what undecoded sections keep
	listingsRead bool                  // stored holds the listings record's sections
	fresh        bool                  // no state was stored before (saveStates counts it)
	have         [store.NumStateSections]bool
	dirty        [store.NumStateSections]bool

	doc        *readmodel.CollectionDoc
	stats      *readmodel.CollectionStats
	analytics  *readmodel.Analytics
	lastGood   *lastGood
	history    []byte
	tokenAddrs []string
	rows       [2]*rowsInput // order book, mirror (nil: none stored)
	head       store.FeedHead
	sold       []uint64
	set        []readmodel.ListingRow // the listing set the feed last reported

	pending []store.NewEvent // feed events to append at saveStates, in order
}

// listingSource is the index of a listing source in collState.rows and
// its section in the record (-1: not a listing source).
func listingSource(src readmodel.Source) int {
	switch src {
	case readmodel.SourceOrderBook:
		return 0
	case readmodel.SourceIndexerMirror:
		return 1
	}
	return -1
}

// listingSourceList and rowsSections are the listing sources in the order of
// collState.rows, and their sections.
var (
	listingSourceList = [2]readmodel.Source{readmodel.SourceOrderBook, readmodel.SourceIndexerMirror}
	rowsSections      = [2]store.StateSection{store.SecBook, store.SecMirror}
)

// state returns collection cid's state, reading it at most once per
// transaction.
func (a *applier) state(cid string) (*collState, error) {
	if s, ok := a.states[cid]; ok {
		return s, nil
	}
	stored, err := a.tx.CollectionState(cid, false)
	if err != nil {
		return nil, err
	}
	s := &collState{cid: cid, tx: a.tx, stored: stored, fresh: !smallRecord(&stored)}
	if a.states == nil {
		a.states = map[string]*collState{}
	}
	a.states[cid] = s
	return s, nil
}

// listings reads the collection's listings record into s.stored, once.
func (s *collState) listings() error {
	if s.listingsRead {
		return nil
	}
	st, err := s.tx.CollectionState(s.cid, true)
	if err != nil {
		return err
	}
	for sec := range st {
		if store.ListingSection(store.StateSection(sec)) {
			s.stored[sec] = st[sec]
		}
	}
	s.listingsRead = true
	return nil
}

// decodeJSON decodes JSON section sec of s into *dst once.
func decodeJSON[T any](s *collState, sec store.StateSection, dst **T) error {
	if s.have[sec] {
		return nil
	}
	v, err := store.DecodeJSON[T](s.stored[sec])
	if err != nil {
		return err
	}
	*dst, s.have[sec] = v, true
	return nil
}

// Doc returns the collection's document (nil: none). Callers must not
// modify it.
func (s *collState) Doc() (*readmodel.CollectionDoc, error) {
	return s.doc, decodeJSON(s, store.SecDoc, &s.doc)
}

// Stats returns the collection's indexer stats (nil: none).
func (s *collState) Stats() (*readmodel.CollectionStats, error) {
	return s.stats, decodeJSON(s, store.SecStats, &s.stats)
}

// Analytics returns the collection's analytics (nil: none).
func (s *collState) Analytics() (*readmodel.Analytics, error) {
	return s.analytics, decodeJSON(s, store.SecAnalytics, &s.analytics)
}

// LastGood returns the collection's last good buyer floor (nil: none).
func (s *collState) LastGood() (*lastGood, error) {
	return s.lastGood, decodeJSON(s, store.SecLastGood, &s.lastGood)
}

// TokenAddrs returns the token addresses ("chain|address") the
// collection's tokens messages listed (nil before its first).
func (s *collState) TokenAddrs() ([]string, error) {
	var p *[]string
	if err := decodeJSON(s, store.SecTokenAddrs, &p); err != nil || p == nil {
		return s.tokenAddrs, err
	}
	s.tokenAddrs = *p
	return s.tokenAddrs, nil
}

// History returns the collection's detail history (render.History's
// encoding; nil: none).
func (s *collState) History() []byte {
	if !s.have[store.SecHistory] {
		s.history, s.have[store.SecHistory] = s.stored[store.SecHistory], true
	}
	return s.history
}

// Rows returns source src's rows of the collection (nil: none stored).
func (s *collState) Rows(src readmodel.Source) (*rowsInput, error) {
	i := listingSource(src)
	if i < 0 {
		return nil, nil
	}
	sec := rowsSections[i]
	if s.have[sec] {
		return s.rows[i], nil
	}
	if err := s.listings(); err != nil {
		return nil, err
	}
	if raw := s.stored[sec]; raw != nil {
		at, rows, err := store.DecodeRows(raw)
		if err != nil {
			return nil, err
		}
		s.rows[i] = &rowsInput{ObservedAt: at, Rows: rows}
	}
	s.have[sec] = true
	return s.rows[i], nil
}

// storedRows are the rows of both sources as the record was read: what
// the stored feed set refers to.
func (s *collState) storedRows() (book, mirror []readmodel.ListingRow, err error) {
	if err := s.listings(); err != nil {
		return nil, nil, err
	}
	var out [2][]readmodel.ListingRow
	for i, sec := range rowsSections {
		if s.dirty[sec] {
			if raw := s.stored[sec]; raw != nil {
				if _, out[i], err = store.DecodeRows(raw); err != nil {
					return nil, nil, err
				}
			}
			continue
		}
		in, err := s.Rows(listingSourceList[i])
		if err != nil {
			return nil, nil, err
		}
		if in != nil {
			out[i] = in.Rows
		}
	}
	return out[0], out[1], nil
}

// Feed returns the collection's feed head and the orderId hashes of its
// latest sales (a sales message needs no more of the feed).
func (s *collState) Feed() (store.FeedHead, []uint64, error) {
	if !s.have[store.SecFeedHead] {
		h, err := store.DecodeFeedHead(s.stored[store.SecFeedHead])
		if err != nil {
			return h, nil, err
		}
		s.head, s.have[store.SecFeedHead] = h, true
	}
	if !s.have[store.SecFeedSold] {
		sold, err := store.DecodeFeedSold(s.stored[store.SecFeedSold])
		if err != nil {
			return s.head, nil, err
		}
		s.sold, s.have[store.SecFeedSold] = sold, true
	}
	return s.head, s.sold, nil
}

// Set returns the listing set the feed last reported.
func (s *collState) Set() ([]readmodel.ListingRow, error) {
	if s.have[store.SecFeedSet] {
		return s.set, nil
	}
	if err := s.listings(); err != nil {
		return nil, err
	}
	if raw := s.stored[store.SecFeedSet]; raw != nil {
		book, mirror, err := s.storedRows()
		if err != nil {
			return nil, err
		}
		if s.set, err = store.DecodeFeedSet(raw, book, mirror); err != nil {
			return nil, err
		}
	}
	s.have[store.SecFeedSet] = true
	return s.set, nil
}

// touch records that section sec was set: it is written at save.
func (s *collState) touch(sec store.StateSection) { s.have[sec], s.dirty[sec] = true, true }

func (s *collState) setDoc(d *readmodel.CollectionDoc) { s.doc = d; s.touch(store.SecDoc) }
func (s *collState) setStats(v *readmodel.CollectionStats) {
	s.stats = v
	s.touch(store.SecStats)
}
func (s *collState) setAnalytics(v *readmodel.Analytics) {
	s.analytics = v
	s.touch(store.SecAnalytics)
}
func (s *collState) setLastGood(v *lastGood) { s.lastGood = v; s.touch(store.SecLastGood) }

// setHistory replaces the detail history; a render that records no new
// sample leaves the record as it was.
func (s *collState) setHistory(h []byte) {
	if !bytes.Equal(h, s.History()) {
		s.history = h
		s.touch(store.SecHistory)
	}
}

func (s *collState) setTokenAddrs(a []string) { s.tokenAddrs = a; s.touch(store.SecTokenAddrs) }
func (s *collState) setSold(sold []uint64)    { s.sold = sold; s.touch(store.SecFeedSold) }

// setSet replaces the listing set the feed last reported; the set was
// read first (Set).
func (s *collState) setSet(set []readmodel.ListingRow) { s.set = set; s.touch(store.SecFeedSet) }

// setRows replaces source src's rows. The feed set refers to the stored
// rows, so it is decoded first (it is encoded again against the new ones).
func (s *collState) setRows(src readmodel.Source, in *rowsInput) error {
	if _, err := s.Set(); err != nil {
		return err
	}
	i := listingSource(src)
	s.rows[i] = in
	s.touch(rowsSections[i])
	return nil
}

func (s *collState) changed() bool {
	for _, d := range s.dirty {
		if d {
			return true
		}
	}
	return len(s.pending) > 0
}

// encode returns s as a record: changed sections encoded again, the rest
// as read.
func (s *collState) encode() (store.CollectionState, error) {
	out := s.stored
	js := func(sec store.StateSection, v any, none bool) error {
		if !s.dirty[sec] {
			return nil
		}
		if none {
			out[sec] = nil
			return nil
		}
		b, err := store.EncodeJSON(v)
		out[sec] = b
		return err
	}
	if err := js(store.SecDoc, s.doc, s.doc == nil); err != nil {
		return out, err
	}
	if err := js(store.SecStats, s.stats, s.stats == nil); err != nil {
		return out, err
	}
	if err := js(store.SecAnalytics, s.analytics, s.analytics == nil); err != nil {
		return out, err
	}
	if err := js(store.SecLastGood, s.lastGood, s.lastGood == nil); err != nil {
		return out, err
	}
	if err := js(store.SecTokenAddrs, s.tokenAddrs, s.tokenAddrs == nil); err != nil {
		return out, err
	}
	if s.dirty[store.SecHistory] {
		out[store.SecHistory] = s.history
	}
	for i, sec := range rowsSections {
		if s.dirty[sec] {
			out[sec] = nil
			if in := s.rows[i]; in != nil {
				out[sec] = store.EncodeRows(in.ObservedAt, in.Rows)
			}
		}
	}
	if s.dirty[store.SecFeedHead] {
		out[store.SecFeedHead] = store.EncodeFeedHead(s.head)
	}
	if s.dirty[store.SecFeedSold] {
		out[store.SecFeedSold] = store.EncodeFeedSold(s.sold)
	}
	if s.dirty[store.SecFeedSet] || s.dirty[store.SecBook] || s.dirty[store.SecMirror] {
		// The set refers to the rows beside it: encoded again with them
		// (setRows decoded it against the rows it was stored with).
		set, err := s.Set()
		if err != nil {
			return out, err
		}
		var refs [2][]readmodel.ListingRow
		for i, src := range listingSourceList {
			in, err := s.Rows(src)
			if err != nil {
				return out, err
			}
			if in != nil {
				refs[i] = in.Rows
			}
		}
		out[store.SecFeedSet] = store.EncodeFeedSet(set, refs[0], refs[1])
	}
	return out, nil
}

// finish renders what the transaction's messages marked (flush) and saves
// what they changed: the last step before a batch's transaction commits.
func (a *applier) finish() error {
	if err := a.flush(); err != nil {
		return err
	}
	return a.save()
}

// save writes what the transaction changed: the inputs of other subjects
// (saveInputs) and the collection states (saveStates). Every collection a
// message or render of the transaction read is registered.
func (a *applier) save() error {
	if err := a.saveInputs(); err != nil {
		return err
	}
	for cid := range a.states {
		a.tx.Register(cid)
	}
	return a.saveStates()
}

// saveStates appends the feed events each collection's messages queued
// and stores every changed state, in collection order, then appends the
// same events to the market's feed in the order applied; the projector
// calls it before a transaction that applied or rendered commits.
func (a *applier) saveStates() error {
	cids := make([]string, 0, len(a.states))
	for cid, s := range a.states {
		if s.changed() {
			cids = append(cids, cid)
		}
	}
	sort.Strings(cids)
	for _, cid := range cids {
		s := a.states[cid]
		if len(s.pending) > 0 {
			h, _, err := s.Feed()
			if err != nil {
				return err
			}
			s.head = a.tx.AppendEvents(cid, h, s.pending) // of more than it keeps, the store encodes the last only
			s.touch(store.SecFeedHead)
			s.pending = nil
		}
		if s.dirty[store.SecDoc] {
			if err := a.docChanged(s); err != nil {
				return err
			}
		}
		rec, err := s.encode()
		if err != nil {
			return err
		}
		a.tx.PutCollectionState(cid, &rec, &s.dirty)
		s.stored, s.dirty = rec, [store.NumStateSections]bool{}
		if s.fresh && smallRecord(&rec) {
			a.created, s.fresh = a.created+1, false
		}
	}
	a.tx.AppendMarket(a.market)
	a.market = nil
	return nil
}

// smallRecord says whether st has a section of the small record (a
// collection's state always has one once it is saved with any but its
// listings): a state read without one is a collection seen for the first
// time.
func smallRecord(st *store.CollectionState) bool {
	for sec, b := range st {
		if b != nil && !store.ListingSection(store.StateSection(sec)) {
			return true
		}
	}
	return false
}

// docChanged writes what follows from a collection's new document besides
// its views: its {id} aliases, and its royalty's change (token views
// charge it in their listing's fees), against the document stored before.
func (a *applier) docChanged(s *collState) error {
	old, err := store.DecodeJSON[readmodel.CollectionDoc](s.stored[store.SecDoc])
	if err != nil {
		return err
	}
	var oldAliases []store.Alias
	var oldRoyalty *int64
	if old != nil {
		oldAliases, oldRoyalty = aliases(old), old.RoyaltyBps
	}
	if !readmodel.SameBps(oldRoyalty, s.doc.RoyaltyBps) {
		a.tx.RoyaltyChanged(s.cid)
	}
	a.tx.SetAliases(s.cid, oldAliases, aliases(s.doc))
	return nil
}

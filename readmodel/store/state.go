package store

import (
	"encoding/binary"
	"errors"
	"time"

	"github.com/dgraph-io/badger/v4"
	gojson "github.com/goccy/go-json"

	"github.com/marketd/marketd/readmodel"
)

// A collection's projection inputs are one state (schema 23) in two
// records: its document, stats, analytics, last good buyer floor, detail
// history, token addresses and its change feed's head and sold orderIds
// under i/cs/<cid>, and its listings (both listing sources' rows and the
// listing set the change feed last reported) under i/cl/<cid>. The
// projector loads the first with one read when a batch first touches the
// collection and the second when a message or render needs its listings,
// decodes the sections its messages need, and writes back each record of
// which a section changed.
//
// Before, the same inputs were ten keys in nine families, each a random
// read into the value log for every batch that touched the collection;
// inside a 3 GiB memory cgroup at 100,000 collections, where the value log
// does not fit the page cache, those reads paced the projector (945,000
// major faults in one step). And the feed's listing set repeated rows the
// listing sources held: now each row of the set that is a source's row is
// stored as a reference to it (EncodeFeedSet). The listings are a record
// of their own because they are most of a state's bytes and change with
// listings messages only: a stats message, a sale or a render's history
// sample rewrites the small record alone.
//
// Each record, packed like an input (packInput):
//
//	byte     stateRecord
//	then for each section, in StateSection order: uvarint length, bytes
//
// An empty section is a section that is not stored; each record leaves
// the other's sections empty.

// StateSection names one section of a collection's state record.
type StateSection int

// The sections, in record order. Appending one is backward compatible
// (an older record lacks it: empty); reordering needs a schema bump.
const (
	SecDoc        StateSection = iota // readmodel.CollectionDoc, JSON
	SecStats                          // readmodel.CollectionStats, JSON
	SecAnalytics                      // readmodel.Analytics, JSON
	SecLastGood                       // the last good buyer floor, JSON
	SecHistory                        // render.History's encoding
	SecTokenAddrs                     // the token addresses its tokens messages listed, JSON []string
	SecBook                           // the order book's rows (EncodeRows)
	SecMirror                         // the indexer mirror's rows (EncodeRows)
	SecFeedHead                       // the change feed's head: first and next, 8 bytes each
	SecFeedSold                       // OrderHash of the latest sales applied, 8 bytes each
	SecFeedSet                        // the listing set the feed last reported (EncodeFeedSet)
	NumStateSections
)

// CollectionState is a collection's state as stored, section by section;
// a nil section is not stored. The slices are the caller's: the
// store copies what it reads and does not keep what it is given past the
// transaction.
type CollectionState [NumStateSections][]byte

// stateRecord is the first byte of a state record: neither JSON nor a
// packed input (packedInput) starts with it.
const stateRecord = 0x05

var errCorruptState = corruptRecord("collection state record")

func encodeState(st *CollectionState) []byte {
	n := 1
	for _, s := range st {
		n += binary.MaxVarintLen32 + len(s)
	}
	b := make([]byte, 0, n)
	b = append(b, stateRecord)
	for _, s := range st {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	return b
}

// decodeState decodes a state record; its sections alias raw.
func decodeState(raw []byte) (CollectionState, error) {
	var st CollectionState
	if len(raw) == 0 || raw[0] != stateRecord {
		return st, errCorruptState
	}
	i := 1
	for s := range st {
		if i == len(raw) {
			break // a section appended since this record was written
		}
		n, w := binary.Uvarint(raw[i:])
		if w <= 0 || n > uint64(len(raw)-i-w) {
			return CollectionState{}, errCorruptState
		}
		i += w
		if n > 0 {
			st[s] = raw[i : i+int(n) : i+int(n)]
		}
		i += int(n)
	}
	if i != len(raw) {
		return CollectionState{}, errCorruptState
	}
	return st, nil
}

// ListingSection reports whether sec is kept in the listings record
// (i/cl/) rather than the small one (i/cs/).
func ListingSection(sec StateSection) bool {
	return sec == SecBook || sec == SecMirror || sec == SecFeedSet
}

func stateKey(cid string, listings bool) []byte {
	if listings {
		return key(pListingState, cid)
	}
	return key(pState, cid)
}

// CollectionState returns collection cid's state: the sections of its
// small record, or with listings those of its listings record (the other
// sections empty). A record that does not decode is damage (Damaged) and
// the transaction's error.
func (t *Tx) CollectionState(cid string, listings bool) (CollectionState, error) {
	raw, ok, err := t.getRaw(stateKey(cid, listings))
	var st CollectionState
	if err == nil && ok {
		st, err = readState(raw)
	}
	for sec := range st {
		if ListingSection(StateSection(sec)) != listings {
			st[sec] = nil // not this record's: never trusted from it
		}
	}
	if err != nil {
		t.err = errors.Join(t.err, err)
		return CollectionState{}, err
	}
	return st, nil
}

func readState(stored []byte) (CollectionState, error) {
	raw, err := unpackInput(stored)
	if err != nil {
		return CollectionState{}, errCorruptState
	}
	return decodeState(raw)
}

// PutCollectionState stores the records of collection cid's state of
// which a section changed (changed, by section). A changed order book
// (SecBook): the collection's token views show their native listing from
// it (natives.go), so the cached natives are dropped and TokensVersion
// moves. A changed feed head is written apart as well (e/s/<cid>), where
// the change feed's readers find it.
func (t *Tx) PutCollectionState(cid string, st *CollectionState, changed *[NumStateSections]bool) {
	var small, listings bool
	for sec, c := range changed {
		if c && ListingSection(StateSection(sec)) {
			listings = true
		} else if c {
			small = true
		}
	}
	for _, part := range [...]bool{false, true} {
		if (part && !listings) || (!part && !small) {
			continue
		}
		var rec CollectionState
		for sec := range st {
			if ListingSection(StateSection(sec)) == part {
				rec[sec] = st[sec]
			}
		}
		t.set(stateKey(cid, part), packInput(encodeState(&rec)))
	}
	if changed[SecBook] {
		t.touched = append(t.touched, nativesKey(cid))
		t.tokenWrites = true
	}
	if changed[SecFeedHead] {
		t.set(key(pFeed, cid), append([]byte(nil), st[SecFeedHead]...))
	}
}

// stateSection reads one section of collection cid's state in txn (nil
// when there is no record or no such section).
func stateSection(txn *badger.Txn, cid string, s StateSection) ([]byte, error) {
	it, err := txn.Get(stateKey(cid, ListingSection(s)))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var sec []byte
	err = it.Value(func(v []byte) error {
		st, err := readState(v)
		if err == nil && st[s] != nil {
			sec = append([]byte(nil), st[s]...)
		}
		return err
	})
	return sec, err
}

// EncodeJSON returns v's JSON for a state section: the bytes
// encoding/json writes, written with github.com/goccy/go-json in about
// half the time.
func EncodeJSON(v any) ([]byte, error) { return gojson.Marshal(v) }

// DecodeJSON decodes a JSON state section or input (Tx.Input) into a new
// T; nil for an empty one. One that does not decode is damage (Damaged).
func DecodeJSON[T any](sec []byte) (*T, error) {
	if len(sec) == 0 {
		return nil, nil
	}
	var v T
	if err := gojson.Unmarshal(sec, &v); err != nil {
		return nil, errCorruptJSON
	}
	return &v, nil
}

var errCorruptJSON = corruptRecord("JSON input")

// EncodeRows encodes a source's listing rows observed at observedAt for
// SecBook or SecMirror.
func EncodeRows(observedAt time.Time, rows []readmodel.ListingRow) []byte {
	return encodeRows(observedAt, rows)
}

// DecodeRows decodes what EncodeRows wrote. The rows' strings share one
// copy of sec.
func DecodeRows(sec []byte) (time.Time, []readmodel.ListingRow, error) { return decodeRows(sec) }

// EncodeFeedHead encodes a feed head for SecFeedHead.
func EncodeFeedHead(h FeedHead) []byte {
	b := binary.BigEndian.AppendUint64(make([]byte, 0, 16), h.First)
	return binary.BigEndian.AppendUint64(b, h.Next)
}

// DecodeFeedHead decodes SecFeedHead; an empty section is a feed with no
// event yet.
func DecodeFeedHead(sec []byte) (FeedHead, error) {
	if len(sec) == 0 {
		return FeedHead{First: 1, Next: 1}, nil
	}
	if len(sec) != 16 {
		return FeedHead{}, errCorruptState
	}
	return FeedHead{First: binary.BigEndian.Uint64(sec), Next: binary.BigEndian.Uint64(sec[8:])}, nil
}

// EncodeFeedSold encodes the sold orderIds' hashes for SecFeedSold.
func EncodeFeedSold(sold []uint64) []byte {
	if len(sold) == 0 {
		return nil
	}
	b := make([]byte, 0, 8*len(sold))
	for _, h := range sold {
		b = binary.BigEndian.AppendUint64(b, h)
	}
	return b
}

// DecodeFeedSold decodes SecFeedSold.
func DecodeFeedSold(sec []byte) ([]uint64, error) {
	if len(sec)%8 != 0 {
		return nil, errCorruptState
	}
	if len(sec) == 0 {
		return nil, nil
	}
	out := make([]uint64, len(sec)/8)
	for i := range out {
		out[i] = binary.BigEndian.Uint64(sec[8*i:])
	}
	return out, nil
}

// The feed's listing set (SecFeedSet) is, nearly always, rows the listing
// sources hold: the merged snapshot of the rows when the feed last diffed
// them. Each such row is stored as a reference to the source's row, so a
// listed token's row is kept once; a row no source holds as it is (the
// set outlived its source's change) is stored whole.
//
//	byte     feedSetRecord
//	uvarint  the number of rows, then for each a uvarint tag: 0 and the
//	         row (appendRow against no reference), 2i+1 for the order
//	         book's i-th row, 2i+2 for the mirror's i-th
const feedSetRecord = 0x06

var errCorruptFeedSet = corruptRecord("feed listing set")

// EncodeFeedSet encodes the feed's listing set against the rows of the
// order book and the mirror that are stored beside it in the same record.
func EncodeFeedSet(set, book, mirror []readmodel.ListingRow) []byte {
	if len(set) == 0 {
		return nil
	}
	var none readmodel.TokenDoc
	refs := make(map[string]uint64, len(book)+len(mirror))
	var scratch []byte
	index := func(rows []readmodel.ListingRow, odd uint64) {
		for i := range rows {
			scratch = appendRow(scratch[:0], &rows[i], &none)
			if _, dup := refs[string(scratch)]; !dup {
				refs[string(scratch)] = 2*uint64(i) + odd
			}
		}
	}
	index(book, 1)
	index(mirror, 2)
	b := make([]byte, 0, 8+4*len(set))
	b = append(b, feedSetRecord)
	b = binary.AppendUvarint(b, uint64(len(set)))
	for i := range set {
		scratch = appendRow(scratch[:0], &set[i], &none)
		if tag, ok := refs[string(scratch)]; ok {
			b = binary.AppendUvarint(b, tag)
			continue
		}
		b = binary.AppendUvarint(b, 0)
		b = append(b, scratch...)
	}
	return b
}

// DecodeFeedSet decodes what EncodeFeedSet wrote against the same book
// and mirror rows. A referenced row is a copy of the source's.
func DecodeFeedSet(sec []byte, book, mirror []readmodel.ListingRow) ([]readmodel.ListingRow, error) {
	if len(sec) == 0 {
		return nil, nil
	}
	if sec[0] != feedSetRecord {
		return nil, errCorruptFeedSet
	}
	var none readmodel.TokenDoc
	r := &recDecoder{recReader: recReader{s: string(sec[1:])}, doc: &none, inRow: true}
	n := r.uvarint()
	if r.bad || n > uint64(len(r.s)-r.i) { // every row takes at least a byte
		return nil, errCorruptFeedSet
	}
	rows := make([]readmodel.ListingRow, n)
	for i := range rows {
		tag := r.uvarint()
		switch {
		case r.bad:
		case tag == 0:
			rows[i].Fields(r)
		case tag%2 == 1 && (tag-1)/2 < uint64(len(book)):
			rows[i] = book[(tag-1)/2]
		case tag%2 == 0 && (tag-2)/2 < uint64(len(mirror)):
			rows[i] = mirror[(tag-2)/2]
		default:
			r.fail()
		}
	}
	if r.bad || r.i != len(r.s) {
		return nil, errCorruptFeedSet
	}
	return rows, nil
}

package store

import (
	"time"
	"unsafe"

	"github.com/cespare/xxhash/v2"
	"github.com/dgraph-io/badger/v4"

	"github.com/marketd/marketd/readmodel"
)

// An EVM token's view shows its cheapest native order-book row still live
// at read time. The rows are read, when a view is rendered, from the
// collection's order book (the order book's section of its state record,
// which the projector keeps for the listing snapshot anyway), decoded once per
// collection and kept in the cache until a commit writes that order book:
// Tx.PutCollectionState then drops them and moves TokensVersion.
//
// Until schema 22 each token record carried its native rows, so every
// order-book change rewrote the records of the tokens whose rows changed,
// and with them their token blocks (10 KB each at 100 tokens a
// collection): at 10,000 collections x 100 tokens about 1,100 of a step
// cycle's 2,800 block writes, each after reading the block back, and a
// second copy of every native listing row on disk.

// natives is a collection's order book as token views read it.
type natives struct {
	// stamp is a hash of the stored order book (0: none stored): a cached
	// token view rendered under another stamp is rendered again.
	stamp uint64
	rows  map[string][]readmodel.ListingRow // nativeSets of the book
	size  int64                             // approximate bytes held, for the cache
}

// nativeSets maps each EVM token key of rows, observed at observedAt, to
// its native rows live at observedAt, in the rows' order: what a token's
// view chooses its native listing from.
func nativeSets(observedAt time.Time, rows []readmodel.ListingRow) map[string][]readmodel.ListingRow {
	var m map[string][]readmodel.ListingRow
	for i := range rows {
		r := &rows[i]
		if !r.Chain.IsEVM() || !r.Native() || !r.Live(observedAt) {
			continue
		}
		if m == nil {
			m = map[string][]readmodel.ListingRow{}
		}
		k := readmodel.TokenKey(r.Chain, r.ContractAddress, r.TokenID)
		m[k] = append(m[k], *r)
	}
	return m
}

// nativesPrefix prefixes the cache key of a collection's natives.
const nativesPrefix = "nb|"

// nativesKey is the cache key of collection cid's natives.
func nativesKey(cid string) string { return nativesPrefix + cid }

// nativesOf returns collection cid's natives from the cache, reading and
// caching them when they are not there. A cached value is read without
// allocating.
func (s *Store) nativesOf(cid string) (*natives, error) {
	var kb [viewKeyBuf]byte
	v, gen, ok := s.cache.getBytes(append(append(kb[:0], nativesPrefix...), cid...))
	if ok {
		return v.(*natives), nil
	}
	var n *natives
	err := s.db.View(func(txn *badger.Txn) (err error) {
		n, err = readNatives(txn, cid)
		return err
	})
	if err != nil {
		return nil, internal(err, "read order book")
	}
	s.cache.put(nativesKey(cid), n, gen)
	return n, nil
}

// readNatives reads collection cid's natives in txn. A stored order book
// that does not decode is an error.
func readNatives(txn *badger.Txn, cid string) (*natives, error) {
	raw, err := stateSection(txn, cid, SecBook)
	if err != nil || raw == nil {
		return &natives{}, err
	}
	at, rows, err := decodeRows(raw)
	if err != nil {
		return nil, err
	}
	n := &natives{stamp: xxhash.Sum64(raw) | 1, rows: nativeSets(at, rows)}
	// The rows' strings share one copy of the section.
	n.size = int64(len(raw))
	for _, rs := range n.rows {
		n.size += int64(len(rs)) * int64(unsafe.Sizeof(readmodel.ListingRow{}))
	}
	return n, nil
}

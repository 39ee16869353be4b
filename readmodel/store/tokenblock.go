package store

import (
	"encoding/binary"
	"errors"
	"slices"
	"strings"

	"github.com/dgraph-io/badger/v4"
	"github.com/klauspost/compress/s2"

	"github.com/marketd/marketd/readmodel"
)

// Token records are stored in blocks, one per (chain|address, bucket):
//
//	key    i/tk/ lp(chain "|" address) bucket (4 bytes, big endian)
//	value  an S2 block of: uvarint count, then per token in token-id
//	       order lp(token id) lp(record) (the record as EncodeTokenRecord
//	       writes it)
//
// The bucket is the one of the message that wrote the token (ingest
// splits a collection's tokens into buckets of about 128 by
// readmodel.TokenBucket), so one tokens message rewrites one block. At
// 10,000 collections x 100 tokens this keeps about 10,000 keys instead of
// a million, and a block compresses the fields its tokens repeat (chain,
// address, collection, image URL prefixes) that a record alone could not:
// schema 11 stored a token in 110 bytes instead of 407 (key and record).
//
// A transaction loads all blocks of an address the first time it touches
// one of its tokens (usually one block; a collection of 10,000 tokens has
// 128), edits them in memory, and writes the blocks it changed when it
// commits (Tx.flushTokens).

// tokenAddr splits a token key (readmodel.TokenKey) into its chain|address
// part and its token id; ok is false for a key without two separators.
func tokenAddr(k string) (addr, id string, ok bool) {
	i := strings.IndexByte(k, '|')
	if i < 0 {
		return "", "", false
	}
	j := strings.IndexByte(k[i+1:], '|')
	if j < 0 {
		return "", "", false
	}
	return k[:i+1+j], k[i+2+j:], true
}

func tokenBlockKey(addr string, bucket uint32) []byte {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], bucket)
	return key(pTokenBlock, addr, string(b[:]))
}

// tokenBlockPrefix is the prefix of every block key of addr.
func tokenBlockPrefix(addr string) []byte { return key(pTokenBlock, addr, "") }

// maxTokenBlock bounds a decoded block (a bucket of ~256 tokens is ~100 KiB).
const maxTokenBlock = 64 << 20

var errCorruptTokenBlock = corruptRecord("token block")

// tokenBlock is one block as a transaction holds it: records by token id.
type tokenBlock struct {
	recs  map[string]string
	dirty bool
}

// tokenSet is every block of one address as a transaction holds them.
type tokenSet struct {
	blocks map[uint32]*tokenBlock
	where  map[string]uint32 // token id -> bucket of the block holding it
}

// decodeTokenBlock calls fn with each (token id, record) of a stored
// block, in token-id order. The slices alias the decoded block.
func decodeTokenBlock(v []byte, fn func(id, rec string) bool) error {
	raw, ok := decodeBounded(v, maxTokenBlock, s2.Decode)
	if !ok {
		return errCorruptTokenBlock
	}
	r := recReader{s: string(raw)}
	n := r.uvarint()
	for i := uint64(0); i < n && !r.bad; i++ {
		id := r.str("")
		l := r.uvarint()
		if r.bad || l > uint64(len(r.s)-r.i) {
			return errCorruptTokenBlock
		}
		rec := r.s[r.i : r.i+int(l)]
		r.i += int(l)
		if !fn(id, rec) {
			return nil
		}
	}
	if r.bad || r.i != len(r.s) {
		return errCorruptTokenBlock
	}
	return nil
}

// encodeTokenBlock encodes and compresses a block's records.
func encodeTokenBlock(recs map[string]string) []byte {
	ids := make([]string, 0, len(recs))
	size := 8
	for id, rec := range recs {
		ids = append(ids, id)
		size += len(id) + len(rec) + 8
	}
	slices.Sort(ids)
	b := make([]byte, 0, size)
	b = binary.AppendUvarint(b, uint64(len(ids)))
	for _, id := range ids {
		b = appendStr(b, id, "\x00") // never the reference: always stored
		b = binary.AppendUvarint(b, uint64(len(recs[id])))
		b = append(b, recs[id]...)
	}
	return s2.Encode(nil, b)
}

// tokens returns the blocks of addr as this transaction holds them,
// loading them on first use.
func (t *Tx) tokens(addr string) (*tokenSet, error) {
	if set, ok := t.toks[addr]; ok {
		return set, nil
	}
	set := &tokenSet{blocks: map[uint32]*tokenBlock{}, where: map[string]uint32{}}
	prefix := tokenBlockPrefix(addr)
	// Blocks are written only when the transaction commits
	// (flushTokens), so what was committed is what it holds.
	err := t.committedView().scan(prefix, nil, true, func(k, v []byte) (bool, error) {
		if len(k) != len(prefix)+4 {
			return false, errCorruptTokenBlock
		}
		bucket := binary.BigEndian.Uint32(k[len(prefix):])
		blk := &tokenBlock{recs: map[string]string{}}
		err := decodeTokenBlock(v, func(id, rec string) bool {
			blk.recs[id] = rec
			set.where[id] = bucket
			return true
		})
		set.blocks[bucket] = blk
		return err == nil, err
	})
	if err != nil {
		return nil, err
	}
	if t.toks == nil {
		t.toks = map[string]*tokenSet{}
	}
	t.toks[addr] = set
	return set, nil
}

// tokenRaw returns token k's stored record; ok is false when there is
// none.
func (t *Tx) tokenRaw(k string) (rec string, ok bool, err error) {
	addr, id, ok := tokenAddr(k)
	if !ok {
		return "", false, nil
	}
	set, err := t.tokens(addr)
	if err != nil {
		return "", false, err
	}
	b, ok := set.where[id]
	if !ok {
		return "", false, nil
	}
	return set.blocks[b].recs[id], true, nil
}

// putTokenRaw stores rec as token k's record in block bucket, removing it
// from the block that held it before.
func (t *Tx) putTokenRaw(k string, bucket uint32, rec string) {
	if t.err != nil {
		return
	}
	addr, id, ok := tokenAddr(k)
	if !ok {
		t.err = readmodel.Errorf(readmodel.Internal, "token key %q has no address", k)
		return
	}
	set, err := t.tokens(addr)
	if err != nil {
		t.err = err
		return
	}
	if was, ok := set.where[id]; ok && was != bucket {
		blk := set.blocks[was]
		delete(blk.recs, id)
		blk.dirty = true
	}
	blk := set.blocks[bucket]
	if blk == nil {
		blk = &tokenBlock{recs: map[string]string{}}
		set.blocks[bucket] = blk
	}
	blk.recs[id] = rec
	blk.dirty = true
	set.where[id] = bucket
}

// deleteToken removes token k from whichever block holds it.
func (t *Tx) deleteToken(k string) {
	if t.err != nil {
		return
	}
	addr, id, ok := tokenAddr(k)
	if !ok {
		return
	}
	set, err := t.tokens(addr)
	if err != nil {
		t.err = err
		return
	}
	if was, ok := set.where[id]; ok {
		blk := set.blocks[was]
		delete(blk.recs, id)
		blk.dirty = true
		delete(set.where, id)
	}
}

// flushTokens writes the blocks this transaction changed (an emptied
// block is deleted). Update calls it before committing.
func (t *Tx) flushTokens() {
	addrs := make([]string, 0, len(t.toks))
	for a := range t.toks {
		addrs = append(addrs, a)
	}
	slices.Sort(addrs) // deterministic write order
	for _, addr := range addrs {
		set := t.toks[addr]
		for bucket, blk := range set.blocks {
			if !blk.dirty {
				continue
			}
			if len(blk.recs) == 0 {
				t.del(tokenBlockKey(addr, bucket))
			} else {
				t.set(tokenBlockKey(addr, bucket), encodeTokenBlock(blk.recs))
			}
			blk.dirty = false
		}
	}
}

// readTokenRecord reads token k's record outside a transaction (the read
// path): the block its bucket among the address's blocks names first,
// then, when the token is not there (its collection's bucket count
// changed, or a bucket is empty), every block of the address.
func (s *Store) readTokenRecord(k string) (string, bool, error) {
	addr, id, ok := tokenAddr(k)
	if !ok {
		return "", false, nil
	}
	var rec string
	found := false
	err := s.db.View(func(txn *badger.Txn) error {
		prefix := tokenBlockPrefix(addr)
		var buckets []uint32
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix, PrefetchValues: false})
		for it.Seek(prefix); it.ValidForPrefix(prefix); it.Next() {
			if k := it.Item().Key(); len(k) == len(prefix)+4 {
				buckets = append(buckets, binary.BigEndian.Uint32(k[len(prefix):]))
			}
		}
		it.Close()
		if len(buckets) == 0 {
			return nil
		}
		first := readmodel.TokenBucket(k, int(buckets[len(buckets)-1])+1)
		order := append([]uint32{first}, buckets...)
		for i, b := range order {
			if i > 0 && b == first {
				continue
			}
			item, err := txn.Get(tokenBlockKey(addr, b))
			if errors.Is(err, badger.ErrKeyNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			err = item.Value(func(v []byte) error {
				return decodeTokenBlock(v, func(tid, r string) bool {
					if tid == id {
						rec, found = r, true
						return false
					}
					return true
				})
			})
			if err != nil || found {
				return err
			}
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, errCorruptTokenBlock) {
			return "", false, readmodel.Errorf(readmodel.Internal, "corrupt token block")
		}
		return "", false, internal(err, "read token")
	}
	return rec, found, nil
}

// eachTokenRecord calls fn with every token's key and record, by address
// and then token id (the order does not depend on the blocks' buckets).
func eachTokenRecord(txn *badger.Txn, stop func() error, fn func(k, rec string) error) error {
	it := txn.NewIterator(badger.IteratorOptions{Prefix: pTokenBlock, PrefetchValues: true, PrefetchSize: 16})
	defer it.Close()
	type entry struct{ id, rec string }
	var addr string
	var group []entry
	emit := func() error {
		slices.SortFunc(group, func(a, b entry) int { return strings.Compare(a.id, b.id) })
		for _, e := range group {
			if err := fn(addr+"|"+e.id, e.rec); err != nil {
				return err
			}
		}
		group = group[:0]
		return nil
	}
	for it.Seek(pTokenBlock); it.ValidForPrefix(pTokenBlock); it.Next() {
		if err := stop(); err != nil {
			return err
		}
		k := it.Item().Key()[len(pTokenBlock):]
		n, w := binary.Uvarint(k)
		if w <= 0 || uint64(len(k)-w) != n+4 {
			return errCorruptTokenBlock
		}
		a := string(k[w : w+int(n)])
		if a != addr {
			if err := emit(); err != nil {
				return err
			}
			addr = a
		}
		err := it.Item().Value(func(v []byte) error {
			return decodeTokenBlock(v, func(id, rec string) bool {
				group = append(group, entry{id, rec})
				return true
			})
		})
		if err != nil {
			return err
		}
	}
	return emit()
}

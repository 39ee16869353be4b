package projector

import (
	"encoding/binary"
	"reflect"
	"sort"
	"strconv"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/store"
)

// token returns token k's record, nil when none, decoding it at most
// once per transaction.
func (a *applier) token(k string) (*store.TokenRecord, error) {
	if t, ok := a.toks[k]; ok {
		return t, nil
	}
	t, err := a.tx.TokenRecord(k)
	if err != nil {
		return nil, err
	}
	a.putTokenMemo(k, t)
	return t, nil
}

// tokenHead returns the hash and bucket of token k's record as this
// transaction last wrote or read it; ok is false when there is none.
func (a *applier) tokenHead(k string) (hash uint64, bucket uint32, ok bool, err error) {
	if t, seen := a.toks[k]; seen {
		if t == nil {
			return 0, 0, false, nil
		}
		return t.Hash, t.Bucket, true, nil
	}
	return a.tx.TokenRecordHead(k)
}

func (a *applier) putTokenMemo(k string, t *store.TokenRecord) {
	if a.toks == nil {
		a.toks = map[string]*store.TokenRecord{}
	}
	a.toks[k] = t
}

func (a *applier) applyTokens(msg *readmodel.Message) error {
	cid := msg.CollectionID
	bucket := strconv.FormatUint(uint64(msg.Bucket), 10)
	old, err := store.Get[tokenBucket](a.tx, store.InTokenBucket, cid, bucket)
	if err != nil {
		return err
	}
	gen, err := a.tokenGen(cid)
	if err != nil {
		return err
	}
	// known holds the hash this bucket last wrote for each of its tokens.
	// While no bucket of the collection has seen a new bucket count, or
	// deleted a token, since (the generation is the same), no token has
	// left this bucket for another, so a token's record is still the one
	// this bucket wrote and its hash decides without reading the record
	// (at 100,000 collections those reads were random disk reads).
	// Otherwise, and for messages without a count, the record is read.
	known := map[string]uint64{}
	trust := false
	if old != nil {
		trust = msg.Buckets != 0 && old.Buckets == msg.Buckets && old.Gen == gen && len(old.Hashes) == len(old.Keys)
		for i, k := range old.Keys {
			var h uint64
			if trust {
				h = old.Hashes[i]
			}
			known[k] = h
		}
	}
	keep := make(map[string]bool, len(msg.Tokens))
	var rec *store.TokenRecord
	next := tokenBucket{Buckets: msg.Buckets, Keys: make([]string, 0, len(msg.Tokens)), Hashes: make([]uint64, 0, len(msg.Tokens))}
	for i := range msg.Tokens {
		d := msg.Tokens[i]
		if !d.Chain.Valid() || d.ContractAddress == "" || d.TokenID == "" {
			continue
		}
		if d.CollectionID == "" {
			d.CollectionID = cid
		}
		k := readmodel.TokenKey(d.Chain, d.ContractAddress, d.TokenID)
		if keep[k] {
			continue
		}
		keep[k] = true
		if rec == nil {
			rec = new(store.TokenRecord)
		}
		*rec = store.TokenRecord{Bucket: msg.Bucket, ObservedAt: msg.ObservedAt, Doc: d}
		sum := rec.HashDoc() // the encoding is kept: a changed token's record is written from it
		next.Keys, next.Hashes = append(next.Keys, k), append(next.Hashes, sum)
		// A bucket is republished when any of its tokens changed; a token
		// whose document is unchanged keeps its record (what depends on
		// the clock, its listing's expiry, is decided on read). A token
		// new to the bucket has no record here to compare.
		same := false
		if h, listed := known[k]; listed && trust {
			same = h == sum
		} else if listed {
			h, b, ok, err := a.tokenHead(k)
			if err != nil {
				return err
			}
			same = ok && h == sum && b == msg.Bucket
		}
		if same {
			// Its record is not rewritten: it stays the one written from
			// the same document, observation time included. In a step of
			// the simulated market five in six tokens of a republished
			// bucket are unchanged.
			continue
		}
		a.putTokenMemo(k, rec)
		rec = nil // kept; an unchanged token's is reused for the next
		if err := a.touchToken(k); err != nil {
			return err
		}
	}
	deleted := false
	if old != nil {
		for _, k := range old.Keys {
			if keep[k] {
				continue
			}
			// When a collection's bucket count changes its tokens move
			// between buckets, and the bucket a token joined may have come
			// first: such a token belongs to another bucket now and stays.
			_, b, ok, err := a.tokenHead(k)
			if err != nil {
				return err
			}
			if ok && b != msg.Bucket {
				continue
			}
			a.putTokenMemo(k, nil)
			a.tx.DeleteTokenRecord(k)
			deleted = true
		}
	}
	if old == nil || old.Buckets != msg.Buckets || msg.Buckets == 0 || deleted {
		// Tokens may have moved between this collection's buckets: every
		// other bucket reads its tokens' records once more.
		gen++
		a.tx.PutRaw(store.InTokenGen, binary.BigEndian.AppendUint64(nil, gen), cid)
	}
	next.Gen = gen
	a.tx.Put(store.InTokenBucket, next, cid, bucket)
	return nil
}

// tokenGen returns the generation of collection cid's token buckets (0
// before its first).
func (a *applier) tokenGen(cid string) (uint64, error) {
	raw, err := a.tx.GetRaw(store.InTokenGen, cid)
	if err != nil || len(raw) != 8 {
		return 0, err
	}
	return binary.BigEndian.Uint64(raw), nil
}

// tokenBucket is a bucket's stored input (store.InTokenBucket): the
// collection's bucket count and generation when the bucket was last
// applied, the keys of the tokens it listed, and the hash of each one's
// document as it wrote it (store.TokenRecord.Hash), in the same order.
type tokenBucket struct {
	Buckets uint32   `json:"n,omitempty"`
	Gen     uint64   `json:"g,omitempty"` // the collection's generation after it was applied (tokenGen)
	Keys    []string `json:"k"`
	Hashes  []uint64 `json:"h"`
}

// writeToken writes token k's record: its document as last applied and
// the native order-book rows of its collection live for it (the store
// renders the view from them on read). A token without a document has
// nothing to write (applyTokens deleted it).
func (a *applier) writeToken(k string) error {
	t, err := a.token(k)
	if err != nil || t == nil {
		return err
	}
	r := *t
	r.Native = nil
	if r.Doc.Chain.IsEVM() {
		idx, err := a.nativeRows(r.Doc.CollectionID)
		if err != nil {
			return err
		}
		r.Native = idx[k]
	}
	r.Version = a.ver()
	a.tx.PutTokenRecord(k, &r)
	a.putTokenMemo(k, &r)
	return nil
}

// nativeRows returns collection cid's native order-book rows live at the
// book's observation, by token key (what a token record holds), built once
// per transaction and order book.
func (a *applier) nativeRows(cid string) (map[string][]readmodel.ListingRow, error) {
	if m, ok := a.natives[cid]; ok {
		return m, nil
	}
	ob, err := a.orderBook(cid)
	if err != nil {
		return nil, err
	}
	m := nativeSets(ob)
	if a.natives == nil {
		a.natives = map[string]map[string][]readmodel.ListingRow{}
	}
	a.natives[cid] = m
	return m, nil
}

// renderTokensOf re-writes the records of the tokens whose native
// listings changed between the old and the current order-book rows of a
// collection: a token's view shows its cheapest native row live when it
// is read, so a token whose live native rows are the same, unchanged,
// keeps its record. In a steady cycle most rows are unchanged, so this
// touches few tokens instead of every listed one.
func (a *applier) renderTokensOf(old, cur *rowsInput) error {
	before := nativeSets(old)
	after := nativeSets(cur)
	keys := make([]string, 0, len(before)+len(after))
	for k, r := range after {
		if o, ok := before[k]; !ok || !reflect.DeepEqual(o, r) {
			keys = append(keys, k)
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := a.touchToken(k); err != nil {
			return err
		}
	}
	return nil
}

// nativeSets maps each EVM token key of in's rows to its native rows live
// at in.ObservedAt, in the rows' order.
func nativeSets(in *rowsInput) map[string][]readmodel.ListingRow {
	if in == nil {
		return nil
	}
	m := map[string][]readmodel.ListingRow{}
	for i := range in.Rows {
		r := &in.Rows[i]
		if !r.Chain.IsEVM() || !r.Native() || !r.Live(in.ObservedAt) {
			continue
		}
		k := readmodel.TokenKey(r.Chain, r.ContractAddress, r.TokenID)
		m[k] = append(m[k], *r)
	}
	return m
}

package projector

import (
	"slices"
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

// indexTokens applies the tokens messages the batch applied, in order,
// to the token index.
func (a *applier) indexTokens() error {
	for _, m := range a.tokenMsgs {
		if err := a.applyTokens(m); err != nil {
			return err
		}
	}
	a.tokenMsgs = nil
	return nil
}

// applyTokens applies a tokens message: the complete token set of bucket
// msg.Bucket of its collection. A token whose stored record (its hash and
// bucket; the token blocks hold them) is the one this document would
// write keeps it; the others are written. The bucket's tokens that the
// message no longer lists are deleted: those the token blocks of the
// collection's addresses (its state's token addresses) hold in this bucket for this
// collection, and those this transaction wrote into it (not in the blocks
// until the batch's flush). A token that moved to another bucket (the
// collection's bucket count changed) is in that bucket's block and stays.
//
// Until schema 15 each bucket also stored its tokens' keys and hashes
// (i/tb/, 41.5 MB of 885 at 10,000 collections x 100 tokens), so an
// unchanged bucket decided without reading a record: when each record
// was its own key, one random read per token. The token blocks hold the
// hashes and buckets now, an address's blocks read once a transaction.
func (a *applier) applyTokens(msg *readmodel.Message) error {
	cid := msg.CollectionID
	st, err := a.loaded(cid)
	if err != nil {
		return err
	}
	addrs, err := st.TokenAddrs()
	if err != nil {
		return err
	}
	newAddr := false
	keep := make(map[string]bool, len(msg.Tokens))
	var rec *store.TokenRecord
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
		if addr := k[:len(k)-len(d.TokenID)-1]; !slices.Contains(addrs, addr) {
			addrs, newAddr = append(addrs, addr), true
		}
		if rec == nil {
			rec = new(store.TokenRecord)
		}
		*rec = store.TokenRecord{Bucket: msg.Bucket, ObservedAt: msg.ObservedAt, Doc: d}
		sum := rec.HashDoc() // the encoding is kept: a changed token's record is written from it
		// A bucket is republished when any of its tokens changed; a token
		// whose document is unchanged keeps its record (what depends on
		// the clock, its listing's expiry, is decided on read). In a step
		// of the simulated market five in six tokens of a republished
		// bucket are unchanged.
		h, b, ok, err := a.tokenHead(k)
		if err != nil {
			return err
		}
		if ok && h == sum && b == msg.Bucket {
			continue
		}
		a.putTokenMemo(k, rec)
		a.noteBucketToken(cid, msg.Bucket, k)
		rec = nil // kept; an unchanged token's is reused for the next
		if err := a.touchToken(k); err != nil {
			return err
		}
	}
	if newAddr {
		st.setTokenAddrs(addrs)
	}
	var cands []string
	for _, addr := range addrs {
		keys, err := a.tx.TokenBlockKeys(addr, msg.Bucket)
		if err != nil {
			return err
		}
		cands = append(cands, keys...)
	}
	for k := range a.bucketToks[bucketKey(cid, msg.Bucket)] {
		cands = append(cands, k)
	}
	sort.Strings(cands)
	for i, k := range cands {
		if keep[k] || (i > 0 && cands[i-1] == k) {
			continue
		}
		t, err := a.token(k)
		if err != nil {
			return err
		}
		// Only this collection's token in this bucket: another collection
		// may share the address, and a token may have moved on since.
		if t == nil || t.Bucket != msg.Bucket || t.Doc.CollectionID != cid {
			continue
		}
		a.putTokenMemo(k, nil)
		a.tx.DeleteTokenRecord(k)
	}
	return nil
}

func bucketKey(cid string, bucket uint32) string {
	return cid + "|" + strconv.FormatUint(uint64(bucket), 10)
}

// noteBucketToken remembers that this transaction wrote token k for
// collection cid's bucket: a later message of the bucket in the same
// batch must find it to delete it, before the flush puts it in a block.
func (a *applier) noteBucketToken(cid string, bucket uint32, k string) {
	if a.bucketToks == nil {
		a.bucketToks = map[string]map[string]bool{}
	}
	bk := bucketKey(cid, bucket)
	if a.bucketToks[bk] == nil {
		a.bucketToks[bk] = map[string]bool{}
	}
	a.bucketToks[bk][k] = true
}

// writeToken writes token k's record: its document as last applied (the
// store renders the view from it and the collection's order book on
// read). A token without a document has nothing to write (applyTokens
// deleted it).
func (a *applier) writeToken(k string) error {
	t, err := a.token(k)
	if err != nil || t == nil {
		return err
	}
	r := *t
	r.Version = a.ver()
	a.tx.PutTokenRecord(k, &r)
	a.putTokenMemo(k, &r)
	return nil
}

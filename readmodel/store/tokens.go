package store

import (
	"context"
	"slices"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/dgraph-io/badger/v4"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/render"
)

// PutTokenRecord writes token k's record (EncodeTokenRecord sets r.Hash)
// into the block of its bucket (r.Bucket), moving it out of the block that
// held it before. The blocks are written when the transaction commits.
func (t *Tx) PutTokenRecord(k string, r *TokenRecord) {
	t.putTokenRaw(k, r.Bucket, string(EncodeTokenRecord(r)))
	t.touched = append(t.touched, tokenCacheKey(k))
	t.tokenWrites = true
}

// DeleteTokenRecord removes token k (its view is gone with it).
func (t *Tx) DeleteTokenRecord(k string) {
	t.deleteToken(k)
	t.touched = append(t.touched, tokenCacheKey(k))
	t.tokenWrites = true
}

// TokenRecord reads token k's record; nil when there is none.
func (t *Tx) TokenRecord(k string) (*TokenRecord, error) {
	raw, ok, err := t.tokenRaw(k)
	if err != nil || !ok {
		return nil, err
	}
	return decodeTokenRecord(raw)
}

// TokenBlockKeys returns the keys of the tokens whose records are in
// address addr's ("chain|address") block bucket as this transaction holds
// it (its own writes included), in key order: the tokens a tokens message
// of that bucket wrote and no other bucket took since. Damaged blocks are
// the error.
func (t *Tx) TokenBlockKeys(addr string, bucket uint32) ([]string, error) {
	set, err := t.tokens(addr)
	if err != nil {
		return nil, err
	}
	blk := set.blocks[bucket]
	if blk == nil {
		return nil, nil
	}
	keys := make([]string, 0, len(blk.recs))
	for id := range blk.recs {
		keys = append(keys, addr+"|"+id)
	}
	slices.Sort(keys)
	return keys, nil
}

// TokenRecordHead reads the hash and bucket of token k's record without
// decoding the rest; ok is false when there is none.
func (t *Tx) TokenRecordHead(k string) (hash uint64, bucket uint32, ok bool, err error) {
	raw, ok, err := t.tokenRaw(k)
	if err != nil || !ok {
		return 0, 0, false, err
	}
	hash, bucket, ok = tokenRecordHead([]byte(raw))
	if !ok {
		return 0, 0, false, errCorruptTokenRecord
	}
	return hash, bucket, true, nil
}

// tokenCacheKey is the cache key of token k's rendered view.
func tokenCacheKey(k string) string { return string(pToken) + k }

// cachedToken is a rendered token view in the cache, good until (unix
// nanoseconds; 0: until its record changes) when a listing it shows or
// could show expires.
type cachedToken struct {
	view    render.TokenView
	until   int64
	cid     string // its collection,
	royalty *int64 // whose royaltyBps the view was rendered with,
	evm     bool   // and, for an EVM token,
	natives uint64 // the stamp of the order book it was rendered from
}

// Token returns the TokenDetail of (chain, address, tokenID), address and
// tokenID exactly as the API normalized them, rendered from the token's
// record as of now (a listing that expired is not shown); NotFound if the
// token is not indexed. It keeps no reference to its arguments: the API
// passes views of the request.
func (s *Store) Token(ctx context.Context, chain readmodel.Chain, address, tokenID string) (render.TokenView, error) {
	// pToken + readmodel.TokenKey(chain, address, tokenID), built on the
	// stack: a cached view is then read without allocating.
	var kb [viewKeyBuf]byte
	kk := append(append(kb[:0], pToken...), chain...)
	kk = append(append(append(append(kk, '|'), address...), '|'), tokenID...)
	now := s.now()
	c, gen, ok := s.cache.getBytes(kk)
	if ok {
		if ct := c.(cachedToken); ct.until == 0 || now.UnixNano() < ct.until {
			// The view charges its collection's royalty and shows a row
			// of its order book: still the same?
			royalty, err := s.royaltyOf(ct.cid)
			if err != nil {
				return render.TokenView{}, err
			}
			same := readmodel.SameBps(royalty, ct.royalty)
			if same && ct.evm {
				nb, err := s.nativesOf(ct.cid)
				if err != nil {
					return render.TokenView{}, err
				}
				same = nb.stamp == ct.natives
			}
			if same {
				ct.view.Until = ct.until
				return ct.view, nil
			}
		}
	}
	ck := string(kk)
	b, ok, err := s.readTokenRecord(ck[len(pToken):])
	if err != nil {
		return render.TokenView{}, err
	}
	if !ok {
		return render.TokenView{}, notFound("token")
	}
	r, err := decodeTokenRecord(b)
	if err != nil {
		return render.TokenView{}, readmodel.Errorf(readmodel.Internal, "corrupt token record")
	}
	royalty, err := s.royaltyOf(r.Doc.CollectionID)
	if err != nil {
		return render.TokenView{}, err
	}
	ct := cachedToken{cid: r.Doc.CollectionID, royalty: royalty, evm: r.Doc.Chain.IsEVM()}
	var native []readmodel.ListingRow
	if ct.evm {
		nb, err := s.nativesOf(ct.cid)
		if err != nil {
			return render.TokenView{}, err
		}
		native, ct.natives = nb.rows[ck[len(pToken):]], nb.stamp
	}
	v, until := RenderToken(r, native, royalty, now)
	q := s.USD()
	v.Body, v.USD = filledTimed(v.Body, q), q.Version
	var u int64
	if !until.IsZero() {
		u = until.UnixNano()
	}
	ct.view, ct.until = v, u
	s.cache.put(ck, ct, gen)
	v.Until = u
	return v, nil
}

// TokensVersion is a number that changes, after the write, whenever any
// token's record changes, the USD quote changes or the store is reset:
// while it holds, Token answers every token as before except where the
// clock passes a view's Until. Safe for concurrent use; it takes no lock.
func (s *Store) TokensVersion() uint64 { return s.cache.tokenGen.Load() }

// ViewsVersion is a number that changes, after the write, with every
// commit (whatever it wrote: views, token records, poll statuses, the
// USD quote) and every reset: while it holds, every read answers as
// before except where the clock passes a time the read itself reports
// (a listing's or cursor's expiry, a token view's Until, a floor's
// fallback). Safe for concurrent use; it takes no lock.
func (s *Store) ViewsVersion() uint64 { return s.cache.viewsGen.Load() }

// RenderToken renders record r's TokenDetail as of now (with USD slots,
// render.TemplateUSD) and returns when it next changes by the clock
// alone (zero: never). native is the token's native order-book rows live
// at the book's observation (nativeSets; EVM only): the view shows the
// cheapest still live. royaltyBps is the collection's royalty (nil:
// unknown), charged in the listing's fees. The version changes with the
// record, with the native row shown, with each listing row that expires
// and with the royalty.
func RenderToken(r *TokenRecord, native []readmodel.ListingRow, royaltyBps *int64, now time.Time) (render.TokenView, time.Time) {
	liveAt := now
	if liveAt.Before(r.ObservedAt) {
		liveAt = r.ObservedAt
	}
	in := render.TokenInputs{Doc: &r.Doc, ObservedAt: r.ObservedAt, LiveAt: liveAt, RoyaltyBps: royaltyBps}
	expired := uint64(0)
	if r.Doc.Chain.IsEVM() {
		for i := range native {
			n := &native[i]
			if !n.Live(liveAt) {
				expired++
				continue
			}
			if in.Native == nil || cheaper(n, in.Native) {
				in.Native = n
			}
		}
	}
	if o := r.Doc.Overlay; o != nil && o.ExpiresAt != nil && !o.ExpiresAt.After(liveAt) {
		expired++
	}
	v := render.TokenJSON(in)
	v.Body.Head, v.Body.Tail = render.TemplateUSD(v.Body.Head), render.TemplateUSD(v.Body.Tail)
	v.Version = r.Version<<8 | min(expired, 255)
	if in.Native != nil {
		// The record's version does not move with its order book: the
		// row shown is hashed in.
		bp := hashBuf.Get().(*[]byte)
		b := appendRow((*bp)[:0], in.Native, &r.Doc)
		v.Version ^= xxhash.Sum64(b)
		*bp = b
		hashBuf.Put(bp)
	}
	if royaltyBps != nil {
		// An odd multiplier keeps distinct royalties distinct, and unlike
		// an unknown one (no term), for the same record.
		v.Version ^= uint64(*royaltyBps+1) * 0x9e3779b97f4a7c15
	}
	return v, render.TokenDeadline(in)
}

// royaltyDoc is the part of a collection's document a token's view uses.
type royaltyDoc struct {
	RoyaltyBps *int64 `json:"royaltyBps"`
}

// readRoyaltyDoc reads the royalty of collection cid's document in txn
// (nil when it has none).
func readRoyaltyDoc(txn *badger.Txn, cid string) (*royaltyDoc, error) {
	sec, err := stateSection(txn, cid, SecDoc)
	if err != nil {
		return nil, err
	}
	return DecodeJSON[royaltyDoc](sec)
}

// cachedRoyalty is a collection's royalty in the cache (royaltyKey).
type cachedRoyalty struct{ bps *int64 }

// royaltyKey is the cache key of collection cid's royalty.
func royaltyKey(cid string) string { return "ry|" + cid }

// royaltyOf returns collection cid's royaltyBps from its document (nil:
// unknown, or no document yet). A commit that changes it drops the cached
// one (Tx.RoyaltyChanged); a cached token view rendered with another is
// rendered again. A cached royalty is read without allocating.
func (s *Store) royaltyOf(cid string) (*int64, error) {
	var kb [viewKeyBuf]byte
	v, gen, ok := s.cache.getBytes(append(append(kb[:0], "ry|"...), cid...))
	if ok {
		return v.(cachedRoyalty).bps, nil
	}
	k := royaltyKey(cid)
	var doc *royaltyDoc
	err := s.db.View(func(txn *badger.Txn) (err error) {
		doc, err = readRoyaltyDoc(txn, cid)
		return err
	})
	if err != nil {
		return nil, internal(err, "read royalty")
	}
	var bps *int64
	if doc != nil {
		bps = doc.RoyaltyBps
	}
	s.cache.put(k, cachedRoyalty{bps: bps}, gen)
	return bps, nil
}

// RoyaltyChanged says this transaction changed collection cid's
// royaltyBps: token views charge it in their listing's fees, so the
// commit drops the cached royalty (the tokens' cached views are rendered
// again when read) and moves TokensVersion.
func (t *Tx) RoyaltyChanged(cid string) {
	t.touched = append(t.touched, royaltyKey(cid))
	t.tokenWrites = true
}

// cheaper reports whether a's ask is below b's (exact; uninterpretable
// prices never win), ties by order id.
func cheaper(a, b *readmodel.ListingRow) bool {
	x, err := readmodel.ParseRaw(a.PriceRaw)
	if err != nil {
		return false
	}
	y, err := readmodel.ParseRaw(b.PriceRaw)
	if err != nil {
		return true
	}
	if c := x.Cmp(y); c != 0 {
		return c < 0
	}
	return a.OrderID < b.OrderID
}

package store

import (
	"context"
	"crypto/sha256"
	"encoding/binary"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/render"
)

// The sales view (GET /v1/collections/{id}/sales): each sale once under
// v/s/<collection hash><time><hash> (its record: salerec.go), deduplicated
// through i/sk/<collection hash><hash>. Written by projector/sales.go.

// hasSales reports whether cid is known to have sales committed. A sale
// is never removed, so once a collection has one it always has: AddSale
// then skips the seek that would find it.
func (s *Store) hasSales(cid string) bool {
	s.salesMu.Lock()
	defer s.salesMu.Unlock()
	_, ok := s.withSales[cid]
	return ok
}

// noteSales records, after a commit, the collections that now have sales
// committed: those the transaction found with some and those it added to.
func (s *Store) noteSales(seen map[string]map[[8]byte]struct{}) {
	if len(seen) == 0 {
		return
	}
	s.salesMu.Lock()
	defer s.salesMu.Unlock()
	if s.withSales == nil {
		s.withSales = map[string]struct{}{}
	}
	for cid, added := range seen {
		if added == nil || len(added) > 0 {
			s.withSales[cid] = struct{}{}
		}
	}
}

// salesPrefix is the prefix of collection cid's sale records.
func salesPrefix(cid string) []byte { return collectionHashed(pSale, collectionHash(cid)) }

// saleDedupePrefix is the prefix of collection cid's dedupe entries.
func saleDedupePrefix(cid string) []byte { return collectionHashed(pSaleKey, collectionHash(cid)) }

// collectionHash is the collection hash of id cid.
func collectionHash(cid string) [8]byte {
	h := sha256.Sum256([]byte(cid))
	return [8]byte(h[:8])
}

// collectionHashed is prefix, then collection hash h, with room for a sale
// key's suffix.
func collectionHashed(prefix []byte, h [8]byte) []byte {
	return append(append(make([]byte, 0, len(prefix)+8+saleSuffixLen), prefix...), h[:]...)
}

func saleSuffix(row *readmodel.SaleRow) []byte {
	h := sha256.Sum256([]byte(row.SaleKey()))
	var ts uint64
	if !row.Timestamp.IsZero() {
		ts = uint64(row.Timestamp.UnixNano()) ^ 1<<63
	}
	b := binary.BigEndian.AppendUint64(nil, ^ts)
	return append(b, h[:8]...)
}

// AddSale indexes sale row row of cid, unless the same sale (SaleKey) is
// already indexed; it reports whether it added, and names the sale for
// its change-feed event (NewEvent.Sale). The sale is stored as a
// record (salerec.go) that pages render on read, so row's price must be
// one render.SaleItem interprets (the projector drops the others). The
// dedupe entry (i/sk/<collection hash><SaleKey hash>) has an empty value:
// only its presence is read.
//
// The check reads the sale's dedupe key, except for a collection that had
// no sales committed before this transaction (its first sales: every
// collection's in a first cycle or a replay), which one seek proves; its
// sales are then checked against those this transaction added. At
// 100,000 collections those reads were about half of AddSale's CPU while
// the first cycle's 3.5 million sales were applied.
func (t *Tx) AddSale(cid string, row *readmodel.SaleRow) (SaleRef, bool, error) {
	ref := SaleRefOf(row)
	stored, err := t.SaleStored(cid, ref)
	if err != nil || stored {
		return ref, false, err
	}
	t.PutSale(cid, ref, row)
	return ref, true, t.err
}

// SaleRefOf names sale row: its record's key suffix.
func SaleRefOf(row *readmodel.SaleRow) SaleRef {
	var ref SaleRef
	copy(ref.suf[:], saleSuffix(row))
	return ref
}

// Dedupe is what two rows of the same sale (SaleKey) share in their names.
func (r SaleRef) Dedupe() [8]byte { return [8]byte(r.suf[8:]) }

// SaleStored reports whether the sale ref names is in collection cid's
// history: committed before this transaction, or put by it (PutSale).
// See AddSale for the reads it makes.
func (t *Tx) SaleStored(cid string, ref SaleRef) (bool, error) {
	h := ref.Dedupe()
	added, seen := t.newSales[cid]
	if !seen {
		committed := t.s.hasSales(cid)
		if !committed {
			var err error
			if committed, err = t.committed(saleDedupePrefix(cid)); err != nil {
				return false, err
			}
		}
		if !committed {
			added = map[[8]byte]struct{}{}
		}
		if t.newSales == nil {
			t.newSales = map[string]map[[8]byte]struct{}{}
		}
		t.newSales[cid] = added
	}
	if added != nil {
		_, dup := added[h]
		return dup, nil
	}
	_, ok, err := t.getRaw(append(saleDedupePrefix(cid), h[:]...))
	return ok, err
}

// PutSale stores sale row of collection cid, named ref (SaleRefOf), with
// its dedupe entry; the caller has checked that it is not stored
// (SaleStored).
func (t *Tx) PutSale(cid string, ref SaleRef, row *readmodel.SaleRow) {
	h := ref.Dedupe()
	added, seen := t.newSales[cid]
	switch {
	case !seen:
		if t.newSales == nil {
			t.newSales = map[string]map[[8]byte]struct{}{}
		}
		t.newSales[cid] = nil // it has sales now: reads check its keys
	case added != nil:
		added[h] = struct{}{}
	}
	ch := collectionHash(cid)
	dk := append(collectionHashed(pSaleKey, ch), h[:]...)
	sk, sv := append(collectionHashed(pSale, ch), ref.suf[:]...), encodeSale(cid, ref.suf[:], row)
	t.set(dk, nil)
	t.set(sk, sv)
	t.salesBytes += int64(len(dk) + len(sk) + len(sv))
	t.sales = append(t.sales, cid)
}

// Sales returns up to limit sales of canonical id, newest first (block
// time, then a hash of the sale key). after is "" or a Page.Next: a keyset
// position, so sales added later never shift a walk. A malformed position
// is BadRequest.
func (s *Store) Sales(ctx context.Context, id string, after string, limit int) (render.Page, error) {
	pos, err := decodePos(after)
	if err != nil || (pos != nil && len(pos) != 16) {
		return render.Page{}, readmodel.Errorf(readmodel.BadRequest, "bad sales position")
	}
	return s.page(salesPrefix(id), pos, limit, "s|"+id+"|"+after, id)
}

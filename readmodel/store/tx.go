package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"time"

	"github.com/cespare/xxhash/v2"
	gojson "github.com/goccy/go-json"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/render"
)

// Tx is one read-write Badger transaction of the projector: the inputs it
// reads and replaces, the views it writes and the applied position, all
// committed together by Update. A Tx is not safe for concurrent use.
type Tx struct {
	s           *Store
	txn         kvTxn
	ro          kvTxn // read-only, for iterations that need none of txn's writes (committedView); nil until used
	touched     []string
	aliases     bool
	browse      bool
	tokenWrites bool // a token record was written or deleted
	sales       []string
	quote       *render.USDQuote // set by PutQuote: served after the commit
	written     int              // bytes of keys and values set (compact.go)
	err         error
	toks        map[string]*tokenSet // token blocks by chain|address, loaded by tokens (tokenblock.go)

	regs map[string]struct{} // collections Register wrote in this transaction

	stamps map[uint64]pendingStamp // views written or deleted, by key hash (viewstamp.go)

	// newSales holds, per collection AddSale saw in this transaction, the
	// sale hashes it added when the collection had no sales committed
	// before the transaction; nil (present) when it had some.
	newSales map[string]map[[8]byte]struct{}
	// salesBytes is what the sales AddSale stored take (keys and
	// values), added to Store.salesBytes at the commit.
	salesBytes int64
}

// Update runs fn in one read-write transaction and commits it when fn
// returns nil; nothing is written when fn fails. After the commit it
// invalidates the cache entries of the views fn wrote. Errors are Internal
// *readmodel.Error (cause ErrTooBig when the transaction outgrew Badger's
// limit). Update calls are serialised by the caller (one projector).
func (s *Store) Update(ctx context.Context, fn func(tx *Tx) error) error {
	if err := ctx.Err(); err != nil {
		return internal(err, "update")
	}
	tx := &Tx{s: s, txn: s.kv.begin(true)}
	defer tx.txn.discard()
	defer func() {
		if tx.ro != nil {
			tx.ro.discard()
		}
	}()
	if err := fn(tx); err != nil {
		return internal(err, "apply")
	}
	tx.flushTokens()
	if tx.err != nil {
		return internal(tx.err, "apply")
	}
	if err := tx.txn.commit(); err != nil {
		return internal(err, "commit")
	}
	s.noteWrite(tx.written)
	s.stamps.commit(tx.stamps)
	s.cache.invalidate(tx.touched, tx.aliases, tx.browse, tx.tokenWrites, tx.sales)
	s.noteSales(tx.newSales)
	s.noteRegistered(tx.regs)
	s.salesBytes.Add(tx.salesBytes)
	if tx.quote != nil {
		// The new quote first, then a new cache generation: a reader that
		// filled a view with the old quote cannot store it any more.
		if old := s.quote.Swap(tx.quote); old == nil || old.Version != tx.quote.Version {
			s.cache.reset()
		}
	}
	return nil
}

// View runs fn in a read-only transaction (writes through tx fail).
func (s *Store) View(ctx context.Context, fn func(tx *Tx) error) error {
	tx := &Tx{s: s, txn: s.kv.begin(false)}
	tx.ro = tx.txn // read-only already: no writes of its own
	defer tx.txn.discard()
	return internal(fn(tx), "view")
}

// committedView returns a read-only transaction over what was committed
// before this one, for an iteration that needs none of this transaction's
// own writes: an iterator of a read-write transaction copies and sorts
// every write pending in it, each time it is created, so a batch of
// messages that each opened one paid for its writes over and over. Writes
// are serialised (one projector), so nothing commits in between and the
// two read the same state.
func (t *Tx) committedView() kvTxn {
	if t.ro == nil {
		t.ro = t.s.kv.begin(false)
	}
	return t.ro
}

func (t *Tx) set(k, v []byte) {
	if t.err != nil {
		return
	}
	t.err = t.txn.set(k, v)
	t.written += len(k) + len(v)
}

// setTTL sets k to v until ttl from now.
func (t *Tx) setTTL(k, v []byte, ttl time.Duration) {
	if t.err != nil {
		return
	}
	t.err = t.txn.setTTL(k, v, ttl)
	t.written += len(k) + len(v)
}

func (t *Tx) del(k []byte) {
	if t.err != nil {
		return
	}
	t.err = t.txn.del(k)
}

// getRaw returns a copy of k's value as this transaction sees it; ok is
// false when k is absent.
func (t *Tx) getRaw(k []byte) ([]byte, bool, error) { return t.txn.get(k) }

// getJSON decodes the JSON input (packed or not) under k into a new T;
// nil when k is absent.
func getJSON[T any](t *Tx, k []byte) (*T, error) {
	raw, ok, err := t.getRaw(k)
	if err != nil || !ok {
		return nil, err
	}
	if raw, err = unpackInput(raw); err != nil {
		return nil, err
	}
	var v T
	if err := gojson.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	return &v, nil
}

func (t *Tx) putJSON(k []byte, v any) {
	if b, ok := t.marshal(v); ok {
		t.set(k, b)
	}
}

// marshal returns v's JSON, the bytes encoding/json writes, written with
// github.com/goccy/go-json in about half the time (the projector's
// TestStoredInputsDecodeAsStd holds the two to the same bytes); a failure
// is the transaction's error (ok false).
func (t *Tx) marshal(v any) ([]byte, bool) {
	b, err := gojson.Marshal(v)
	if err != nil {
		if t.err == nil {
			t.err = err
		}
		return nil, false
	}
	return b, true
}

func (t *Tx) view(k []byte, v []byte) {
	t.set(k, v)
	t.touched = append(t.touched, string(k))
}

// viewIfChanged writes view v under k unless the stored view has the same
// content (versions aside): an unchanged view keeps its version, and the
// write, its cache entry and a superseded copy are saved. It compares
// stamps (viewstamp.go), so the stored view is read only when it has none.
// Before it replaces a stored view it calls replacing, when not nil, with
// the stored view's stamp and, when it read them, its bytes.
func (t *Tx) viewIfChanged(k []byte, v []byte, replacing func(prev viewStamp, stored []byte)) {
	h, now := xxhash.Sum64(k), stampOf(v)
	prev, stored, had, err := t.viewStamp(h, k)
	if err != nil {
		t.err = errors.Join(t.err, err)
		return
	}
	if had && now.sum == prev.sum {
		return
	}
	if had && replacing != nil {
		replacing(prev, stored)
	}
	t.view(k, v)
	t.noteStamp(h, pendingStamp{stamp: now, ok: true})
}

// delView deletes the view under k, and its stamp when the transaction
// commits (viewstamp.go).
func (t *Tx) delView(k []byte) {
	t.del(k)
	t.touched = append(t.touched, string(k))
	t.noteStamp(xxhash.Sum64(k), pendingStamp{})
}

// StreamPos is the last applied message of one stream: its sequence and
// its message id (to detect a stream that re-issued sequence numbers).
type StreamPos struct {
	Seq uint64 `json:"seq"`
	ID  string `json:"id"`
}

// Position returns the applied position saved for stream (zero if none).
func (t *Tx) Position(stream string) (StreamPos, error) {
	p, err := getJSON[StreamPos](t, key(pPosition, stream))
	if err != nil || p == nil {
		return StreamPos{}, err
	}
	return *p, nil
}

// SetPosition records that stream has been applied up to p.
func (t *Tx) SetPosition(stream string, p StreamPos) { t.putJSON(key(pPosition, stream), p) }

// NextVersion returns a fresh, node-local, increasing view version.
func (t *Tx) NextVersion() uint64 {
	var v uint64
	if b, ok, err := t.getRaw(kVersion); err != nil {
		t.err = err
	} else if ok && len(b) == 8 {
		v = binary.BigEndian.Uint64(b)
	}
	v++
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, v)
	t.set(kVersion, b)
	return v
}

// Positions returns the applied positions saved in s.
func (s *Store) Positions(ctx context.Context, streams ...string) ([]StreamPos, error) {
	out := make([]StreamPos, len(streams))
	err := s.View(ctx, func(tx *Tx) error {
		for i, st := range streams {
			p, err := tx.Position(st)
			if err != nil {
				return err
			}
			out[i] = p
		}
		return nil
	})
	return out, err
}

// --- inputs -------------------------------------------------------------

// Get reads the JSON input stored under (kind, parts) into a new T; nil
// when absent. Inputs are the projector's latest rows per subject; their
// names are the projector's business, the store only keeps them.
func Get[T any](t *Tx, kind InputKind, parts ...string) (*T, error) {
	v, err := getJSON[T](t, inputKey(kind, parts))
	if err != nil {
		t.err = errors.Join(t.err, err)
	}
	return v, err
}

// Put stores v as the JSON input under (kind, parts), packed (see
// packInput) when that makes it smaller.
func (t *Tx) Put(kind InputKind, v any, parts ...string) {
	if b, ok := t.marshal(v); ok {
		t.set(inputKey(kind, parts), packInput(b))
	}
}

// Input returns the JSON of the input Put stored under (kind, parts),
// unpacked; nil when there is none. Decode it with DecodeJSON.
func (t *Tx) Input(kind InputKind, parts ...string) ([]byte, error) {
	v, ok, err := t.getRaw(inputKey(kind, parts))
	if err == nil && ok {
		v, err = unpackInput(v)
	}
	if err != nil {
		t.err = errors.Join(t.err, err)
		return nil, err
	}
	return v, nil
}

// GetRaw returns a copy of what PutRaw stored under (kind, parts), nil
// when there is none. An input written by Put may be packed: read it with
// Get.
func (t *Tx) GetRaw(kind InputKind, parts ...string) ([]byte, error) {
	v, _, err := t.getRaw(inputKey(kind, parts))
	if err != nil {
		t.err = errors.Join(t.err, err)
	}
	return v, err
}

// PutRaw stores an input as given: JSON that Get decodes, or a record only
// GetRaw reads back.
func (t *Tx) PutRaw(kind InputKind, b []byte, parts ...string) { t.set(inputKey(kind, parts), b) }

// Delete removes the input under (kind, parts).
func (t *Tx) Delete(kind InputKind, parts ...string) { t.del(inputKey(kind, parts)) }

// InputKind names a family of projection inputs.
type InputKind int

// A collection's own inputs are not input kinds: they are sections of its
// state record (state.go).
const (
	InStatus InputKind = iota // (source, cid) poll status
	InRates                   // () USD rates
	InJob                     // (name) node-local job state
	InPolled                  // (poll name) when the poll last succeeded (readmodel.Polled)
)

func inputKey(kind InputKind, parts []string) []byte {
	switch kind {
	case InStatus:
		return key(pStatus, parts...)
	case InRates:
		return kRates
	case InJob:
		return key(pJob, parts...)
	case InPolled:
		return key(pPolled, parts...)
	}
	return key([]byte("i/?/"), parts...)
}

// EachInput calls fn with the last key part and raw JSON of every input of
// kind under the leading parts (e.g. every bucket of a collection), in key
// order; fn's error stops the walk.
func (t *Tx) EachInput(kind InputKind, leading []string, fn func(last string, raw []byte) error) error {
	prefix := inputKey(kind, append(append([]string(nil), leading...), ""))
	return t.txn.scan(prefix, nil, true, func(k, v []byte) (bool, error) {
		v, err := unpackInput(v)
		if err == nil {
			err = fn(string(k[len(prefix):]), v)
		}
		return err == nil, err
	})
}

// Register records that collection cid exists in some input, so full
// re-renders reach it. A collection this store registered before is not
// written again (every applied message registers its collection: one
// write per message, where a collection's first would do).
func (t *Tx) Register(cid string) {
	if _, ok := t.regs[cid]; ok || t.s.isRegistered(cid) {
		return
	}
	t.set(key(pRegistry, cid), nil)
	if t.regs == nil {
		t.regs = map[string]struct{}{}
	}
	t.regs[cid] = struct{}{}
}

func (s *Store) isRegistered(cid string) bool {
	s.salesMu.Lock()
	defer s.salesMu.Unlock()
	_, ok := s.registered[cid]
	return ok
}

// noteRegistered records, after a commit, the collections it registered.
func (s *Store) noteRegistered(regs map[string]struct{}) {
	if len(regs) == 0 {
		return
	}
	s.salesMu.Lock()
	defer s.salesMu.Unlock()
	if s.registered == nil {
		s.registered = make(map[string]struct{}, len(regs))
	}
	for cid := range regs {
		s.registered[cid] = struct{}{}
	}
}

// Collections returns up to limit registered collection ids after the id
// after ("" = from the start), in key order.
func (t *Tx) Collections(after string, limit int) ([]string, error) {
	var out []string
	err := t.txn.scan(pRegistry, key(pRegistry, after), false, func(k, _ []byte) (bool, error) {
		if len(out) >= limit {
			return false, nil
		}
		if id := string(k[len(pRegistry):]); after == "" || id != after {
			out = append(out, id)
		}
		return true, nil
	})
	return out, err
}

// --- views --------------------------------------------------------------

// PutCollection writes cid's collection view.
func (t *Tx) PutCollection(v render.CollectionView) {
	t.viewIfChanged(key(pCollection, v.ID), encodeCollection(v), nil)
}

// PutFloor writes cid's floor view.
func (t *Tx) PutFloor(cid string, v render.FloorView) {
	t.viewIfChanged(key(pFloor, cid), encodeFloor(v), nil)
}

// DeleteFloor removes cid's floor view.
func (t *Tx) DeleteFloor(cid string) { t.delView(key(pFloor, cid)) }

// PutListings writes cid's current listing snapshot and keeps the one it
// supersedes readable by version for Options.ListingsRetention, when the
// store served it (served.go): no cursor can name one it did not.
func (t *Tx) PutListings(cid string, v render.ListingsRecord) {
	k := key(pListings, cid)
	t.viewIfChanged(k, encodeListings(v), func(prev viewStamp, stored []byte) {
		if t.s.opts.NoSuperseded || !t.s.served.served(cid, prev.version) {
			return
		}
		if stored == nil { // known by its stamp: read it, before it is replaced
			var err error
			if stored, _, err = t.getRaw(k); err != nil {
				t.err = errors.Join(t.err, err)
				return
			}
		}
		if len(stored) < 8 {
			return
		}
		ok := key(pOldListings, cid, string(stored[:8]))
		t.setTTL(ok, stored, t.s.opts.ListingsRetention)
		t.touched = append(t.touched, string(ok))
	})
}

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

// committed reports whether any key starting with p was committed before
// this transaction, with one seek on a read-only snapshot.
func (t *Tx) committed(p []byte) (bool, error) {
	txn := t.s.kv.begin(false)
	defer txn.discard()
	found := false
	err := txn.scan(p, nil, false, func(_, _ []byte) (bool, error) {
		found = true
		return false, nil
	})
	return found, err
}

// moveDeadline moves id's entry in a deadline index from was to now (unix
// ms; 0: none).
func (t *Tx) moveDeadline(index []byte, id string, was, now int64) {
	if was == now {
		return
	}
	if was != 0 {
		t.del(deadlineEntry(index, uint64(was), id))
	}
	if now != 0 {
		t.set(deadlineEntry(index, uint64(now), id), nil)
	}
}

// Alias kinds, in collision preference order.
const (
	AliasDocumentID byte = 0
	AliasAddress    byte = 1
	AliasSlug       byte = 2
)

// Alias is one {id} form of a collection. Kind ranks the forms for
// collisions: AliasDocumentID, AliasAddress, AliasSlug.
type Alias struct {
	Key   string
	Kind  byte
	Chain readmodel.Chain
}

func aliasKey(a Alias, cid string) []byte {
	rank := byte(0xff)
	if r := a.Chain.Rank(); r >= 0 {
		rank = byte(r)
	}
	return append(key(pAlias, a.Key, ""), append([]byte{a.Kind, rank}, cid...)...)
}

// SetAliases replaces cid's aliases old by new.
func (t *Tx) SetAliases(cid string, old, new []Alias) {
	for _, a := range old {
		t.del(aliasKey(a, cid))
	}
	for _, a := range new {
		if a.Key == "" || len(a.Key) > readmodel.MaxIDLen {
			continue
		}
		t.set(aliasKey(a, cid), plain(nil))
	}
	t.aliases = true
}

// BrowseEntry places a collection summary in one browse order.
type BrowseEntry struct {
	Sort   readmodel.Sort
	Chain  readmodel.Chain // "" for the all-chains order
	Native bool
	// Present is false when the sort value is null (sorted last).
	Present bool
	// Value sorts descending.
	Value float64
}

// SetBrowse replaces cid's browse entries by entries, each placing item
// (no entries: cid leaves every order).
//
// The summary is stored once (v/bi/<cid>); an entry's key places it and
// its value is the summary's content hash (plain's header), which a page
// read hashes into its version. Each collection has six entries (three
// sorts, all chains and its own): holding the summary in each was 33 MB
// of a 480 MB store at 10,000 collections x 100 tokens (schema 20).
func (t *Tx) SetBrowse(cid string, entries []BrowseEntry, item []byte) {
	back := key(pBrowseBack, cid)
	var oldKeys [][]byte
	if b, ok, err := t.getRaw(back); err != nil {
		t.err = errors.Join(t.err, err)
	} else if ok {
		_ = json.Unmarshal(b, &oldKeys)
	}
	newKeys := make([][]byte, 0, len(entries))
	for _, e := range entries {
		k := browsePrefix(e.Sort, e.Chain)
		nb := byte(1)
		if e.Native {
			nb = 0
		}
		pb := byte(1)
		var sk uint64
		if e.Present && !math.IsNaN(e.Value) {
			pb = 0
			sk = ^orderedFloat(e.Value)
		}
		k = append(k, nb, pb)
		k = binary.BigEndian.AppendUint64(k, sk)
		k = append(k, cid...)
		newKeys = append(newKeys, k)
	}
	val := plain(item)
	head := val[:8]
	if sameKeys(oldKeys, newKeys) && len(newKeys) > 0 {
		if cur, ok, err := t.getRaw(key(pBrowseItem, cid)); err == nil && ok && bytes.Equal(cur, val) {
			return // unchanged: same places, same summary
		}
	}
	for _, k := range oldKeys {
		t.del(k)
	}
	for _, k := range newKeys {
		t.set(k, head)
	}
	if len(newKeys) > 0 {
		t.set(key(pBrowseItem, cid), val)
	} else {
		t.del(key(pBrowseItem, cid))
	}
	t.putJSON(back, newKeys)
	t.browse = true
}

func sameKeys(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

// orderedFloat maps f to a uint64 whose order matches f's.
func orderedFloat(f float64) uint64 {
	b := math.Float64bits(f)
	if b&(1<<63) != 0 {
		return ^b
	}
	return b | 1<<63
}

// A sale's keys name its collection by a hash of the id, not the id:
//
//	v/s/<collection hash><suffix>   the sale record (salerec.go)
//	i/sk/<collection hash><hash>    its dedupe entry (AddSale)
//
// where the collection hash is the first 8 bytes of the id's SHA-256 and
// suffix is saleSuffix. The id (about 50 bytes for an EVM collection)
// was most of both keys, stored in the key tree and again beside each
// record in the value log: at 10,000 collections x 100 tokens (358,387
// sales) about 45 MB of a 480 MB store (schema 19). Two ids of the same
// hash would share a sales history: at 10^5 collections the odds are
// about 10^-10.

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

// SetDeadline records when cid's listing snapshot next changes by the clock
// alone (zero clears it).
func (t *Tx) SetDeadline(cid string, at time.Time) {
	dk := key(pDeadline, cid)
	now := unixMs(at)
	old, ok, err := t.getRaw(dk)
	if err != nil {
		t.err = errors.Join(t.err, err)
		return
	}
	var was int64
	if ok && len(old) == 8 {
		was = int64(binary.BigEndian.Uint64(old))
	}
	if ok && was == now {
		return
	}
	t.moveDeadline(pDeadlines, cid, was, now)
	switch {
	case now != 0:
		t.set(dk, binary.BigEndian.AppendUint64(nil, uint64(now)))
	case ok:
		t.del(dk)
	}
}

// unixMs is t in unix milliseconds, the deadline indexes' unit; 0 (no
// deadline) for the zero time.
func unixMs(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// deadlineEntry is the key of id's entry in a deadline index (due reads
// them in order): index, the deadline in unix ms (big-endian), id.
func deadlineEntry(index []byte, ms uint64, id string) []byte {
	b := append(make([]byte, 0, len(index)+8+len(id)), index...)
	b = binary.BigEndian.AppendUint64(b, ms)
	return append(b, id...)
}

// DueCursor is where a walk of due deadlines stopped; nil is the start of
// the index.
type DueCursor []byte

// Due returns up to limit collections whose deadline is at or before now,
// after cursor, and the cursor after the last one returned.
//
// Walk with the cursor instead of from the start each time: rendering a
// due view deletes its entry, and Badger keeps the deleted keys until a
// compaction, so every walk from the start would skip past all the
// entries the walks before it consumed (a replay's final sweep of 77,000
// tokens spent a third of its time there). An entry a render re-adds at
// or before now lies behind the cursor and waits for the next walk.
func (s *Store) Due(ctx context.Context, now time.Time, after DueCursor, limit int) ([]string, DueCursor, error) {
	return s.due(pDeadlines, now, after, limit)
}

func (s *Store) due(index []byte, now time.Time, after DueCursor, limit int) ([]string, DueCursor, error) {
	var out []string
	next := after
	txn := s.kv.begin(false)
	defer txn.discard()
	err := txn.scan(index, after, false, func(full, _ []byte) (bool, error) {
		if len(out) >= limit {
			return false, nil
		}
		if after != nil && bytes.Equal(full, after) {
			return true, nil
		}
		k := full[len(index):]
		if len(k) < 8 || int64(binary.BigEndian.Uint64(k)) > now.UnixMilli() {
			return false, nil
		}
		out = append(out, string(k[8:]))
		next = append(DueCursor(nil), full...)
		return true, nil
	})
	return out, next, internal(err, "due deadlines")
}

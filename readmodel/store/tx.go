package store

import (
	"context"
	"encoding/binary"
	"errors"
	"time"

	"github.com/cespare/xxhash/v2"
	gojson "github.com/goccy/go-json"

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

	// held is, in a memory store, the feed families' open blocks this
	// transaction changed (nil: none held any more), committed to
	// Store.gather (evgather.go).
	held map[string]*heldBlock
	// evRecs holds the records AppendEvents encoded, for AppendMarket
	// (market.go).
	evRecs map[string]*[]eventRec
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
	if tx.held != nil {
		s.gather.commit(tx.held)
	}
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

// Each view's record, write and read are in a file of its own: floor.go,
// collection.go, alias.go, browse.go, listings.go, sales.go, deadline.go,
// events.go (the change feed) and tokens.go (tokens); view modules'
// records are module.go's.

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

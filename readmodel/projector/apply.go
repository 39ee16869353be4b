package projector

import (
	"encoding/binary"
	"errors"
	"reflect"
	"sort"
	"strconv"
	"time"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/render"
	"github.com/marketd/marketd/readmodel/store"
)

// The stored inputs of a collection, in the projector's own shapes.

type rowsInput struct {
	ObservedAt time.Time              `json:"observedAt"`
	Rows       []readmodel.ListingRow `json:"rows"`
}

type statusInput struct {
	Seq    uint64               `json:"seq"` // state stream sequence it came in
	Status readmodel.PollStatus `json:"status"`
}

type lastGood struct {
	Raw string    `json:"raw"`
	At  time.Time `json:"at"`
}

// job is a pending re-render of every collection's views (after a
// source-wide status: every collection's staleness changed), processed in
// batches; its state commits with each batch so a crash resumes it. USD
// rates never need one: prepared bodies carry USD slots that the store
// fills from the current quote (render.TemplateUSD).
type job struct {
	After string `json:"after"` // last collection done
}

const jobName = "rerender"

// render parts
const (
	partDetail = 1 << iota
	partBrowse
	partListings
	partFloor
)

// applier applies one message inside one store transaction.
type applier struct {
	tx        *store.Tx
	now       time.Time // the message's ObservedAt, or the sweep time
	retention time.Duration
	seq       uint64
	version   uint64
	books     map[string]*rowsInput                        // listing rows read or written in this transaction, by source and collection
	toks      map[string]*store.TokenRecord                // token records read or written in this transaction (nil: none)
	statuses  map[string]*statusInput                      // stored statuses read or written in this transaction, by source and collection
	docs      map[string]*readmodel.CollectionDoc          // collection documents read or written in this transaction (nil: none)
	natives   map[string]map[string][]readmodel.ListingRow // per collection: its order book's live native rows by token key

	// deferred collects what a batch of messages touches and renders it
	// once, in flush, instead of after every message. held (a replay
	// build) keeps the collection renders in coll past flush: the build
	// renders them once at its end (Projector.renderHeldLocked).
	deferred bool
	held     bool
	drained  bool            // held renders were just drained: render this batch's in its transaction
	coll     *pending        // collection renders marked (deferred)
	dirtyTok map[string]bool // token keys marked (deferred)

	feeds map[string]*feedMemo // change-feed states read or written in this transaction (events.go)
}

// pending is the collection renders a deferred applier has marked: the
// parts, and the time of the last message touching each collection (the
// "now" it is rendered as of).
type pending struct {
	parts map[string]int
	at    map[string]time.Time
}

func newPending() *pending {
	return &pending{parts: map[string]int{}, at: map[string]time.Time{}}
}

func (p *pending) mark(cid string, parts int, at time.Time) {
	p.parts[cid] |= parts
	p.at[cid] = at
}

// ids returns the marked collections in order.
func (p *pending) ids() []string {
	ids := make([]string, 0, len(p.parts))
	for id := range p.parts {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// errDrainHeld asks the build to render its held collections before the
// message (a source-wide listing failure) is applied: see apply.
var errDrainHeld = errors.New("projector: held renders must be drained first")

// heldInTxn is how many held collections one transaction renders, both
// in Projector.renderHeldLocked and when a source-wide listing failure needs
// them rendered first.
const heldInTxn = 64

// render renders (or, deferred, marks for flush) the given parts of
// collection cid.
func (a *applier) render(cid string, parts int) error {
	if !a.deferred {
		return a.renderNow(cid, parts)
	}
	if a.coll == nil {
		a.coll = newPending()
	}
	a.coll.mark(cid, parts, a.now)
	return nil
}

// touchToken writes (or, deferred, marks for flush) token k's record
// from its document and its collection's order book.
func (a *applier) touchToken(k string) error {
	if !a.deferred {
		return a.writeToken(k)
	}
	if a.dirtyTok == nil {
		a.dirtyTok = map[string]bool{}
	}
	a.dirtyTok[k] = true
	return nil
}

// flush renders everything marked since the last flush (collections only
// when not held), in a deterministic order, each collection as of its
// last message.
func (a *applier) flush() error {
	if a.coll != nil && !a.held {
		if err := a.renderMarked(a.coll.ids()); err != nil {
			return err
		}
	}
	keys := make([]string, 0, len(a.dirtyTok))
	for k := range a.dirtyTok {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := a.writeToken(k); err != nil {
			return err
		}
	}
	a.dirtyTok = nil
	return nil
}

// renderMarked renders the marked collections ids (those not marked are
// skipped), each as of its last message, and unmarks them.
func (a *applier) renderMarked(ids []string) error {
	now := a.now
	defer func() { a.now = now }()
	for _, id := range ids {
		parts, ok := a.coll.parts[id]
		if !ok {
			continue
		}
		a.now = a.coll.at[id]
		if err := a.renderNow(id, parts); err != nil {
			return err
		}
		delete(a.coll.parts, id)
		delete(a.coll.at, id)
	}
	return nil
}

// orderBook returns collection cid's stored order-book rows (nil when
// none).
func (a *applier) orderBook(cid string) (*rowsInput, error) {
	return a.rows(readmodel.SourceOrderBook, cid)
}

// rows returns the stored rows of (src, cid), nil when none, decoding each
// at most once per transaction (putRows keeps the memo current).
func (a *applier) rows(src readmodel.Source, cid string) (*rowsInput, error) {
	k := string(src) + "\x00" + cid
	if v, ok := a.books[k]; ok {
		return v, nil
	}
	at, rows, ok, err := a.tx.Rows(string(src), cid)
	if err != nil {
		return nil, err
	}
	var in *rowsInput
	if ok {
		in = &rowsInput{ObservedAt: at, Rows: rows}
	}
	if a.books == nil {
		a.books = map[string]*rowsInput{}
	}
	a.books[k] = in
	return in, nil
}

func (a *applier) putRows(src readmodel.Source, cid string, in *rowsInput) {
	a.tx.PutRows(string(src), cid, in.ObservedAt, in.Rows)
	if a.books == nil {
		a.books = map[string]*rowsInput{}
	}
	a.books[string(src)+"\x00"+cid] = in
	if src == readmodel.SourceOrderBook {
		delete(a.natives, cid)
	}
}

// memoGet returns the input of kind stored under (src, cid), nil when
// none, reading and decoding it at most once per transaction: memo holds
// what this transaction read or wrote (memoPut).
func memoGet[T any](a *applier, memo *map[string]*T, kind store.InputKind, src readmodel.Source, cid string) (*T, error) {
	k := string(src) + "\x00" + cid
	if v, ok := (*memo)[k]; ok {
		return v, nil
	}
	v, err := store.Get[T](a.tx, kind, string(src), cid)
	if err != nil {
		return nil, err
	}
	if *memo == nil {
		*memo = map[string]*T{}
	}
	(*memo)[k] = v
	return v, nil
}

// memoPut stores v under (src, cid) and keeps memo current.
func memoPut[T any](a *applier, memo *map[string]*T, kind store.InputKind, src readmodel.Source, cid string, v *T) {
	a.tx.Put(kind, v, string(src), cid)
	if *memo == nil {
		*memo = map[string]*T{}
	}
	(*memo)[string(src)+"\x00"+cid] = v
}

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

func (a *applier) ver() uint64 {
	if a.version == 0 {
		a.version = a.tx.NextVersion()
	}
	return a.version
}

// putQuote records the USD quote the store fills prepared bodies with, from
// the stored rates and the price feed's latest status (feedOK, or the
// stored one when nil).
func (a *applier) putQuote(feedOK *bool) error {
	r, err := store.Get[readmodel.USDRates](a.tx, store.InRates)
	if err != nil {
		return err
	}
	var rates readmodel.USDRates
	if r != nil {
		rates = *r
	}
	ok := true
	if feedOK != nil {
		ok = *feedOK
	} else {
		st, err := a.status(readmodel.SourcePriceFeed, "")
		if err != nil {
			return err
		}
		ok = st == nil || st.Status.OK
	}
	a.tx.PutQuote(rates, ok)
	return nil
}

// tmpl turns a rendered body (usd null) into a prepared one with USD slots.
func tmpl(b []byte) []byte { return render.TemplateUSD(b) }

func tmplTimed(tb render.TimedBody) render.TimedBody {
	tb.Head, tb.Tail = tmpl(tb.Head), tmpl(tb.Tail)
	return tb
}

// status returns the latest status of (src, cid), or of the source-wide
// (src, "") poll when that one came later.
func (a *applier) status(src readmodel.Source, cid string) (*statusInput, error) {
	s, err := a.storedStatus(src, cid)
	if err != nil || cid == "" {
		return s, err
	}
	w, err := a.storedStatus(src, "")
	if err != nil {
		return nil, err
	}
	if w != nil && (s == nil || w.Seq > s.Seq) {
		return w, nil
	}
	return s, nil
}

// storedStatus returns the stored status of (src, cid) exactly as stored
// (cid "" is the source-wide poll), decoding each at most once per
// transaction: rendering a collection asks for five statuses and each of
// those for its source-wide one, which at 100,000 collections made status
// reads about a twelfth of a replay's CPU. putStatus keeps the memo current.
func (a *applier) storedStatus(src readmodel.Source, cid string) (*statusInput, error) {
	return memoGet(a, &a.statuses, store.InStatus, src, cid)
}

func (a *applier) putStatus(src readmodel.Source, cid string, st statusInput) {
	memoPut(a, &a.statuses, store.InStatus, src, cid, &st)
}

func failed(s *statusInput) bool { return s != nil && !s.Status.OK }

// sameBps reports whether two royalties are both unknown or equal.
func sameBps(a, b *int64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

// apply applies msg (state stream sequence seq, or sales) and re-renders
// what it touches (or, deferred, marks it for flush); a change that
// concerns every collection queues a full re-render job.
func (a *applier) apply(msg *readmodel.Message) error {
	cid := msg.CollectionID
	if cid != "" {
		a.tx.Register(cid)
	}
	switch msg.Kind {
	case readmodel.KindCollection:
		old, err := a.doc(cid)
		if err != nil {
			return err
		}
		doc := *msg.Collection
		doc.ID = cid
		a.tx.Put(store.InDoc, doc, cid)
		a.docs[cid] = &doc
		var oldAliases []store.Alias
		var oldRoyalty *int64
		if old != nil {
			oldAliases, oldRoyalty = aliases(old), old.RoyaltyBps
		}
		if !sameBps(oldRoyalty, doc.RoyaltyBps) {
			a.tx.RoyaltyChanged(cid) // token views charge it in their listing's fees
		}
		a.tx.SetAliases(cid, oldAliases, aliases(&doc))
		return a.render(cid, partDetail|partBrowse|partListings|partFloor)
	case readmodel.KindStats:
		a.tx.Put(store.InStats, msg.Stats, cid)
		return a.render(cid, partDetail)
	case readmodel.KindAnalytics:
		a.tx.Put(store.InAnalytics, msg.Analytics, cid)
		return a.render(cid, partDetail|partFloor)
	case readmodel.KindListings:
		var oldRows *rowsInput
		in := rowsInput{ObservedAt: msg.ObservedAt, Rows: msg.Listings}
		if msg.Source == readmodel.SourceOrderBook {
			var err error
			if oldRows, err = a.orderBook(cid); err != nil {
				return err
			}
		}
		a.putRows(msg.Source, cid, &in)
		if err := a.render(cid, partListings|partFloor); err != nil {
			return err
		}
		if msg.Source == readmodel.SourceOrderBook {
			return a.renderTokensOf(oldRows, &in)
		}
		return nil
	case readmodel.KindStatus:
		if !msg.Status.OK && (msg.Source == readmodel.SourceOrderBook || msg.Source == readmodel.SourceIndexerMirror) && a.coll != nil && len(a.coll.parts) > 0 {
			// A listing source failing can end a collection's last good
			// buyer floor: render what is pending first, so the last good
			// value is the one an unbatched apply would have recorded.
			// A build renders only the failing collection's, or, for a
			// source-wide failure, all it holds: in this transaction when
			// they are few, else after committing what it has.
			var err error
			switch {
			case !a.held:
				now := a.now
				err = a.flush()
				a.now = now
			case cid != "":
				err = a.renderMarked([]string{cid})
			case len(a.coll.parts) > heldInTxn && !a.drained:
				return errDrainHeld
			default:
				err = a.renderMarked(a.coll.ids())
			}
			if err != nil {
				return err
			}
		}
		var wasFailed bool
		if cid != "" && msg.Status.OK {
			prev, err := a.status(msg.Source, cid)
			if err != nil {
				return err
			}
			wasFailed = failed(prev)
		}
		st := *msg.Status
		if !st.OK && st.LastGoodAt.IsZero() {
			// An ingest that restarted does not know when the source last
			// answered well; the views do, and the last good rows stay
			// servable for the retention after it (SPEC §4), so keep it.
			prev, err := a.storedStatus(msg.Source, cid)
			if err != nil {
				return err
			}
			if prev != nil {
				st.LastGoodAt = prev.Status.LastGoodAt
			}
		}
		a.putStatus(msg.Source, cid, statusInput{Seq: a.seq, Status: st})
		if cid != "" && msg.Status.OK && !wasFailed {
			// Still healthy: no view shows anything of an OK status but
			// that it is not failed (the first cycle carries one per
			// collection and source: a third of its messages).
			return nil
		}
		if cid == "" {
			switch msg.Source {
			case readmodel.SourcePriceFeed:
				return a.putQuote(&msg.Status.OK)
			case readmodel.SourceOrderBook, readmodel.SourceIndexerMirror, readmodel.SourceIndexerStats, readmodel.SourceAnalytics:
				return a.queueJob()
			}
			return nil
		}
		switch msg.Source {
		case readmodel.SourceOrderBook, readmodel.SourceIndexerMirror:
			return a.render(cid, partListings|partFloor)
		case readmodel.SourceIndexerStats, readmodel.SourceAnalytics:
			return a.render(cid, partDetail|partFloor)
		}
		return nil
	case readmodel.KindRates:
		a.tx.Put(store.InRates, msg.Rates)
		return a.putQuote(nil)
	case readmodel.KindTokens:
		return a.applyTokens(msg)
	case readmodel.KindSales:
		return a.applySales(msg)
	case readmodel.KindPolled:
		return a.applyPolled(msg)
	}
	return nil
}

// queueJob queues a re-render of every collection's views; a newer one
// restarts the walk so every collection sees the latest change.
func (a *applier) queueJob() error {
	a.tx.Put(store.InJob, job{}, jobName)
	return nil
}

// aliases lists a document's {id} forms: the document id, its address
// (EVM lowercase; a Solana mint as stored) and its slug.
func aliases(d *readmodel.CollectionDoc) []store.Alias {
	out := []store.Alias{{Key: d.ID, Kind: store.AliasDocumentID, Chain: d.Chain}}
	if d.ContractAddress != "" {
		addr := d.ContractAddress
		if d.Chain.IsEVM() {
			addr = lowerASCII(addr)
		}
		out = append(out, store.Alias{Key: addr, Kind: store.AliasAddress, Chain: d.Chain})
	}
	if d.Slug != "" {
		out = append(out, store.Alias{Key: d.Slug, Kind: store.AliasSlug, Chain: d.Chain})
	}
	return out
}

func lowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// doc returns collection cid's document, nil when none, decoding it at
// most once per transaction (the feed and every render of the collection
// ask for it). Callers must not modify it.
func (a *applier) doc(cid string) (*readmodel.CollectionDoc, error) {
	if d, ok := a.docs[cid]; ok {
		return d, nil
	}
	d, err := store.Get[readmodel.CollectionDoc](a.tx, store.InDoc, cid)
	if err != nil {
		return nil, err
	}
	if a.docs == nil {
		a.docs = map[string]*readmodel.CollectionDoc{}
	}
	a.docs[cid] = d
	return d, nil
}

// renderNow re-renders the given parts of collection cid's views.
func (a *applier) renderNow(cid string, parts int) error {
	doc, err := a.doc(cid)
	if err != nil {
		return err
	}
	if doc != nil && parts&(partDetail|partBrowse) != 0 {
		if err := a.renderCollection(cid, doc, parts); err != nil {
			return err
		}
	}
	if parts&(partListings|partFloor) != 0 {
		if err := a.renderListings(cid, doc, parts); err != nil {
			return err
		}
	}
	return nil
}

func (a *applier) renderCollection(cid string, doc *readmodel.CollectionDoc, parts int) error {
	if parts&partDetail != 0 {
		in := render.DetailInputs{Doc: doc}
		var err error
		if in.Stats, err = store.Get[readmodel.CollectionStats](a.tx, store.InStats, cid); err != nil {
			return err
		}
		if in.Analytics, err = store.Get[readmodel.Analytics](a.tx, store.InAnalytics, cid); err != nil {
			return err
		}
		ss, err := a.status(readmodel.SourceIndexerStats, cid)
		if err != nil {
			return err
		}
		as, err := a.status(readmodel.SourceAnalytics, cid)
		if err != nil {
			return err
		}
		in.StatsFailed, in.AnalyticsFailed = failed(ss), failed(as)
		if in.Changes, err = a.history(cid, in); err != nil {
			return err
		}
		asOf, err := a.freshness(cid, readmodel.SourceCollectionIndex, readmodel.SourceIndexerStats, readmodel.SourceAnalytics)
		if err != nil {
			return err
		}
		a.tx.PutCollection(render.CollectionView{
			ID:          cid,
			Chain:       validChain(doc.Chain),
			HasContract: doc.ContractAddress != "",
			Version:     a.ver(),
			Detail:      tmpl(render.CollectionDetailJSON(in)),
			AsOf:        asOf,
		})
	}
	if parts&partBrowse != 0 {
		item := tmpl(render.CollectionSummaryJSON(doc, nil))
		var entries []store.BrowseEntry
		chains := []readmodel.Chain{""}
		if c := validChain(doc.Chain); c != "" {
			chains = append(chains, c)
		}
		var floor float64
		var hasFloor bool
		if c := validChain(doc.Chain); c != "" {
			if p, ok := render.PriceOf(c, doc.FloorRaw, nil); ok && doc.FloorRaw != "" {
				floor, hasFloor = p.Decimal, true
			}
		}
		for _, c := range chains {
			for _, s := range readmodel.Sorts {
				e := store.BrowseEntry{Sort: s, Chain: c, Native: doc.NativeLaunched}
				switch s {
				case readmodel.SortVolume:
					if doc.VolumeAllTime != nil {
						e.Present, e.Value = true, *doc.VolumeAllTime
					}
				case readmodel.SortFloor:
					e.Present, e.Value = hasFloor, floor
				case readmodel.SortRecent:
					if !doc.CreatedAt.IsZero() {
						e.Present, e.Value = true, float64(doc.CreatedAt.UnixMilli())
					}
				}
				entries = append(entries, e)
			}
		}
		a.tx.SetBrowse(cid, entries, item)
	}
	return nil
}

func validChain(c readmodel.Chain) readmodel.Chain {
	if c.Valid() {
		return c
	}
	return ""
}

func (a *applier) source(src readmodel.Source, cid string) (render.ListingSource, error) {
	var ls render.ListingSource
	rows, err := a.rows(src, cid)
	if err != nil {
		return ls, err
	}
	if rows != nil {
		ls.Rows, ls.ObservedAt = rows.Rows, rows.ObservedAt
	}
	st, err := a.status(src, cid)
	if err != nil {
		return ls, err
	}
	if failed(st) {
		ls.Failed, ls.LastGoodAt = true, st.Status.LastGoodAt
	}
	return ls, nil
}

func (a *applier) snapshot(cid string, doc *readmodel.CollectionDoc) (render.Snapshot, error) {
	in := render.SnapshotInputs{
		HasContract: doc != nil && doc.ContractAddress != "",
		Now:         a.now,
		Retention:   a.retention,
	}
	var err error
	if in.OrderBook, err = a.source(readmodel.SourceOrderBook, cid); err != nil {
		return render.Snapshot{}, err
	}
	if in.Mirror, err = a.source(readmodel.SourceIndexerMirror, cid); err != nil {
		return render.Snapshot{}, err
	}
	return render.MergeListings(in), nil
}

func (a *applier) renderListings(cid string, doc *readmodel.CollectionDoc, parts int) error {
	snap, err := a.snapshot(cid, doc)
	if err != nil {
		return err
	}
	var royalty *int64
	if doc != nil {
		royalty = doc.RoyaltyBps
	}
	if parts&partListings != 0 {
		v := render.ListingsView{
			Version:       a.ver(),
			Items:         make([][]byte, 0, len(snap.Rows)),
			ExpiresAt:     make([]int64, 0, len(snap.Rows)),
			StaleSources:  snap.StaleSources,
			AllFailed:     snap.AllFailed,
			Listed:        snap.Listed,
			BeyondExpires: snap.BeyondExpires,
		}
		if v.AsOf, err = a.freshness(cid, listingSources(doc)...); err != nil {
			return err
		}
		for i := range snap.Rows {
			r := &snap.Rows[i]
			b, ok := render.ListingRowJSON(r, royalty, nil, a.now)
			if !ok {
				v.Listed--
				continue
			}
			var exp int64
			if r.ExpiresAt != nil {
				exp = r.ExpiresAt.UnixMilli()
			}
			v.Items = append(v.Items, tmpl(b))
			v.ExpiresAt = append(v.ExpiresAt, exp)
		}
		a.tx.PutListings(cid, v)
		a.tx.SetDeadline(cid, snap.Deadline)
	}
	if parts&partFloor == 0 {
		return nil
	}
	if doc == nil || !doc.Chain.Valid() {
		a.tx.DeleteFloor(cid)
		return nil
	}
	fin := render.FloorInputs{
		CollectionID:     cid,
		Chain:            doc.Chain,
		SnapshotFloorRaw: doc.FloorRaw,
		Snapshot:         snap,
		RoyaltyBps:       doc.RoyaltyBps,
	}
	an, err := store.Get[readmodel.Analytics](a.tx, store.InAnalytics, cid)
	if err != nil {
		return err
	}
	as, err := a.status(readmodel.SourceAnalytics, cid)
	if err != nil {
		return err
	}
	if an != nil && !failed(as) {
		fin.AnalyticsFloorRaw = an.FloorRaw
	}
	lg, err := store.Get[lastGood](a.tx, store.InLastGood, cid)
	if err != nil {
		return err
	}
	if lg != nil {
		fin.LastGoodRaw, fin.LastGoodAt = lg.Raw, lg.At
	}
	res := render.FloorJSON(fin)
	if !snap.AllFailed && doc.Chain.KeepsLastGoodBuyerFloor() {
		if res.BuyerRaw != "" {
			a.tx.Put(store.InLastGood, lastGood{Raw: res.BuyerRaw, At: a.now}, cid)
		}
	}
	srcs := listingSources(doc)
	if res.AskFrom != "" && res.AskFrom != readmodel.SourceIndexerMirror {
		srcs = append(srcs, res.AskFrom)
	}
	asOf, err := a.freshness(cid, srcs...)
	if err != nil {
		return err
	}
	a.tx.PutFloor(cid, render.FloorView{
		Version:       a.ver(),
		Body:          tmplTimed(res.Body),
		FallbackAfter: res.FallbackAfter,
		Fallback:      tmplTimed(res.Fallback),
		AsOf:          asOf,
	})
	return nil
}

// --- tokens ---------------------------------------------------------------

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

// --- sales ----------------------------------------------------------------

func (a *applier) applySales(msg *readmodel.Message) error {
	for i := range msg.Sales {
		r := msg.Sales[i]
		if r.CollectionID == "" {
			r.CollectionID = msg.CollectionID
		}
		it, ok := render.SaleItem(&r, nil)
		if !ok {
			continue // uninterpretable price: dropped at projection
		}
		b := render.MarshalItem(it) // TemplateUSD copies what it changes: the feed's event keeps usd null
		added, err := a.tx.AddSale(msg.CollectionID, &r, tmpl(b))
		if err != nil {
			return err
		}
		if added {
			if err := a.feedSale(msg.CollectionID, i, &r, b); err != nil {
				return err
			}
		}
	}
	return nil
}

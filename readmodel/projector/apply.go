package projector

import (
	"errors"
	"runtime"
	"sort"
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

// The view parts of a collection, each rendered by its own file:
// collection.go (detail and browse entries), listings.go, floor.go.
// Tokens (tokens.go), sales (sales.go) and the change feed (events.go)
// are written by the messages that carry them.
const (
	partDetail = 1 << iota
	partBrowse
	partListings
	partFloor
)

// kindParts is the table from a message kind to the parts of its
// collection it makes stale (apply renders them, or marks them for a
// batch's flush). Kinds not listed write their own views.
var kindParts = map[readmodel.Kind]int{
	readmodel.KindCollection: partDetail | partBrowse | partListings | partFloor,
	readmodel.KindStats:      partDetail,
	readmodel.KindAnalytics:  partDetail | partFloor,
	readmodel.KindListings:   partListings | partFloor,
}

// statusParts is the same for a collection's poll status that changes
// (failing, or healthy again), by source: what that source feeds.
var statusParts = map[readmodel.Source]int{
	readmodel.SourceOrderBook:     partListings | partFloor,
	readmodel.SourceIndexerMirror: partListings | partFloor,
	readmodel.SourceIndexerStats:  partDetail | partFloor,
	readmodel.SourceAnalytics:     partDetail | partFloor,
}

// applier applies one message inside one store transaction.
type applier struct {
	tx        stateTx
	now       time.Time // the message's ObservedAt, or the sweep time
	retention time.Duration
	yield     func() // Options.Yield (nil: runtime.Gosched); see pause
	seq       uint64
	version   uint64
	states    map[string]*collState         // collection states read or written in this transaction (state.go)
	toks      map[string]*store.TokenRecord // token records read or written in this transaction (nil: none)
	// bucketToks holds, per collection|bucket, the tokens applyTokens wrote
	// in this transaction (noteBucketToken).
	bucketToks map[string]map[string]bool
	statuses   map[string]*statusInput // stored statuses read or written in this transaction, by source and collection

	// Inputs of other subjects than collection states that applying
	// changed, written at save (batch.go).
	statusSaves  map[string]bool  // statuses keys put
	polled       map[string]int64 // poll times read or put, unix ms
	polledSaves  map[string]bool
	rates        readmodel.USDRates
	ratesRead    bool
	ratesChanged bool
	quoteChanged bool
	jobQueued    bool
	sales        map[saleKey]bool // sales known stored, or added by this transaction (sales.go)
	loadedSales  map[*readmodel.Message][]saleIn
	salePuts     []salePut
	// market is every feed event queued in this transaction, in the order
	// applied, for the market's feed (appendFeed, saveStates).
	market []store.MarketEvent
	// created counts the states saveStates stored for the first time.
	created int64

	// Applying a message only marks what it makes stale (mark,
	// touchToken); finish renders it once for the whole batch. held (a
	// replay build) keeps the collection renders in coll past finish: the
	// build renders them once at its end (Projector.renderHeldLocked).
	held      bool
	drained   bool                 // held renders were just drained: render this batch's in its transaction
	coll      *pending             // collection renders marked
	tokenMsgs []*readmodel.Message // tokens messages applied, to index at flush (indexTokens)
	dirtyTok  map[string]bool      // token keys marked

	rendered render.Rendered // the collection renderNow renders, for the view modules (views.go)
}

// pending is the collection renders an applier has marked: the
// parts, the time of the last message touching each collection (the "now"
// it is rendered as of), and the order they were first marked in.
type pending struct {
	parts map[string]int
	at    map[string]time.Time
	order []string // first-marked order; may hold ids rendered since (ids drops them)
}

func newPending() *pending {
	return &pending{parts: map[string]int{}, at: map[string]time.Time{}}
}

func (p *pending) mark(cid string, parts int, at time.Time) {
	if _, ok := p.parts[cid]; !ok {
		p.order = append(p.order, cid)
	}
	p.parts[cid] |= parts
	p.at[cid] = at
}

// ids returns the marked collections in the order they were first marked:
// the order of the stream, so deterministic for the same messages.
//
// Why not sorted: a render reads the collection's inputs (listing rows,
// document, stats, statuses), which the store keeps in its value log in the
// order they were applied. Rendering in that order reads the log forward;
// rendering in id order reads it at random. At 100,000 collections a cold
// start renders them all at once, and inside a 3 GiB memory cgroup, where
// the 2.4 GB log does not fit the page cache, the random order spent 78 %
// of its CPU samples faulting value-log pages in (a profile of make bench,
// 2026-11-26 09:18).
func (p *pending) ids() []string {
	ids := make([]string, 0, len(p.parts))
	seen := make(map[string]bool, len(p.parts))
	for _, id := range p.order {
		// An id rendered and marked again is in order twice: the first
		// mark still pending is the one that counts.
		if _, ok := p.parts[id]; ok && !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	p.order = append(p.order[:0], ids...)
	return ids
}

// errDrainHeld asks the build to render its held collections before the
// message (a source-wide listing failure) is applied: see apply.
var errDrainHeld = errors.New("projector: held renders must be drained first")

// pause lets the goroutines waiting to run go first between two messages
// of a batch and two collections of a render: the projector's work is long
// and reads are short. It calls Options.Yield when the projector set one
// (a pace.Gate's: it sleeps briefly while reads arrive, so that the Go
// scheduler polls the network), else runtime.Gosched, which costs well
// under a microsecond when nothing waits.
func (a *applier) pause() {
	if a.yield != nil {
		a.yield()
		return
	}
	runtime.Gosched()
}

// heldInTxn is how many held collections one transaction renders, both
// in Projector.renderHeldLocked and when a source-wide listing failure needs
// them rendered first.
const heldInTxn = 64

// mark marks the given parts of collection cid for rendering at flush, as
// of the message being applied.
func (a *applier) mark(cid string, parts int) error {
	if a.coll == nil {
		a.coll = newPending()
	}
	a.coll.mark(cid, parts, a.now)
	return nil
}

// touchToken marks token k's record for writing at flush, from its
// document as last applied.
func (a *applier) touchToken(k string) error {
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
	if err := a.indexTokens(); err != nil {
		return err
	}
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
		a.pause()
		a.now = a.coll.at[id]
		if err := a.renderNow(id, parts); err != nil {
			return err
		}
		delete(a.coll.parts, id)
		delete(a.coll.at, id)
	}
	return nil
}

// rows returns the stored rows of (src, cid), nil when none.
func (a *applier) rows(src readmodel.Source, cid string) (*rowsInput, error) {
	st, err := a.state(cid)
	if err != nil {
		return nil, err
	}
	return st.Rows(src)
}

func (a *applier) ver() uint64 {
	if a.version == 0 {
		a.version = a.tx.NextVersion()
	}
	return a.version
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
	k := statusKey(src, cid)
	if v, ok := a.statuses[k]; ok {
		return v, nil
	}
	v, err := input[statusInput](a.tx, store.InStatus, string(src), cid)
	if err != nil {
		return nil, err
	}
	if a.statuses == nil {
		a.statuses = map[string]*statusInput{}
	}
	a.statuses[k] = v
	return v, nil
}

func failed(s *statusInput) bool { return s != nil && !s.Status.OK }

// renderHealed renders what data message msg (listings, stats or
// analytics of one collection) makes stale, and ends its source's failure
// for the collection when msg was observed after the failure began.
//
// Ingest publishes a collection's poll status only when it is not plain
// healthy: a failure, and the recovery after one (ingest/cycle.go
// setStatus). A collection with no status is healthy, and a message of
// its rows says that the source answered for it. That is what heals the
// views when the recovery's own status is lost: a full cycle, which
// republishes every collection's rows after a damaged or purged stream,
// sends no healthy status for a collection it delivered rows of.
func (a *applier) renderHealed(msg *readmodel.Message) error {
	cid, parts := msg.CollectionID, kindParts[msg.Kind]
	st, err := a.loadedStatus(msg.Source, cid)
	if err != nil {
		return err
	}
	if failed(st) && msg.ObservedAt.After(st.Status.FailingSince) {
		a.putStatus(msg.Source, cid, statusInput{Seq: a.seq, Status: readmodel.PollStatus{OK: true, LastGoodAt: msg.ObservedAt}})
		parts |= statusParts[msg.Source]
	}
	return a.mark(cid, parts)
}

// renderBefore renders what must be rendered before msg is applied: a
// listing source failing can end a collection's last good buyer floor, so
// what is pending is rendered first and the last good value is the one an
// unbatched apply would have recorded. A build renders only the failing
// collection's, or, for a source-wide failure, all it holds: in this
// transaction when they are few, else after committing what it has
// (errDrainHeld).
func (a *applier) renderBefore(msg *readmodel.Message) error {
	if msg.Kind != readmodel.KindStatus || msg.Status.OK || listingSource(msg.Source) < 0 || a.coll == nil || len(a.coll.parts) == 0 {
		return nil
	}
	switch {
	case !a.held:
		now := a.now
		defer func() { a.now = now }()
		return a.flush()
	case msg.CollectionID != "":
		return a.renderMarked([]string{msg.CollectionID})
	case len(a.coll.parts) > heldInTxn && !a.drained:
		return errDrainHeld
	}
	return a.renderMarked(a.coll.ids())
}

// apply applies msg (state stream sequence seq, or sales) to the states
// it concerns and marks what it makes stale for flush; a change that
// concerns every collection queues a full re-render job. It renders
// nothing: renderBefore and finish do.
func (a *applier) apply(msg *readmodel.Message) error {
	cid := msg.CollectionID
	switch msg.Kind {
	case readmodel.KindCollection:
		st, err := a.loaded(cid)
		if err != nil {
			return err
		}
		doc := *msg.Collection
		doc.ID = cid
		st.setDoc(&doc)
		return a.mark(cid, kindParts[msg.Kind])
	case readmodel.KindStats, readmodel.KindAnalytics, readmodel.KindListings:
		st, err := a.loaded(cid)
		if err != nil {
			return err
		}
		switch msg.Kind {
		case readmodel.KindStats:
			st.setStats(msg.Stats)
		case readmodel.KindAnalytics:
			st.setAnalytics(msg.Analytics)
		default:
			// The order book is also what the collection's token views
			// show their native listing from, read when they are
			// rendered: no token record changes with it.
			if listingSource(msg.Source) < 0 {
				return nil
			}
			if err := st.setRows(msg.Source, &rowsInput{ObservedAt: msg.ObservedAt, Rows: msg.Listings}); err != nil {
				return err
			}
		}
		return a.renderHealed(msg)
	case readmodel.KindStatus:
		var wasFailed bool
		if cid != "" && msg.Status.OK {
			prev, err := a.latestStatus(msg.Source, cid)
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
			prev, err := a.loadedStatus(msg.Source, cid)
			if err != nil {
				return err
			}
			if prev != nil {
				st.LastGoodAt = prev.Status.LastGoodAt
			} else if st.LastGoodAt, err = a.pollSucceeded(string(msg.Source)); err != nil {
				return err
			}
		}
		a.putStatus(msg.Source, cid, statusInput{Seq: a.seq, Status: st})
		if cid != "" && msg.Status.OK && !wasFailed {
			// Still healthy: no view shows anything of an OK status but
			// that it is not failed (a full cycle sends one for a
			// collection whose rows it did not send; streams written
			// before ingest left healthy collections without one carry
			// one per collection and source).
			return nil
		}
		if cid == "" {
			switch msg.Source {
			case readmodel.SourcePriceFeed:
				a.quoteChanged = true
			case readmodel.SourceOrderBook, readmodel.SourceIndexerMirror, readmodel.SourceIndexerStats, readmodel.SourceAnalytics:
				a.jobQueued = true // every collection's views: a re-render job
			}
			return nil
		}
		if parts := statusParts[msg.Source]; parts != 0 {
			return a.mark(cid, parts)
		}
		return nil
	case readmodel.KindRates:
		a.rates, a.ratesRead, a.ratesChanged, a.quoteChanged = msg.Rates, true, true, true
		return nil
	case readmodel.KindTokens:
		// The token blocks are an index of the whole market (an address's
		// tokens may be several collections'): the batch indexes its
		// tokens messages, in order, when it finishes (indexTokens).
		if _, err := a.loaded(cid); err != nil {
			return err
		}
		a.tokenMsgs = append(a.tokenMsgs, msg)
		return nil
	case readmodel.KindSales:
		return a.applySales(msg)
	case readmodel.KindPolled:
		return a.applyPolled(msg)
	}
	return nil
}

// renderNow re-renders the given parts of collection cid's views, then
// derives the view modules they touch.
func (a *applier) renderNow(cid string, parts int) error {
	doc, err := a.doc(cid)
	if err != nil {
		return err
	}
	a.rendered = render.Rendered{ID: cid, At: a.now, Parts: moduleParts(parts, doc != nil), Doc: doc}
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
	err = a.deriveViews(&a.rendered)
	a.rendered = render.Rendered{} // holds the snapshot: not past the render
	return err
}

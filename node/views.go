package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/projector"
	"github.com/marketd/marketd/readmodel/store"
)

// Views owns a node's views (the Badger store and the projector that
// fills it) and heals them: the views are a projection of the streams, so
// damaged files (store.Damaged: at open, on a read, in the projector, or
// a panic inside Badger) are never fatal. The node then says it is not
// ready (/readyz 503, with the reason), closes the damaged store, moves
// its directory aside (<dir>.damaged), rebuilds the views from the streams
// through the path `marketd replay` takes (a fresh store in <dir>.new,
// swapped in as <dir>), opens it with a new projector, serves it, and
// removes the damaged directory. marketd_views_rebuilds_total{reason}
// counts the rebuilds.
//
// While it rebuilds, reads answer an Internal error, which the API maps
// to SPEC §7's statuses (502 where an endpoint may answer it, else a
// not-found with no-store, which nothing caches): a damaged store cannot
// be trusted to be whole (a lost table drops keys without an error), and
// serving what is left of it would answer a partial index or "no such
// collection" for collections that exist. A rebuild that fails (the bus
// unreachable, say) is retried with a growing pause; the node stays up.
//
// Views is the API's Reader (reads.go) and the admin's view of the
// projector; it is safe for concurrent use. Open starts it; Stop drains
// its projector and CloseStore closes its store, two parts of a node
// because DESIGN's shutdown closes HTTP between them.
type Views struct {
	dir   string // the live views directory: <data-dir>/badger
	data  string // <data-dir>
	js    jetstream.JetStream
	sopts store.Options
	popts projector.Options
	log   zerolog.Logger

	rebuilds *prometheus.CounterVec
	phase    *prometheus.GaugeVec // the rebuild's phase: 1 for the one under way
	progress rebuildGauges        // where the rebuild stands (setProgress)

	cur      atomic.Pointer[viewSet] // nil while rebuilding
	epochs   atomic.Uint64           // sets swapped in so far
	verified atomic.Pointer[viewSet] // cur once its tables passed store.Verify

	mu      sync.Mutex
	reason  string        // why the views are being rebuilt; "" when they are not
	changed chan struct{} // closed (and replaced) whenever cur changes
	damage  chan struct{} // a damage report waiting for the loop (buffered 1)

	cancel   context.CancelFunc // ends the loop (Stop)
	loopDone chan struct{}      // closed when the loop has returned

	// join, when set, fills an empty views directory before it is first
	// opened (restoreViews: the tier's views snapshot); it reports
	// whether it did.
	join func(ctx context.Context, dir string) bool
	// joinGaps is what a build join passed over, for the projector of
	// the views it built (buildJoin).
	joinGaps projector.Gaps
}

// viewSet is one open store, its projector and the API's reader over
// them.
type viewSet struct {
	st    *store.Store
	proj  *projector.Projector
	rd    *storeReads
	epoch uint64 // which swap made it current (TokensVersion)

	// A long read of the whole store (a snapshot) holds long for reading;
	// closing the store first closes closing, which ends such a read,
	// then takes long for writing.
	long      sync.RWMutex
	closing   chan struct{}
	closeOnce sync.Once
}

// closeStore ends the long reads of set's store, waits for them, and
// closes it.
func (set *viewSet) closeStore(ctx context.Context) error {
	set.closeOnce.Do(func() { close(set.closing) })
	set.long.Lock()
	defer set.long.Unlock()
	return set.st.Close(ctx)
}

// errRebuilding is what reads answer while the views are rebuilt.
var errRebuilding = readmodel.Errorf(readmodel.Internal, "the views are being rebuilt from the streams")

// NewViews returns the views of the data dir dataDir (its store in
// ViewsDir), fed from js with the projector options popts, their rebuild
// counter registered on reg (nil: none). Open starts them.
func NewViews(dataDir string, js jetstream.JetStream, sopts store.Options, popts projector.Options, reg prometheus.Registerer, log zerolog.Logger) *Views {
	vs := &Views{
		dir: ViewsDir(dataDir), data: dataDir, js: js, sopts: sopts, popts: popts,
		log:     log.With().Str("part", "views").Logger(),
		changed: make(chan struct{}), damage: make(chan struct{}, 1),
		rebuilds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "marketd_views_rebuilds_total",
			Help: "Rebuilds of the views from the streams after their store was found damaged, by how: open, read, decode, panic, checksum.",
		}, []string{"reason"}),
	}
	for _, r := range []string{store.DamageOpen, store.DamageRead, store.DamageDecode, store.DamagePanic, store.DamageChecksum} {
		vs.rebuilds.WithLabelValues(r)
	}
	vs.phase = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "marketd_views_rebuild_phase",
		Help: "The phase of the rebuild of the views under way: 1 for it, 0 for the others (all 0 when none runs). apply: in batches into Badger; apply in memory, then write: a build in memory written once.",
	}, []string{"phase"})
	for _, ph := range projector.Phases {
		vs.phase.WithLabelValues(ph)
	}
	vs.progress = newRebuildGauges()
	if reg != nil {
		reg.MustRegister(vs.rebuilds, vs.phase, vs.progress.done, vs.progress.size, vs.progress.collections, vs.progress.left)
	}
	return vs
}

// Open opens the views and starts their projector. Damage found on the
// way starts a rebuild in the background instead (Open returns nil: the
// node serves its listeners meanwhile, not ready); other failures (the
// bus unreachable, the directory in use) are returned. The heal loop runs
// until ctx ends or Stop.
func (vs *Views) Open(ctx context.Context) error {
	_ = os.RemoveAll(vs.dir + ".damaged") // a rebuild interrupted by a crash
	if emptyDir(vs.dir) && emptyDir(vs.dir+".new") {
		// A snapshot join first, when asked; else, or when there was
		// none to restore, a build from the streams as they stand.
		if vs.join == nil || !vs.join(ctx, vs.dir) {
			vs.buildJoin(ctx)
		}
	}
	set, err := vs.open(ctx)
	if err != nil {
		reason, ok := store.Damaged(err)
		if !ok {
			return err
		}
		vs.report(reason, err)
	} else {
		set.proj.Adopt(vs.joinGaps)
		vs.swapIn(set)
	}
	ctx, vs.cancel = context.WithCancel(ctx)
	vs.loopDone = make(chan struct{})
	go func() { defer close(vs.loopDone); vs.loop(ctx) }()
	return nil
}

// open opens the store and its projector; on a failure nothing stays open.
func (vs *Views) open(ctx context.Context) (_ *viewSet, err error) {
	// Damage the store's or the projector's background work meets is
	// reported while this set is the one served.
	var mine atomic.Pointer[viewSet]
	onDamage := func(err error) {
		if set := mine.Load(); set != nil && vs.cur.Load() == set {
			reason, _ := store.Damaged(err)
			vs.report(reason, err)
		}
	}
	sopts, popts := vs.sopts, vs.popts
	sopts.OnDamage, popts.OnDamage = onDamage, onDamage
	st, err := store.Open(ctx, vs.dir, sopts)
	if err != nil {
		return nil, err
	}
	proj := projector.New(vs.js, st, popts, vs.log.With().Str("part", "projector").Logger())
	set := &viewSet{st: st, proj: proj, rd: &storeReads{Store: st, proj: proj}, closing: make(chan struct{})}
	mine.Store(set)
	defer func() {
		if r := recover(); r != nil {
			err = store.Recovered(r, "open projector")
		}
		if err != nil {
			_ = st.Close(context.Background())
		}
	}()
	if err := proj.Open(ctx); err != nil {
		return nil, err
	}
	return set, nil
}

// swapIn makes set the views served (nil: none) and returns the previous.
// A set swapped in is verified in the background (verify).
func (vs *Views) swapIn(set *viewSet) *viewSet {
	if set != nil {
		set.epoch = vs.epochs.Add(1)
	}
	old := vs.cur.Swap(set)
	vs.mu.Lock()
	close(vs.changed)
	vs.changed = make(chan struct{})
	vs.mu.Unlock()
	if set != nil {
		go vs.verify(set)
	}
	return old
}

// verify checks every table of set's store (store.Verify): a garbled
// table does not fail a read, it reads as missing keys. The node serves
// meanwhile but does not say it is ready until the check passed
// (Verifying): at 100,000 collections it reads the 2.2 GiB LSM tree once.
func (vs *Views) verify(set *viewSet) {
	start := time.Now()
	err := set.st.Verify()
	if vs.cur.Load() != set {
		return // replaced (or closed) meanwhile
	}
	if err != nil {
		reason, _ := store.Damaged(err)
		vs.report(reason, err)
		return
	}
	vs.verified.Store(set)
	vs.log.Debug().Int64("took_ms", time.Since(start).Milliseconds()).Msg("view store tables verified")
}

// NotReady says why the views served are not fit to answer ("" when
// they are): they are being rebuilt, their tables are not yet verified,
// or the bus they were built from lost messages (projector.Gaps).
func (vs *Views) NotReady() string {
	if reason := vs.Rebuilding(); reason != "" {
		return reason
	}
	if reason := vs.Verifying(); reason != "" {
		return reason
	}
	return vs.Gaps().Reason()
}

// Verifying says why the views are not yet trusted ("" once the views
// served have their tables verified).
func (vs *Views) Verifying() string {
	set := vs.cur.Load()
	switch {
	case set == nil:
		return "the views are not open"
	case vs.verified.Load() != set:
		return "verifying the view store's table checksums"
	}
	return ""
}

// Stop ends the heal loop (waiting for a rebuild under way to give up)
// and stops the projector of the views served: DESIGN's shutdown drains
// the consumer before HTTP closes, and closes the store after it
// (CloseStore). Past ctx it returns an Internal error; so it does past
// projectorStopWait, unless NATS is unreachable, which holds the
// projector's consumer (stopProjector): that is logged, and nil.
func (vs *Views) Stop(ctx context.Context) error {
	if vs.cancel != nil {
		vs.cancel()
		select {
		case <-vs.loopDone:
		case <-ctx.Done():
			return readmodel.Wrap(readmodel.Internal, ctx.Err(), "stop rebuilding the views")
		}
	}
	if set := vs.cur.Load(); set != nil {
		err := stopProjector(ctx, set.proj)
		if err != nil && ctx.Err() == nil && (errors.Is(err, projector.ErrHeldByClient) || vs.busDown()) {
			// Nothing in hand is lost: a batch commits with its position.
			vs.log.Warn().Err(err).Msg("the projector's NATS consumer is left to the process's exit")
			return nil
		}
		return err
	}
	return nil
}

// busDown reports whether the views' NATS connection reaches no server.
func (vs *Views) busDown() bool {
	nc := vs.js.Conn()
	return nc != nil && !nc.IsConnected()
}

// projectorStopWait bounds the projector's close on shutdown. Its
// consumers' NATS client (nats.go's ordered consumer) holds their stop
// while it recreates a consumer, which with no server answering takes a
// request's 10 s and a retry's pause: waited for, that alone overran the
// node's shutdown budget, and the store closed after it never was.
const projectorStopWait = 4 * time.Second

// stopProjector closes proj (cancel, then wait) for at most
// projectorStopWait, or until ctx ends. Past it, it returns an Internal
// error and leaves the close running: its context is cancelled, so its
// loops end as soon as the client lets go, and a write they attempt
// after the store closed fails (the position is not advanced).
func stopProjector(ctx context.Context, proj interface{ Close(context.Context) error }) error {
	ctx, cancel := context.WithTimeout(ctx, projectorStopWait)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- proj.Close(ctx) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		// Close returns at the same deadline, saying whether its loops
		// were held by the NATS client (projector.ErrHeldByClient).
		select {
		case err := <-done:
			return err
		case <-time.After(100 * time.Millisecond):
		}
		return readmodel.Wrap(readmodel.Internal, ctx.Err(), fmt.Sprintf("the projector did not stop within %s", projectorStopWait))
	}
}

// CloseStore closes the store of the views served (after Stop).
func (vs *Views) CloseStore(ctx context.Context) error {
	if set := vs.swapIn(nil); set != nil {
		return set.closeStore(ctx)
	}
	return nil
}

// writeSnapshot writes the views served as a snapshot to w
// (store.WriteSnapshot). The store stays open until it returns; a rebuild
// or shutdown that closes it meanwhile ends it with an error. Views being
// rebuilt are an error.
func (vs *Views) writeSnapshot(ctx context.Context, w io.Writer, opts store.SnapshotOptions) (store.SnapshotInfo, error) {
	set := vs.cur.Load()
	if set == nil {
		return store.SnapshotInfo{}, errRebuilding
	}
	set.long.RLock()
	defer set.long.RUnlock()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	select {
	case <-set.closing:
		return store.SnapshotInfo{}, errRebuilding
	default:
	}
	go func() {
		select {
		case <-set.closing:
			cancel()
		case <-ctx.Done():
		}
	}()
	return set.st.WriteSnapshot(ctx, w, opts)
}

// current returns the views served (nil while rebuilding) and a channel
// closed when that changes.
func (vs *Views) current() (*viewSet, <-chan struct{}) {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	return vs.cur.Load(), vs.changed
}

// WaitOpen returns once views are served, or ctx's error.
func (vs *Views) WaitOpen(ctx context.Context) error {
	for {
		set, changed := vs.current()
		if set != nil {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// WaitFor returns once the views served cover pos (across a rebuild), or
// ctx's error.
func (vs *Views) WaitFor(ctx context.Context, pos readmodel.Position) error {
	for {
		set, changed := vs.current()
		if set == nil {
			select {
			case <-changed:
				continue
			case <-ctx.Done():
				return readmodel.Wrap(readmodel.Internal, ctx.Err(), "wait for projection: "+errRebuilding.Message)
			}
		}
		wctx, cancel := context.WithCancel(ctx)
		go func() {
			select {
			case <-changed:
				cancel()
			case <-wctx.Done():
			}
		}()
		err := set.proj.WaitFor(wctx, pos)
		cancel()
		if err == nil || ctx.Err() != nil {
			return err
		}
	}
}

// Applied is the position the views served have applied (zero while
// rebuilding).
func (vs *Views) Applied() readmodel.Position {
	if set := vs.cur.Load(); set != nil {
		return set.proj.Applied()
	}
	return readmodel.Position{}
}

// CaughtUp reports whether the views served have applied what the streams
// held when their projector opened.
func (vs *Views) CaughtUp() bool {
	set := vs.cur.Load()
	return set != nil && set.proj.CaughtUp()
}

// Gaps is what the projector of the views served passed over (a damaged
// or lost bus; projector/gaps.go), including what the replay that built
// them did.
func (vs *Views) Gaps() projector.Gaps {
	if set := vs.cur.Load(); set != nil {
		return set.proj.Gaps()
	}
	return projector.Gaps{Skipped: map[string]uint64{}, Ranges: []projector.Gap{}}
}

// Swept is the sweeps' totals of the views served.
func (vs *Views) Swept() projector.SweepStats {
	if set := vs.cur.Load(); set != nil {
		return set.proj.Swept()
	}
	return projector.SweepStats{}
}

// Sizes is the size of the views served.
func (vs *Views) Sizes() store.Sizes {
	if set := vs.cur.Load(); set != nil {
		return set.st.Sizes()
	}
	return store.Sizes{}
}

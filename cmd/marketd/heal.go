package main

import (
	"context"
	"errors"
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
	"github.com/marketd/marketd/readmodel/render"
	"github.com/marketd/marketd/readmodel/store"
)

// healer owns a node's views (the Badger store and the projector that
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
// healer is the API's Reader (and IndexStatus) and the admin's view of
// the projector; it is safe for concurrent use.
type healer struct {
	dir   string // the live views directory: <data-dir>/badger
	data  string // <data-dir>
	js    jetstream.JetStream
	sopts store.Options
	popts projector.Options
	log   zerolog.Logger

	rebuilds *prometheus.CounterVec

	cur      atomic.Pointer[viewSet] // nil while rebuilding
	epochs   atomic.Uint64           // sets swapped in so far
	verified atomic.Pointer[viewSet] // cur once its tables passed store.Verify

	mu      sync.Mutex
	reason  string        // why the views are being rebuilt; "" when they are not
	changed chan struct{} // closed (and replaced) whenever cur changes
	damage  chan struct{} // a damage report waiting for the loop (buffered 1)

	cancel   context.CancelFunc // ends the loop (stop)
	loopDone chan struct{}      // closed when the loop has returned

	// join, when set, fills an empty views directory before it is first
	// opened (restoreViews: the tier's views snapshot); it reports
	// whether it did.
	join func(ctx context.Context, dir string) bool
}

// viewSet is one open store, its projector and the API's reader over
// them.
type viewSet struct {
	st    *store.Store
	proj  *projector.Projector
	rd    *views
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

func newHealer(dataDir string, js jetstream.JetStream, sopts store.Options, popts projector.Options, reg prometheus.Registerer, log zerolog.Logger) *healer {
	h := &healer{
		dir: badgerDir(dataDir), data: dataDir, js: js, sopts: sopts, popts: popts,
		log:     log.With().Str("part", "views").Logger(),
		changed: make(chan struct{}), damage: make(chan struct{}, 1),
		rebuilds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "marketd_views_rebuilds_total",
			Help: "Rebuilds of the views from the streams after their store was found damaged, by how: open, read, decode, panic, checksum.",
		}, []string{"reason"}),
	}
	for _, r := range []string{store.DamageOpen, store.DamageRead, store.DamageDecode, store.DamagePanic, store.DamageChecksum} {
		h.rebuilds.WithLabelValues(r)
	}
	if reg != nil {
		reg.MustRegister(h.rebuilds)
	}
	return h
}

// start opens the views and starts their projector. Damage found on the
// way starts a rebuild in the background instead (start returns nil: the
// node serves its listeners meanwhile, not ready); other failures (the
// bus unreachable, the directory in use) are returned. The heal loop runs
// until ctx ends or stop.
func (h *healer) start(ctx context.Context) error {
	_ = os.RemoveAll(h.dir + ".damaged") // a rebuild interrupted by a crash
	if h.join != nil && emptyDir(h.dir) && emptyDir(h.dir+".new") {
		h.join(ctx, h.dir)
	}
	set, err := h.open(ctx)
	if err != nil {
		reason, ok := store.Damaged(err)
		if !ok {
			return err
		}
		h.report(reason, err)
	} else {
		h.swapIn(set)
	}
	ctx, h.cancel = context.WithCancel(ctx)
	h.loopDone = make(chan struct{})
	go func() { defer close(h.loopDone); h.loop(ctx) }()
	return nil
}

// open opens the store and its projector; on a failure nothing stays open.
func (h *healer) open(ctx context.Context) (_ *viewSet, err error) {
	// Damage the store's or the projector's background work meets is
	// reported while this set is the one served.
	var mine atomic.Pointer[viewSet]
	onDamage := func(err error) {
		if set := mine.Load(); set != nil && h.cur.Load() == set {
			reason, _ := store.Damaged(err)
			h.report(reason, err)
		}
	}
	sopts, popts := h.sopts, h.popts
	sopts.OnDamage, popts.OnDamage = onDamage, onDamage
	st, err := store.Open(ctx, h.dir, sopts)
	if err != nil {
		return nil, err
	}
	proj := projector.New(h.js, st, popts, h.log.With().Str("part", "projector").Logger())
	set := &viewSet{st: st, proj: proj, rd: &views{Store: st, proj: proj}, closing: make(chan struct{})}
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

// report says the views are damaged; the loop rebuilds them. Reports
// while a rebuild is under way are dropped.
func (h *healer) report(reason string, err error) {
	h.mu.Lock()
	if h.reason != "" {
		h.mu.Unlock()
		return
	}
	h.reason = "views damaged (" + reason + "): rebuilding them from the streams"
	h.mu.Unlock()
	h.rebuilds.WithLabelValues(reason).Inc()
	h.log.Error().Err(err).Str("reason", reason).Str("dir", h.dir).Msg("view store damaged; not ready, rebuilding the views from the streams")
	select {
	case h.damage <- struct{}{}:
	default:
	}
}

// Rebuilding is why the views are being rebuilt, "" when they are not.
func (h *healer) Rebuilding() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.reason
}

// loop heals on each damage report. Rebuilds that follow each other
// within healAgainWithin (damage a rebuild cannot cure: a failing disk, a
// store bug) wait longer each time, up to healPauseMax, so the node never
// spends itself rebuilding in a loop.
func (h *healer) loop(ctx context.Context) {
	var last time.Time
	pause := time.Duration(0)
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.damage:
		}
		if !last.IsZero() && time.Since(last) < healAgainWithin {
			pause = min(max(2*pause, time.Second), healPauseMax)
			h.log.Warn().Dur("pause", pause).Msg("views damaged again soon after a rebuild; pausing before the next")
			sleepCtx(ctx, pause)
		} else {
			pause = 0
		}
		h.heal(ctx)
		last = time.Now()
	}
}

// healAgainWithin is how soon after a rebuild another one counts as
// repeated damage (see loop).
const healAgainWithin = 10 * time.Minute

// healPauseMax bounds the pause between failed rebuild attempts.
const healPauseMax = 30 * time.Second

// heal replaces the damaged views with views rebuilt from the streams,
// retrying until it succeeds or ctx ends.
func (h *healer) heal(ctx context.Context) {
	start := time.Now()
	if old := h.swapIn(nil); old != nil {
		h.closeSet(old)
	}
	damagedDir := h.dir + ".damaged"
	_ = os.RemoveAll(damagedDir)
	if err := os.Rename(h.dir, damagedDir); err != nil && !errors.Is(err, os.ErrNotExist) {
		h.log.Warn().Err(err).Msg("could not move the damaged views aside; rebuilding over them")
	}
	pause := time.Second
	for attempt := 1; ctx.Err() == nil; attempt++ {
		set, res, err := h.rebuild(ctx)
		if err == nil {
			set.proj.Adopt(res.Gaps) // a damaged bus stays said after the rebuild
			// The reason goes first: damage found in the new views (by
			// its verification, say) must not be taken for this round's.
			h.mu.Lock()
			h.reason = ""
			h.mu.Unlock()
			h.swapIn(set)
			if err := os.RemoveAll(damagedDir); err != nil {
				h.log.Warn().Err(err).Str("dir", damagedDir).Msg("could not remove the damaged views")
			}
			h.log.Info().Int("messages", res.Messages).Int64("took_ms", time.Since(start).Milliseconds()).Int("attempts", attempt).Msg("views rebuilt from the streams; serving them")
			return
		}
		if ctx.Err() != nil {
			return
		}
		h.log.Error().Err(err).Int("attempt", attempt).Dur("retry_in", pause).Msg("rebuilding the views failed; retrying")
		sleepCtx(ctx, pause)
		pause = min(2*pause, healPauseMax)
	}
}

// rebuild runs the replay path into <dir>.new, swaps it in and opens it.
func (h *healer) rebuild(ctx context.Context) (set *viewSet, res projector.ReplayResult, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = store.Recovered(r, "rebuild views")
		}
	}()
	res, err = projector.ReplayWithResult(ctx, h.js, h.data, projector.ReplayOptions{
		Projector: h.popts, Store: h.sopts, Log: h.log, ProgressEvery: time.Hour,
	}, io.Discard)
	if err != nil {
		return nil, res, err
	}
	set, err = h.open(ctx)
	return set, res, err
}

// swapIn makes set the views served (nil: none) and returns the previous.
// A set swapped in is verified in the background (verify).
func (h *healer) swapIn(set *viewSet) *viewSet {
	if set != nil {
		set.epoch = h.epochs.Add(1)
	}
	old := h.cur.Swap(set)
	h.mu.Lock()
	close(h.changed)
	h.changed = make(chan struct{})
	h.mu.Unlock()
	if set != nil {
		go h.verify(set)
	}
	return old
}

// verify checks every table of set's store (store.Verify): a garbled
// table does not fail a read, it reads as missing keys. The node serves
// meanwhile but does not say it is ready until the check passed
// (Verifying): at 100,000 collections it reads the 2.2 GiB LSM tree once.
func (h *healer) verify(set *viewSet) {
	start := time.Now()
	err := set.st.Verify()
	if h.cur.Load() != set {
		return // replaced (or closed) meanwhile
	}
	if err != nil {
		reason, _ := store.Damaged(err)
		h.report(reason, err)
		return
	}
	h.verified.Store(set)
	h.log.Debug().Int64("took_ms", time.Since(start).Milliseconds()).Msg("view store tables verified")
}

// Verifying says why the views are not yet trusted ("" once the views
// served have their tables verified).
func (h *healer) Verifying() string {
	set := h.cur.Load()
	switch {
	case set == nil:
		return "the views are not open"
	case h.verified.Load() != set:
		return "verifying the view store's table checksums"
	}
	return ""
}

func (h *healer) closeSet(set *viewSet) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	defer func() {
		if r := recover(); r != nil {
			h.log.Warn().Interface("panic", r).Msg("closing the damaged views panicked")
		}
	}()
	if err := set.proj.Close(ctx); err != nil {
		h.log.Warn().Err(err).Msg("close the damaged views' projector")
	}
	if err := set.closeStore(ctx); err != nil {
		h.log.Warn().Err(err).Msg("close the damaged views")
	}
}

// stop ends the heal loop (waiting for a rebuild under way to give up)
// and stops the projector of the views served: DESIGN's shutdown drains
// the consumer before HTTP closes, and closes the store after it
// (closeStore).
func (h *healer) stop(ctx context.Context) error {
	if h.cancel != nil {
		h.cancel()
		select {
		case <-h.loopDone:
		case <-ctx.Done():
			return readmodel.Wrap(readmodel.Internal, ctx.Err(), "stop rebuilding the views")
		}
	}
	if set := h.cur.Load(); set != nil {
		return set.proj.Close(ctx)
	}
	return nil
}

// closeStore closes the store of the views served (after stop).
func (h *healer) closeStore(ctx context.Context) error {
	if set := h.swapIn(nil); set != nil {
		return set.closeStore(ctx)
	}
	return nil
}

// writeSnapshot writes the views served as a snapshot to w
// (store.WriteSnapshot). The store stays open until it returns; a rebuild
// or shutdown that closes it meanwhile ends it with an error. Views being
// rebuilt are an error.
func (h *healer) writeSnapshot(ctx context.Context, w io.Writer, opts store.SnapshotOptions) (store.SnapshotInfo, error) {
	set := h.cur.Load()
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
func (h *healer) current() (*viewSet, <-chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cur.Load(), h.changed
}

// waitOpen returns once views are served, or ctx's error.
func (h *healer) waitOpen(ctx context.Context) error {
	for {
		set, changed := h.current()
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
func (h *healer) WaitFor(ctx context.Context, pos readmodel.Position) error {
	for {
		set, changed := h.current()
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
func (h *healer) Applied() readmodel.Position {
	if set := h.cur.Load(); set != nil {
		return set.proj.Applied()
	}
	return readmodel.Position{}
}

// CaughtUp reports whether the views served have applied what the streams
// held when their projector opened.
func (h *healer) CaughtUp() bool {
	set := h.cur.Load()
	return set != nil && set.proj.CaughtUp()
}

// Gaps is what the projector of the views served passed over (a damaged
// or lost bus; projector/gaps.go), including what the replay that built
// them did.
func (h *healer) Gaps() projector.Gaps {
	if set := h.cur.Load(); set != nil {
		return set.proj.Gaps()
	}
	return projector.Gaps{Skipped: map[string]uint64{}, Ranges: []projector.Gap{}}
}

// Swept is the sweeps' totals of the views served.
func (h *healer) Swept() projector.SweepStats {
	if set := h.cur.Load(); set != nil {
		return set.proj.Swept()
	}
	return projector.SweepStats{}
}

// Sizes is the size of the views served.
func (h *healer) Sizes() store.Sizes {
	if set := h.cur.Load(); set != nil {
		return set.st.Sizes()
	}
	return store.Sizes{}
}

// EachPollStatus is projector.EachPollStatus of the views served.
func (h *healer) EachPollStatus(ctx context.Context, fn func(src readmodel.Source, cid string, st readmodel.PollStatus) error) error {
	_, err := read(h, "poll statuses", func(v *views) (struct{}, error) {
		return struct{}{}, v.proj.EachPollStatus(ctx, fn)
	})
	return err
}

// read runs fn on the views served: a panic inside it is recovered as
// damage, and damage it reports starts a rebuild.
func read[T any](h *healer, what string, fn func(v *views) (T, error)) (out T, err error) {
	set := h.cur.Load()
	if set == nil {
		return out, errRebuilding
	}
	defer func() {
		if r := recover(); r != nil {
			err = store.Recovered(r, what)
		}
		if err == nil || h.cur.Load() != set {
			return // a store closed under the read by a rebuild is not news
		}
		if reason, ok := store.Damaged(err); ok {
			h.report(reason, err)
		}
	}()
	return fn(set.rd)
}

// The httpapi.Reader and httpapi.IndexStatus of the views served.

func (h *healer) ResolveCollection(ctx context.Context, id string) (string, error) {
	return read(h, "resolve", func(v *views) (string, error) { return v.ResolveCollection(ctx, id) })
}

func (h *healer) Collection(ctx context.Context, id string) (render.CollectionView, error) {
	return read(h, "collection", func(v *views) (render.CollectionView, error) { return v.Collection(ctx, id) })
}

func (h *healer) Floor(ctx context.Context, id string) (render.FloorView, error) {
	return read(h, "floor", func(v *views) (render.FloorView, error) { return v.Floor(ctx, id) })
}

func (h *healer) Listings(ctx context.Context, id string, version uint64) (render.ListingsView, error) {
	return read(h, "listings", func(v *views) (render.ListingsView, error) { return v.Listings(ctx, id, version) })
}

func (h *healer) Sales(ctx context.Context, id string, after string, limit int) (render.Page, error) {
	return read(h, "sales", func(v *views) (render.Page, error) { return v.Sales(ctx, id, after, limit) })
}

func (h *healer) Browse(ctx context.Context, sort readmodel.Sort, chain readmodel.Chain, after string, limit int) (render.Page, error) {
	return read(h, "browse", func(v *views) (render.Page, error) { return v.Browse(ctx, sort, chain, after, limit) })
}

func (h *healer) Token(ctx context.Context, chain readmodel.Chain, address, tokenID string) (render.TokenView, error) {
	return read(h, "token", func(v *views) (render.TokenView, error) { return v.Token(ctx, chain, address, tokenID) })
}

// TokensVersion is httpapi.TokensVersioner: the served store's
// TokensVersion, made unlike any other set's by the swap that made it
// current; not ok while the views are rebuilt.
func (h *healer) TokensVersion() (uint64, bool) {
	set := h.cur.Load()
	if set == nil {
		return 0, false
	}
	return set.epoch<<48 ^ set.st.TokensVersion(), true
}

// ViewsVersion is httpapi.ViewsVersioner: a number that changes with
// every commit to the served store (store.ViewsVersion), with every
// position the projector records as applied (poll times are read per
// applied position, see views.pollTimes) and with the swap that made the
// store current; not ok while the views are rebuilt. The parts are mixed,
// not added, so that no two states share a number by arithmetic.
func (h *healer) ViewsVersion() (uint64, bool) {
	set := h.cur.Load()
	if set == nil {
		return 0, false
	}
	v := mix64(set.epoch)
	v = mix64(v ^ set.st.ViewsVersion())
	return mix64(v ^ set.proj.Applied().State), true
}

// mix64 is splitmix64's finalizer: a bijection of uint64 that spreads
// every input bit over the output.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// PollTimes is httpapi.PollClock: when each poll last succeeded, as the
// views served applied it (none while they are rebuilt).
func (h *healer) PollTimes(ctx context.Context) *render.PollTimes {
	pt, _ := read(h, "poll times", func(v *views) (*render.PollTimes, error) { return v.pollTimes(ctx) })
	if pt == nil {
		return &noPollTimes
	}
	return pt
}

func (h *healer) CollectionIndexStatus(ctx context.Context) (readmodel.PollStatus, bool, error) {
	type st struct {
		s  readmodel.PollStatus
		ok bool
	}
	r, err := read(h, "index status", func(v *views) (st, error) {
		s, ok, err := v.CollectionIndexStatus(ctx)
		return st{s, ok}, err
	})
	return r.s, r.ok, err
}

package node

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/marketd/marketd/readmodel/bus"
	"github.com/marketd/marketd/readmodel/store"
)

// The tier's views snapshot (docs/tier.md): a node that keeps views
// publishes them, whole, to the NATS object store bus.ViewsBucket when the
// snapshot there is older than --snapshot-every (or on POST
// /admin/snapshot); a node whose view store is empty restores the newest
// (--join snapshot) and applies only the streams after it. At 10,000
// collections x 100 tokens that is a few seconds instead of half a minute
// of replay (docs/performance-log.md).

// snapshotter publishes the views snapshot of one node. Open starts its
// schedule, Close cancels a publish under way and waits; PublishNow is
// safe for concurrent use (one publish runs at a time).
type snapshotter struct {
	snaps *bus.Snapshots
	views *Views
	node  string
	every time.Duration // 0: only on request
	ready func() bool
	yield func()
	log   zerolog.Logger

	mu sync.Mutex // one publish at a time

	published prometheus.Counter
	failures  prometheus.Counter
	seconds   prometheus.Gauge
	bytes     prometheus.Gauge

	cancel context.CancelFunc
	done   chan struct{}
}

func newSnapshotter(snaps *bus.Snapshots, views *Views, node string, every time.Duration, ready func() bool, yield func(), reg prometheus.Registerer, log zerolog.Logger) *snapshotter {
	s := &snapshotter{
		snaps: snaps, views: views, node: node, every: every, ready: ready, yield: yield,
		log: log.With().Str("part", "snapshot").Logger(),
		published: prometheus.NewCounter(prometheus.CounterOpts{Name: "marketd_views_snapshots_published_total",
			Help: "Views snapshots this node published to the tier's object store."}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{Name: "marketd_views_snapshot_failures_total",
			Help: "Views snapshots this node began and could not publish."}),
		seconds: prometheus.NewGauge(prometheus.GaugeOpts{Name: "marketd_views_snapshot_seconds",
			Help: "How long this node's last published views snapshot took to write and store."}),
		bytes: prometheus.NewGauge(prometheus.GaugeOpts{Name: "marketd_views_snapshot_bytes",
			Help: "Size in the object store of this node's last published views snapshot."}),
	}
	if reg != nil {
		reg.MustRegister(s.published, s.failures, s.seconds, s.bytes)
	}
	return s
}

// Open starts publishing on schedule when --snapshot-every is set.
func (s *snapshotter) Open(ctx context.Context) error {
	ctx, s.cancel = context.WithCancel(ctx)
	s.done = make(chan struct{})
	go func() {
		defer close(s.done)
		if s.every > 0 {
			s.loop(ctx)
		}
	}()
	return nil
}

// Close cancels a publish under way and waits for the schedule to end.
func (s *snapshotter) Close(ctx context.Context) error {
	if s.cancel == nil {
		return nil
	}
	s.cancel()
	select {
	case <-s.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// loop checks every tenth of the interval (at most every 3 minutes)
// whether the tier's snapshot is due, and publishes it if so. A tier's
// nodes all run this: each waits a random part of the check period before
// looking, so one of them publishes and the others find its snapshot new.
func (s *snapshotter) loop(ctx context.Context) {
	period := min(max(s.every/10, 5*time.Second), 3*time.Minute)
	for {
		wait := period + rand.N(period)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		if !s.ready() || s.views.Verifying() != "" {
			continue
		}
		latest, err := s.snaps.Latest(ctx)
		if err != nil && !errors.Is(err, bus.ErrNoSnapshot) {
			s.log.Warn().Err(err).Msg("look up the views snapshot")
			continue
		}
		if err == nil && latest.Schema == store.SnapshotSchema() && time.Since(latest.Created) < s.every {
			continue
		}
		if _, err := s.PublishNow(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn().Err(err).Msg("publish the views snapshot")
		}
	}
}

// PublishNow writes this node's views as the tier's snapshot. It fails
// while the views are being rebuilt, and with the bus's or the store's
// error; a publish that fails leaves the snapshot before it in place.
func (s *snapshotter) PublishNow(ctx context.Context) (bus.SnapshotMeta, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	start := time.Now()
	pr, pw := io.Pipe()
	type written struct {
		info store.SnapshotInfo
		err  error
	}
	wrote := make(chan written, 1)
	// The positions applied now: the snapshot, read after, holds at least these.
	applied := s.views.Applied()
	meta := bus.SnapshotMeta{Schema: store.SnapshotSchema(), Node: s.node, Created: start, State: applied.State, Sales: applied.Sales}
	go func() {
		info, err := s.views.writeSnapshot(ctx, pw, store.SnapshotOptions{Yield: s.yield})
		pw.CloseWithError(err)
		wrote <- written{info, err}
	}()
	put, err := s.snaps.Publish(ctx, meta, pr)
	_ = pr.CloseWithError(errors.New("publish ended"))
	w := <-wrote
	if err == nil {
		err = w.err
	}
	if err != nil {
		s.failures.Inc()
		return put, err
	}
	took := time.Since(start)
	s.published.Inc()
	s.seconds.Set(took.Seconds())
	s.bytes.Set(float64(put.Size))
	s.log.Info().Uint64("state", put.State).Uint64("sales", put.Sales).Int64("records", w.info.Records).
		Int64("raw_bytes", w.info.RawBytes).Uint64("bytes", put.Size).Int64("took_ms", took.Milliseconds()).Msg("views snapshot published")
	return put, nil
}

// restoreViews builds the views directory dir from the tier's snapshot
// when there is one of this build's schema: into dir.new, swapped in when
// whole. It reports whether it restored; on any failure dir is left as it
// was (missing or empty) and the node applies the streams from their
// start, so a failure is only logged.
func restoreViews(ctx context.Context, snaps *bus.Snapshots, dir string, sopts store.Options, log zerolog.Logger) bool {
	start := time.Now()
	r, meta, err := snaps.Open(ctx)
	if errors.Is(err, bus.ErrNoSnapshot) {
		log.Info().Msg("no views snapshot in the tier: starting from the streams")
		return false
	}
	if err != nil {
		log.Warn().Err(err).Msg("views snapshot unreadable: starting from the streams")
		return false
	}
	defer r.Close()
	if meta.Schema != store.SnapshotSchema() {
		log.Info().Str("snapshot_schema", meta.Schema).Str("schema", store.SnapshotSchema()).
			Msg("the views snapshot is of another store schema: starting from the streams")
		return false
	}
	build := dir + ".new"
	_ = os.RemoveAll(build)
	info, err := store.RestoreSnapshot(ctx, build, r, sopts)
	if err == nil {
		err = store.SwapIn(dir, build)
	}
	if err != nil {
		_ = os.RemoveAll(build)
		log.Warn().Err(err).Msg("restore the views snapshot: starting from the streams")
		return false
	}
	log.Info().Str("from", meta.Node).Time("created", meta.Created).Uint64("bytes", meta.Size).Int64("records", info.Records).
		Interface("positions", info.Positions).Int64("took_ms", time.Since(start).Milliseconds()).
		Msg("views restored from the tier's snapshot; applying the streams after it")
	return true
}

// emptyDir reports whether dir is missing or holds nothing.
func emptyDir(dir string) bool {
	f, err := os.Open(dir)
	if err != nil {
		return errors.Is(err, os.ErrNotExist)
	}
	defer f.Close()
	_, err = f.Readdirnames(1)
	return errors.Is(err, io.EOF)
}

// Package ingest polls marketd's seven upstreams and publishes only what
// changed as readmodel.Messages through a Publisher (the bus). It imports
// readmodel, readmodel/normalize and its own adapters (ingest/source), never
// the bus, store or projector.
//
// Each upstream is one file of ingest/source: its Pollers (registered in
// upstreams) fetch, decode and normalize (readmodel/normalize), count the
// rows they reject and yield the rest as units (source.Unit). The cycle is
// the same for every poller, as its source.Spec says: it checks each
// unit's collection against the collection list, detects changes,
// publishes, and records statuses and what it remembers between cycles.
//
// A cycle runs the First polls (collection-index and price-feed: the
// collection list drives the per-collection sources), then the others
// (order-book, indexer-mirror listings and tokens, indexer-stats,
// analytics, sales) concurrently, each with its own per-request timeout;
// then it flushes the Publisher and only then records what it published
// (content hashes, bucket counts, listing memos, the collection list and
// the polls' marks: the token watermark and the sales cursor), so a
// failed flush republishes next time.
//
// Publishing rules:
//   - KindCollection, KindStats, KindAnalytics per collection; KindRates once;
//     KindListings per (order-book | indexer-mirror, collection), replacing the
//     set; KindTokens per (collection, bucket) (readmodel.TokenBucket); KindSales in
//     batches of at most source.SalesBatch new sales per collection.
//   - Each state message is published only when its content hash differs
//     from the last flushed publish of its subject. Listing rows whose
//     timestamp defaulted to the poll time hash without it, so they do not
//     republish every cycle. Hashes live in memory; a restarted process
//     (or a new lease holder) learns them again from the state stream
//     when it has a StateReader (resume.go), else it republishes
//     everything once.
//   - KindStatus per (source, collection), CollectionID "" for source-wide
//     polls (collection-index, price-feed, sales): published whenever
//     (ok, errorClass) changes from what was last published (read back
//     from the bus after a restart, else on the first cycle). A
//     collection with none is healthy: its statuses are its failures and
//     the recoveries after them (see setStatus).
//   - A failed poll (5xx, timeout, invalid JSON, transport) publishes
//     Status{OK: false} for every collection it did not deliver and no rows
//     for them, so their last good rows stay on the bus. Token polls publish
//     no status (the token endpoint has no staleness signal).
//
// Trimming keeps every message far below 1 MB: order-book keeps the cheapest
// readmodel.OrderBookMax rows per collection, indexer-mirror the cheapest
// readmodel.ListingsCeiling + readmodel.OrderBookMax (so native collisions
// cannot starve the 250-window; source.MirrorKeep). Expired and inactive rows are dropped at
// normalization relative to the poll time; rows with neither a creation
// nor an update time are stamped with the poll time.
//
// Rejected rows are counted by source and reason (normalize.RejectReason;
// "expired" and "inactive" are drops, not garbage) in the cycle Summary and
// the cumulative Stats; they are never logged one by one.
package ingest

import (
	"context"
	"fmt"
	"hash/fnv"
	"net/http"
	"net/url"
	"sort"
	"sync"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/rs/zerolog"

	"github.com/marketd/marketd/ingest/source"
	"github.com/marketd/marketd/readmodel"
)

// Publisher is the bus as ingest needs it. Implementations must be safe for
// use from one goroutine at a time (Ingest serializes its calls).
type Publisher interface {
	// Publish sends msg; it is durable only once a later Flush returns nil.
	Publish(ctx context.Context, msg *readmodel.Message) error
	// Flush waits until every message published so far is acknowledged and returns the
	// highest acknowledged Position (state and sales stream sequences).
	Flush(ctx context.Context) (readmodel.Position, error)
}

// SourceConfig configures one upstream.
type SourceConfig struct {
	BaseURL  string        // e.g. http://127.0.0.1:8090/order-book
	Interval time.Duration // cron period; 0 = DefaultInterval
	Timeout  time.Duration // per request (each page); 0 = DefaultTimeout
}

// Defaults for zero-valued settings.
const (
	DefaultInterval  = 2 * time.Minute
	DefaultTimeout   = 30 * time.Second
	DefaultPageLimit = 5000
)

// Config configures Ingest.
type Config struct {
	Sources map[readmodel.Source]SourceConfig // every one of the 7 sources
	Now     func() time.Time                  // injected clock; nil = time.Now
	// HTTPClient is used for every upstream; nil = a default client.
	HTTPClient *http.Client
	// PageLimit is the rows asked per upstream page; 0 = DefaultPageLimit.
	PageLimit int
	// Hooks tell the process of its cycles.
	Hooks
	// Lease, when set, lets this process poll only while it holds the
	// lease (several ingest processes, one active; see Lease).
	Lease Lease
	// State, when set, is read back at the start of the process's first
	// cycle and of the first cycle of each lease term, which then publish
	// only what differs from the bus (resume.go). Without it those cycles
	// publish everything.
	State StateReader
	// Marks, when set, keeps the polls' resume points (token watermark,
	// sales cursor) on the bus for the next process or lease holder
	// (resume.go).
	Marks MarkStore

	// pollers, when set, replaces the registered pollers (upstreams) of
	// the sources it names; the others keep theirs. Only tests set it
	// (export_test.go), to run a poller of their own through the cycle.
	pollers map[readmodel.Source]func(c *source.Client) []Poller
}

// Hooks are what a process running ingest learns of its cycles, each
// optional.
type Hooks struct {
	// OnCycle, when set, is called with the summary of every cycle that
	// completed (scheduled or RunCycle), e.g. for metrics. It must not
	// modify the summary.
	OnCycle func(Summary)
	// Yield, when set, is called before each unit (a collection's rows)
	// is built and published, so that the process's reads can go first
	// (cmd/marketd passes a pace.Gate's). It may sleep briefly.
	Yield func()
	// Busy, when set, is called as a cycle starts, and the call it
	// returns as the cycle ends (cmd/marketd passes the node's memory
	// budget: a cycle's heap gets the larger share).
	Busy func() (done func())
}

// Ingest runs ingest cycles. RunCycle, Open, Close and Stats are safe for
// concurrent use; cycles never interleave.
type Ingest struct {
	cfg     Config
	pub     Publisher
	log     zerolog.Logger
	now     func() time.Time
	pollers []Poller // every registered poll (upstreams), in readmodel.Sources order

	cycleMu sync.Mutex        // held for a whole cycle; guards the fields below
	hashes  map[hkey][16]byte // pointer-free maps: the garbage collector skips them
	status  map[hkey]statusState
	// polled is when each poll (by Spec.Name) last succeeded, as its
	// readmodel.Polled says (unix ns): the last good time of a collection
	// with no status recorded (see setStatus).
	polled map[string]int64
	colls  []string // last good collection list; nil = never loaded
	// marks are the polls' resume points (token watermark, sales
	// cursor), by Spec.Name.
	marks map[string]string
	// parts is how many buckets a bucketed subject (tokens) was last
	// published in, by its bucket-0 subject.
	parts map[hkey]int
	// listMemos lets a listings poll skip decoding a collection's rows
	// the upstream sent byte for byte as before (see listingsMemo).
	listMemos map[hkey]listingsMemo
	lastNS    int64 // the last cycle's ID prefix
	// full makes the next cycle that polls every source republish
	// everything (full.go); set at New without a StateReader, by
	// RunFullCycle, and by resume when the bus has nothing to learn from.
	full bool
	// resumeDue makes the next cycle that is not full read back the
	// state stream first (resume.go); set at New and on a new lease term
	// when Config.State is set.
	resumeDue bool
	term      uint64 // the lease term of the last cycle (see leaseGate)

	stats statsCounter

	runMu  sync.Mutex
	cron   *cron.Cron
	runCtx context.Context
	cancel context.CancelFunc
}

// statusState is a subject's last recorded poll status. Times are unix
// nanoseconds (0 = zero time) and the class an index into errorClasses, so
// the status map holds no pointers.
type statusState struct {
	ok           bool
	class        uint8
	lastGoodAt   int64
	failingSince int64
}

// statusKey is the key of (src, coll)'s status in the status maps; coll
// is "" for a source-wide poll.
func statusKey(src readmodel.Source, coll string) hkey { return keyOf(string(src) + "|" + coll) }

// pollStatus is st as a message carries it.
func (st statusState) pollStatus() *readmodel.PollStatus {
	return &readmodel.PollStatus{OK: st.ok, ErrorClass: errorClasses[st.class],
		LastGoodAt: fromUnixNano(st.lastGoodAt), FailingSince: fromUnixNano(st.failingSince)}
}

// statusOf is the statusState a message's ps records.
func statusOf(ps *readmodel.PollStatus) statusState {
	return statusState{ok: ps.OK, class: classIndex(ps.ErrorClass),
		lastGoodAt: unixNano(ps.LastGoodAt), failingSince: unixNano(ps.FailingSince)}
}

var errorClasses = []string{"", source.ClassTimeout, source.ClassHTTP5xx, source.ClassHTTPStatus, source.ClassBadPayload, source.ClassTransport}

func classIndex(class string) uint8 {
	for i, c := range errorClasses {
		if c == class {
			return uint8(i)
		}
	}
	return uint8(len(errorClasses) - 1) // transport
}

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromUnixNano(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// hkey is the 128-bit FNV-1a hash of a subject or collection id.
type hkey [16]byte

func keyOf(s string) hkey {
	h := fnv.New128a()
	_, _ = h.Write([]byte(s))
	var k hkey
	h.Sum(k[:0])
	return k
}

// New validates cfg and returns an Ingest that has not started. It returns
// a *readmodel.Error (code internal) when a source is missing or its base
// URL is not an absolute http(s) URL.
func New(cfg Config, pub Publisher, log zerolog.Logger) (*Ingest, error) {
	if pub == nil {
		return nil, readmodel.Errorf(readmodel.Internal, "ingest: nil publisher")
	}
	in := &Ingest{cfg: cfg, pub: pub, log: log.With().Str("component", "ingest").Logger(), now: cfg.Now,
		hashes: map[hkey][16]byte{}, status: map[hkey]statusState{}, polled: map[string]int64{}, marks: map[string]string{},
		parts: map[hkey]int{}, listMemos: map[hkey]listingsMemo{},
		full: cfg.State == nil, resumeDue: cfg.State != nil}
	if in.now == nil {
		in.now = time.Now
	}
	if in.cfg.PageLimit <= 0 {
		in.cfg.PageLimit = DefaultPageLimit
	}
	if cfg.Lease != nil {
		in.pub = &fenced{Publisher: pub, lease: cfg.Lease}
	}
	srcs := map[readmodel.Source]SourceConfig{}
	for _, s := range readmodel.Sources {
		sc, ok := cfg.Sources[s]
		if !ok {
			return nil, readmodel.Errorf(readmodel.Internal, "ingest: source %s is not configured", s)
		}
		u, err := url.Parse(sc.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, readmodel.Errorf(readmodel.Internal, "ingest: source %s: base URL %q is not an absolute http(s) URL", s, sc.BaseURL)
		}
		if sc.Interval <= 0 {
			sc.Interval = DefaultInterval
		}
		if sc.Timeout <= 0 {
			sc.Timeout = DefaultTimeout
		}
		srcs[s] = sc
		mk, ok := upstreams[s]
		if m, set := cfg.pollers[s]; set {
			mk, ok = m, true
		}
		if !ok {
			return nil, readmodel.Errorf(readmodel.Internal, "ingest: source %s has no registered poller", s)
		}
		in.pollers = append(in.pollers, mk(source.NewClient(s, sc.BaseURL, sc.Timeout, cfg.HTTPClient))...)
	}
	for s := range cfg.Sources {
		if _, ok := readmodel.ParseSource(string(s)); !ok {
			return nil, readmodel.Errorf(readmodel.Internal, "ingest: unknown source %q", s)
		}
	}
	in.cfg.Sources = srcs
	return in, nil
}

// Open starts the cron schedule: sources that share an interval are polled
// together, each group on its own "@every" period. It does not run a cycle
// itself. Calling Open twice is a no-op.
func (in *Ingest) Open(ctx context.Context) error {
	in.runMu.Lock()
	defer in.runMu.Unlock()
	if in.cron != nil {
		return nil
	}
	in.runCtx, in.cancel = context.WithCancel(context.WithoutCancel(ctx))
	c := cron.New(cron.WithChain(cron.SkipIfStillRunning(cron.DiscardLogger)))
	groups := map[time.Duration][]readmodel.Source{}
	for _, s := range readmodel.Sources {
		iv := in.cfg.Sources[s].Interval
		groups[iv] = append(groups[iv], s)
	}
	ivs := make([]time.Duration, 0, len(groups))
	for iv := range groups {
		ivs = append(ivs, iv)
	}
	sort.Slice(ivs, func(i, j int) bool { return ivs[i] < ivs[j] })
	for _, iv := range ivs {
		srcs := groups[iv]
		if _, err := c.AddFunc(fmt.Sprintf("@every %s", iv), func() { in.scheduled(srcs) }); err != nil {
			in.cancel()
			return readmodel.Wrap(readmodel.Internal, err, "ingest: schedule")
		}
	}
	c.Start()
	in.cron = c
	return nil
}

// scheduled is the top of the cron loop: it polls srcs and logs the outcome.
func (in *Ingest) scheduled(srcs []readmodel.Source) {
	set := map[readmodel.Source]bool{}
	for _, s := range srcs {
		set[s] = true
	}
	if in.leaseGate() != nil {
		return // a standby: the lease holder polls
	}
	sum, err := in.run(in.runCtx, set)
	in.done(in.runCtx, "schedule", sum, err)
}

// done logs a cycle's outcome the same way whoever started it (the
// schedule, or RunCycle: start-up and POST /admin/ingest) and hands a
// completed cycle to Config.OnCycle.
func (in *Ingest) done(ctx context.Context, trigger string, sum Summary, err error) {
	if err != nil {
		if ctx.Err() == nil {
			in.log.Error().Err(err).Str("trigger", trigger).Msg("ingest cycle failed")
		}
		return
	}
	if in.cfg.OnCycle != nil {
		in.cfg.OnCycle(sum)
	}
	ev := in.log.Info()
	var failed []string
	for name, s := range sum.Sources {
		if s.PollsFailed > 0 {
			ev = in.log.Warn()
			failed = append(failed, name)
			in.log.Warn().Str("trigger", trigger).Str("source", name).Str("errorClass", s.ErrorClass).Int("pollsFailed", s.PollsFailed).Msg("upstream poll failed")
		}
	}
	sort.Strings(failed)
	if r := sum.Resumed; r != nil {
		if r.Error != "" {
			ev = in.log.Warn()
			in.log.Warn().Str("trigger", trigger).Str("error", r.Error).Msg("could not read back the state stream: this cycle published everything")
		}
		if r.MarksError != "" {
			in.log.Warn().Str("trigger", trigger).Str("error", r.MarksError).Msg("could not load the polls' resume points: polled from the start")
		}
		ev = ev.Int("resumedRead", r.Read).Int("resumedSubjects", r.Subjects).Int("resumedSkipped", r.Skipped).Int("resumedMarks", r.Marks).Int64("resumedTookMs", r.TookMS)
	}
	if sum.MarksError != "" {
		in.log.Warn().Str("trigger", trigger).Str("error", sum.MarksError).Msg("could not save the polls' resume points")
	}
	ev.Str("trigger", trigger).Int("published", sum.Published).Int("unchanged", sum.Unchanged).Strs("sourcesFailed", failed).
		Int64("took_ms", sum.End.Sub(sum.Start).Milliseconds()).Uint64("stateSeq", sum.Position.State).Msg("ingest cycle")
}

// Close stops the schedule, cancels a scheduled cycle in flight and waits
// for any running cycle (scheduled or RunCycle) to end, or for ctx. A
// cancelled cycle publishes no failure statuses and records nothing.
func (in *Ingest) Close(ctx context.Context) error {
	in.runMu.Lock()
	c, cancel := in.cron, in.cancel
	in.cron, in.cancel = nil, nil
	in.runMu.Unlock()
	if c != nil {
		cancel()
		select {
		case <-c.Stop().Done():
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	done := make(chan struct{})
	go func() { in.cycleMu.Lock(); in.cycleMu.Unlock(); close(done) }() // waits for a RunCycle in flight
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// RunCycle polls every source now and returns after the Publisher's Flush.
// Upstream failures are not errors: they are in the Summary and published
// as statuses. The error is non-nil only when publishing or flushing
// failed or ctx ended; then nothing of the cycle is recorded as published
// and the next cycle publishes it again.
func (in *Ingest) RunCycle(ctx context.Context) (Summary, error) {
	if err := in.leaseGate(); err != nil {
		return Summary{}, err
	}
	sum, err := in.run(ctx, allSources())
	in.done(ctx, "request", sum, err)
	return sum, err
}

func allSources() map[readmodel.Source]bool {
	all := map[readmodel.Source]bool{}
	for _, s := range readmodel.Sources {
		all[s] = true
	}
	return all
}

// Sources returns each source's status as of the last cycle that polled it
// (sorted by name; TokensPoll reports the token poll apart from the mirror's
// listings). Safe for concurrent use.
func (in *Ingest) Sources() []SourceStatus { return in.stats.sourceStatuses() }

// Stats returns a copy of the cumulative counters.
func (in *Ingest) Stats() Stats { return in.stats.snapshot() }

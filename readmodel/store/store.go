// Package store holds a node's prepared views in Badger and serves them.
//
// Durability: Badger runs with SyncWrites off. Every view can be rebuilt
// from the streams, and each message's view writes and applied position
// commit in one transaction, so an OS crash can only roll the node back to
// an earlier consistent position, which the projector then re-consumes; a
// process crash loses nothing (committed writes are in the OS page cache).
//
// Reads go through a bounded in-process cache of decoded views, invalidated
// by the commits of the projector in the same process. Returned slices are
// shared and immutable: callers must not modify them.
package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
	gojson "github.com/goccy/go-json"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/render"
)

// Options configures a Store.
type Options struct {
	// ListingsRetention is how long a superseded listing snapshot stays
	// readable by version, so a paged walk can be a consistent read.
	// 0 means 5 minutes.
	ListingsRetention time.Duration
	// NoSuperseded skips keeping superseded listing snapshots (a replay
	// build serves nobody while it runs). Without it the store keeps those
	// it served (served.go).
	NoSuperseded bool
	// CacheEntries bounds each in-process cache map; 0 means 50 000.
	CacheEntries int
	// CacheBytes bounds the approximate size of cached views and pages;
	// 0 means 256 MiB.
	CacheBytes int64
	// SyncWrites makes Badger fsync every commit (off by default; see the
	// package comment).
	SyncWrites bool
	// MemTableSize is Badger's memtable size in bytes (it also bounds one
	// transaction to about 15 % of it: 2.4 MiB, some 29,000 entries, where
	// one message writes at most a few thousand); 0 means 16 MiB (values
	// over 64 bytes live in the value log, so memtables hold keys and
	// pointers). A store keeps two memtables: the one being written and
	// the one being flushed.
	MemTableSize int64
	// GCInterval is how often value-log space of rewritten views is
	// reclaimed; 0 means 15 s, negative disables it.
	GCInterval time.Duration
	// GCShare bounds the background GC to about this fraction of one
	// core: after rewriting a file it pauses for the rewrite's duration
	// times (1 - GCShare) / GCShare. A rewrite looks up every entry of
	// the file in the LSM tree; unpaced, at 100,000 collections it took
	// most of a core that was serving reads. 0 means 0.25; 1 or more
	// does not pause.
	GCShare float64
	// ValueLogFileSize is the size of one value-log file, the unit GC
	// rewrites; 0 means 64 MiB.
	ValueLogFileSize int64
	// LevelZeroTables is how many flushed memtables (level-0 tables)
	// wait before compaction merges them down; 0 means 1. Badger learns
	// which value-log bytes are garbage only when compaction drops the
	// superseded versions, so this times MemTableSize bounds how much
	// rewritten data the value log holds before GC can find it.
	LevelZeroTables int
	// Now is the clock token views are rendered by; nil means time.Now.
	Now func() time.Time
	// OnDamage, when set, is called with the damage (see Damaged) the
	// store's own background work meets: the value-log GC reading a
	// damaged file, or panicking on one. Reads and Update return theirs.
	OnDamage func(err error)
	// FeedEvents is how many change-feed events of each collection are
	// kept (the oldest are dropped); 0 means DefaultFeedEvents.
	FeedEvents int
	// MarketEvents is how many events of the market's change feed
	// (market.go) are kept; 0 means DefaultMarketEvents.
	MarketEvents int
}

// Store is a node's view store. Its methods are safe for concurrent use;
// writes (Update) are meant for one projector.
type Store struct {
	db    *badger.DB // nil in a memory store (memory.go)
	kv    engine     // what transactions (Tx) run on: db, or memory
	dir   string
	opts  Options
	cache *cache
	quote atomic.Pointer[render.USDQuote] // nil until first loaded or committed

	salesMu    sync.Mutex          // guards withSales and registered
	withSales  map[string]struct{} // collections known to have sales committed (hasSales)
	registered map[string]struct{} // collections known to be registered (Register)

	gcStop, gcDone chan struct{}
	stopGC         sync.Once
	gcRuns         atomic.Int64 // value-log files rewritten by gcLoop
	readAheads     atomic.Int32 // open ReadAhead spans
	compactions    atomic.Int64 // Compact runs (compact.go)
	lastBusy       atomic.Int64 // unix ns of the last large commit (compact.go)
	compactBase    int64        // value-log bytes after the last compaction (0: not yet idle); gcLoop only
	maintMu        sync.Mutex   // serialises Compact and Reset
	salesBytes     atomic.Int64 // bytes of sales (keys and values) committed since Open

	served *servedListings // listing snapshots served, for PutListings (served.go)
	stamps viewStamps      // stamps of the views committed or read since Open (viewstamp.go)
	gather *feedGather     // a memory store's open feed blocks (evgather.go); nil on Badger

	flightMu sync.Mutex
	flights  map[string]*pageFlight // page reads in progress, by cache key and generation
	// beforePageRead, when set (tests), runs in a flight's leader before
	// it reads its page from Badger.
	beforePageRead func(f *pageFlight)
}

// pageFlight is one read of a page from Badger that the readers missing
// the same page at the same cache generation wait for and share.
type pageFlight struct {
	done    chan struct{}
	waiters int // guarded by Store.flightMu
	page    render.Page
	err     error
}

// withDefaults returns o with its unset fields at their defaults.
func (o Options) withDefaults() Options {
	if o.ListingsRetention <= 0 {
		o.ListingsRetention = 5 * time.Minute
	}
	if o.CacheEntries <= 0 {
		o.CacheEntries = 50000
	}
	if o.CacheBytes <= 0 {
		o.CacheBytes = 256 << 20
	}
	if o.MemTableSize <= 0 {
		o.MemTableSize = 16 << 20
	}
	if o.ValueLogFileSize <= 0 {
		o.ValueLogFileSize = 64 << 20
	}
	if o.LevelZeroTables <= 0 {
		o.LevelZeroTables = 1
	}
	if o.GCShare <= 0 {
		o.GCShare = 0.25
	}
	if o.GCInterval == 0 {
		o.GCInterval = 15 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Open opens (creating it if needed) the store in dir. If a replay left a
// completed build beside dir (dir+".new") and crashed before swapping it
// in, Open finishes the swap first. Errors are Internal *readmodel.Error.
func Open(ctx context.Context, dir string, opts Options) (*Store, error) {
	if err := ctx.Err(); err != nil {
		return nil, readmodel.Wrap(readmodel.Internal, err, "open store")
	}
	opts = opts.withDefaults()
	if err := RecoverSwap(dir); err != nil {
		return nil, err
	}
	if err := removeEmptyFiles(dir); err != nil {
		return nil, err
	}
	if err := checkTables(dir); err != nil {
		return nil, err
	}
	bo := badger.DefaultOptions(dir).
		WithSyncWrites(opts.SyncWrites).
		WithLogger(nil).
		// Garbage in the value log is found only through compaction:
		// Badger counts a value-log entry as discardable when compaction
		// drops the key's superseded version, and GC rewrites only files
		// it counted half garbage. With 64 MiB memtables merged down five
		// at a time, compaction first ran after about 12 minutes of a
		// 5,000-collection soak, so the value log (mapped, so resident)
		// grew 150-210 MB/min meanwhile. 16 MiB memtables each merged
		// down at once keep that lag to one small flush: the same soak
		// levels off after 5 minutes (docs/operating.md). The price is
		// more compaction: at 100,000 collections x 100 tokens a node
		// applied 16 % more of its first cycle in 5 minutes with 64 MiB
		// memtables than with 16 MiB (compaction 12 % of its CPU instead
		// of 18 %), measured before level-0 tables were merged one by
		// one. Two memtables instead of Badger's five; replays measured
		// the same with two or five.
		WithMemTableSize(opts.MemTableSize).
		WithNumMemtables(2).
		WithNumLevelZeroTables(opts.LevelZeroTables).
		WithValueLogFileSize(opts.ValueLogFileSize).
		// The views and inputs, rewritten every cycle, live in the value
		// log; the LSM tree holds their keys and value pointers, so
		// compaction moves little data: at 10,000 collections × 100
		// tokens a replay took 85 s and 123 CPU-s instead of 264 s and
		// 480 CPU-s with a 1 KiB threshold, where compaction and its
		// msyncs were half the CPU. The garbage rewrites leave in the log
		// is collected by gcLoop. Values under valueThreshold stay in the
		// tree: most sales (kept to their start, never rewritten), their
		// browse entries' and aliases' kin. Sales mixed into value-log
		// files with views kept every file partly live, so the log grew
		// by up to 1/(1-gcRatio) of what the sales history added; in
		// the tree a sale costs its bytes once.
		WithValueThreshold(valueThreshold).
		// Fewer, larger levels and tables. With Badger's 10 MiB base level
		// the 2.2 GiB tree of 100,000 collections x 100 tokens had four
		// levels below L0, so every flush cascaded through three merges
		// before the last level, and each 2 MiB table cost a 3 MiB index
		// builder. With this base level and 8 MiB tables a one-step
		// cycle there took 268 CPU-s instead of 335 (180 s wall instead
		// of 220), compaction 13% of its CPU instead of 19%. With the
		// 4 MiB tables below the bench's one-step cycle at that size
		// took 348 CPU-s against 314 with 8 MiB ones (runs on different
		// days of a shared machine: no difference beyond their spread).
		WithBaseLevelSize(256 << 20).
		// Tables of 4 MiB at every level. Each table a compaction
		// writes holds a builder of twice its size from the start, up
		// to 8 + 5 of them at once per compaction, and Badger keeps up
		// to eight finished builders for reuse as long as compactions
		// keep asking for them: with 8 MiB tables doubling per level
		// below the base, a 5,000-collection soak's pool grew from
		// nothing to 8 x 16 MiB within 30 minutes, and the large
		// node's builders took 112-160 MB of its live heap.
		WithBaseTableSize(4 << 20).
		WithNumCompactors(2).
		WithBlockCacheSize(32 << 20).
		WithIndexCacheSize(16 << 20).
		// Uncompressed: views are rebuildable and mostly unique JSON; block
		// compression cost CPU and held decompression buffers (turning it
		// off, together with five 16 MiB memtables instead of Badger's five
		// of 64 MiB, more than halved the Go heap at 2,000 collections ×
		// 100 tokens; the memtables are now two of 64 MiB, above).
		WithCompression(options.None).
		WithDetectConflicts(false). // one writer: the projector
		// Damaged files are found on read, not served: a value whose
		// checksum does not match fails its read instead of handing
		// garbage to a decoder or a client, and so does a table block
		// (read from disk: a cached block was verified when read). See
		// heal.go.
		WithVerifyValueChecksum(true).
		WithChecksumVerificationMode(options.OnBlockRead)
	// Badger doubles the tables' size per level below the base level
	// unless TableSizeMultiplier is 1 (it has no With option). The same
	// holds for StreamWriter, which writes every table at the last
	// level: at 8 MiB x 2^5 each of its builders allocated 256 MiB.
	bo.TableSizeMultiplier = 1
	db, err := openBadger(bo)
	if err != nil {
		return nil, err
	}
	s := &Store{db: db, kv: badgerEngine{db}, dir: dir, opts: opts, cache: newCache(opts.CacheEntries, opts.CacheBytes), gcStop: make(chan struct{}), gcDone: make(chan struct{}), flights: make(map[string]*pageFlight)}
	if err := s.checkSchema(); err != nil {
		_ = db.Close()
		return nil, err
	}
	last, _, err := s.get(kVersion)
	if err != nil {
		_ = db.Close()
		return nil, err
	}
	var before uint64
	if len(last) == 8 {
		before = binary.BigEndian.Uint64(last)
	}
	s.served = newServedListings(before)
	// The value log is read a value at a time, wherever a key points, but
	// the kernel answers a fault on a mapped file by reading around it, as
	// much as the device's read-ahead: 8 MiB on this kind of machine. With
	// a store larger than its page cache (10 M tokens in a 3 GiB group)
	// random value reads read 64 GB from disk in a minute for 128 MB of
	// values, and evicted what the next reads needed: 207 reads a second
	// against 5,263 with random-read advice (docs/performance-log.md,
	// the entry of 2026-11-27 08:11).
	s.adviseSettled()
	go s.gcLoop()
	return s, nil
}

// valueThreshold is the size from which a value goes to the value log
// rather than the LSM tree (see Open's options).
const valueThreshold = 256

// gcLoop reclaims value-log space every GCInterval: views are rewritten
// every cycle, so without it the value log grows without bound. Each
// round rewrites files while one is at least gcRatio garbage, paced to
// GCShare of a core. A round that finds nothing costs a look at Badger's
// discard counts, so it runs often: a file crosses the ratio at a
// compaction, and its space is returned at the next round.
func (s *Store) gcLoop() {
	defer close(s.gcDone)
	if s.opts.GCInterval < 0 {
		return
	}
	t := time.NewTicker(s.opts.GCInterval)
	defer t.Stop()
	for {
		select {
		case <-s.gcStop:
			return
		case <-t.C:
			s.collectGuarded()
			s.maybeCompact()
		}
	}
}

// gcRatio is the share of garbage at which the periodic GC rewrites a
// value-log file. Values the store never rewrites (sales, which SPEC keeps
// to their start) share files with views rewritten every cycle, so no file
// stays all garbage: a log whose files are each just under the ratio r
// holds 1/(1-r) of its live bytes, and grows by up to that times what the
// sales history adds. In 30-minute soaks (docs/performance-log.md) the
// mapped log's lowest point rose 2.1 to 2.5 times as fast as the sales
// history in three runs with 0.5, 1.6 to 1.9 times in three with 0.3, for
// a third more rewriting (0.34-0.35 files of 64 MiB per cycle against
// 0.23-0.27).
const gcRatio = 0.3

// CollectGarbage rewrites value-log files while one is at least gcRatio
// garbage (at most 16 per call, and none once stop is closed; nil stop
// never stops early), without pausing between them. It returns how many
// it rewrote. Safe for concurrent use with reads and Update.
func (s *Store) CollectGarbage(stop <-chan struct{}) int {
	return s.collect(stop, 1)
}

// collect is CollectGarbage pausing after each rewrite so that rewriting
// takes about share of the time (see Options.GCShare).
func (s *Store) collect(stop <-chan struct{}, share float64) int {
	return s.rewrite(stop, share, gcRatio, 16)
}

// rewrite rewrites value-log files at least ratio garbage, at most max of
// them (negative: no bound), until none is left or stop is closed, pausing
// after each so that rewriting takes about share of the time. It returns
// how many it rewrote.
func (s *Store) rewrite(stop <-chan struct{}, share, ratio float64, max int) int {
	n := 0
	for ; max < 0 || n < max; n++ {
		select {
		case <-stop:
			return n
		default:
		}
		start := time.Now()
		// A rewrite reads its file from start to end through the
		// mapping: with the value log's random-read advice each page
		// would be a fault of its own. The advice after it also reaches
		// the files Badger opened since the last round (see Open).
		s.adviseValueLog(adviseNormal)
		err := s.db.RunValueLogGC(ratio)
		s.adviseSettled()
		if err != nil { // ErrNoRewrite: nothing (more) to reclaim
			s.noteDamage(err)
			break
		}
		s.gcRuns.Add(1)
		if pause := gcPause(time.Since(start), share); pause > 0 {
			t := time.NewTimer(pause)
			select {
			case <-stop:
				t.Stop()
				return n + 1
			case <-t.C:
			}
		}
	}
	return n
}

// gcPause is how long to pause after a rewrite of duration took so that
// rewriting takes share of the time.
func gcPause(took time.Duration, share float64) time.Duration {
	if share >= 1 || share <= 0 {
		return 0
	}
	return time.Duration(float64(took) * (1 - share) / share)
}

// Schema is the layout of the stored views and inputs. A store written
// with another schema (or before schemas were recorded) is emptied at
// Open: the projector then rebuilds it from the start of the streams.
// Bump it whenever stored bytes change meaning; a field added to or
// moved in a row's field list changes the recorded schema by itself.
//
//	2: bodies carry USD slots (render.TemplateUSD) instead of usd values
//	3: a token view's deadline is stored with it (no i/dt/ keys)
//	4: a token's document hash record names the bucket that holds it
//	5: a token's document record carries its hash and bucket (no i/th/ keys)
//	6: a token's document record is binary, hashed with xxhash64
//	7: a token view's body is an S2 block (tokenDict), its deadline before it
//	8: inputs written by Put may be packed (packInput)
//	9: a token bucket's input holds its tokens' hashes, bucket count and
//	   generation (i/tg/)
//	10: no token views: a token's record carries its version and native
//	   order-book rows, and the store renders the view on read
//	11: collection, floor and listings views carry their asOf sources;
//	   listings views the listed count and the cut rows' expiries
//	12: token records in S2-compressed blocks per (address, bucket), i/tk/;
//	   listing snapshots' bodies and sale items (against saleDictText) in S2
//	13: listing rows inputs (i/r/) are binary records (rowsrec.go)
//	14: change-feed events in zstd blocks of 64 per collection (evblock.go)
//	15: no token bucket inputs (i/tb/, i/tg/): a bucket's tokens are read
//	   from the token blocks of its collection's addresses (i/ta/)
//	16: a sale is a binary record rendered on read, without a header
//	   (salerec.go); its dedupe entry (i/sk/) has an empty value
//	17: change-feed events are records rendered on read (evrec.go); a sale
//	   event names its sale record
//	18: the change feed's state is a record, its sold orderIds hashed
//	19: sale keys name their collection by a hash of its id
//	20: a collection's summary is stored once (v/bi/), its browse entries
//	   hold its content hash
//	21: listing snapshots hold their rows (rows records), rendered on read
//	22: token records hold no native order-book rows: a token's view
//	   reads them from its collection's order book (natives.go)
//	23: a collection's inputs are one record (i/cs/, state.go), its feed's
//	   listing set referring to its sources' rows; e/s/ holds the head alone
const Schema = "23"

// schema is what the store records: Schema and a fingerprint of the
// record's field lists (readmodel.TokenDoc's, ListingRow's and SaleRow's
// Fields), so a field added to a row rebuilds older stores without a
// manual bump.
var schema = Schema + "+" + recordFieldsFingerprint()

func (s *Store) checkSchema() error {
	cur, ok, err := s.get(kSchema)
	if err != nil {
		return err
	}
	if ok && string(cur) == schema {
		return nil
	}
	empty := true
	err = s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{})
		defer it.Close()
		it.Rewind()
		empty = !it.Valid()
		return nil
	})
	if err != nil {
		return internal(err, "check schema")
	}
	if !empty && !ok {
		// Views but no schema: a store from before schemas were
		// recorded, or a damaged table that lost the key (Badger reads
		// a garbled block as missing keys). Dropping would rebuild either
		// way, but damage must be said and counted (Verify's error is a
		// DamageError, which the node heals).
		if err := s.Verify(); err != nil {
			return err
		}
	}
	if !empty {
		if err := s.db.DropAll(); err != nil {
			return internal(err, "drop views of an older schema")
		}
	}
	return internal(s.recordSchema(), "record schema")
}

func (s *Store) recordSchema() error {
	return s.db.Update(func(txn *badger.Txn) error { return txn.Set(kSchema, []byte(schema)) })
}

// RecoverSwap completes or cleans up an interrupted replay swap around dir:
// the swap renames dir to dir+".old", then a completed dir+".new" to dir,
// then removes dir+".old".
func RecoverSwap(dir string) error {
	newDir, oldDir := dir+".new", dir+".old"
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		if _, err := os.Stat(filepath.Join(newDir, CompleteMarker)); err == nil {
			if err := os.Rename(newDir, dir); err != nil {
				return readmodel.Wrap(readmodel.Internal, err, "finish replay swap")
			}
		} else if _, err := os.Stat(oldDir); err == nil {
			if err := os.Rename(oldDir, dir); err != nil {
				return readmodel.Wrap(readmodel.Internal, err, "undo replay swap")
			}
		}
	}
	if _, err := os.Stat(dir); err == nil {
		_ = os.RemoveAll(oldDir)
	}
	return nil
}

// SwapIn moves the complete store build into place as live,
// crash-safely: a marker says the build is complete, so RecoverSwap (run
// by Open) finishes a swap a crash interrupted. The stores must be
// closed. Used by a replay and by a restore from a snapshot.
func SwapIn(live, build string) error {
	marker := filepath.Join(build, CompleteMarker)
	if err := os.WriteFile(marker, []byte("ok\n"), 0o644); err != nil {
		return readmodel.Wrap(readmodel.Internal, err, "mark the new views complete")
	}
	old := live + ".old"
	_ = os.RemoveAll(old)
	if _, err := os.Stat(live); err == nil {
		if err := os.Rename(live, old); err != nil {
			return readmodel.Wrap(readmodel.Internal, err, "swap out old views")
		}
	}
	if err := os.Rename(build, live); err != nil {
		return readmodel.Wrap(readmodel.Internal, err, "swap in new views")
	}
	_ = os.Remove(filepath.Join(live, CompleteMarker))
	_ = os.RemoveAll(old)
	return nil
}

// removeEmptyFiles deletes zero-length memtable and value-log files in
// dir. Badger creates such a file and then sizes it; a process killed
// between the two leaves an empty file that Badger then refuses to open
// ("while opening fid: 1 err: Create a new file", "Open existing file:
// ... Create a new file"), so the node could never start again. Badger
// creates a value-log file at every Open, so a kill while a node starts
// can leave one. An empty file holds no writes and nothing points into
// it: removing it loses nothing.
func removeEmptyFiles(dir string) error {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return readmodel.Wrap(readmodel.Internal, err, "read store dir")
	}
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".mem") && !strings.HasSuffix(e.Name(), ".vlog") {
			continue
		}
		if fi, err := e.Info(); err == nil && fi.Size() == 0 {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				return readmodel.Wrap(readmodel.Internal, err, "remove empty "+e.Name())
			}
		}
	}
	return nil
}

// CompleteMarker is the file a replay writes into its finished build
// before swapping it in.
const CompleteMarker = "REPLAY_COMPLETE"

func (s *Store) now() time.Time { return s.opts.Now() }

// Dir is the directory the store lives in.
func (s *Store) Dir() string { return s.dir }

// Close closes Badger. The store must not be used afterwards.
func (s *Store) Close(ctx context.Context) error {
	s.stopGC.Do(func() { close(s.gcStop) })
	select {
	case <-s.gcDone:
	case <-ctx.Done():
		return readmodel.Wrap(readmodel.Internal, ctx.Err(), "close badger: value-log GC still running")
	}
	if s.db == nil {
		return nil
	}
	if err := s.db.Close(); err != nil {
		return readmodel.Wrap(readmodel.Internal, err, "close badger")
	}
	return nil
}

// Reset drops every key (views, inputs, positions): the projector then
// rebuilds from the start of the streams.
func (s *Store) Reset(ctx context.Context) error {
	s.maintMu.Lock()
	defer s.maintMu.Unlock()
	if err := s.db.DropAll(); err != nil {
		return readmodel.Wrap(readmodel.Internal, err, "reset store")
	}
	if err := s.recordSchema(); err != nil {
		return readmodel.Wrap(readmodel.Internal, err, "reset store")
	}
	s.cache.reset()
	s.stamps.reset()
	s.quote.Store(nil)
	s.salesMu.Lock()
	s.withSales, s.registered = nil, nil
	s.salesMu.Unlock()
	return nil
}

func internal(err error, what string) error {
	if err == nil {
		return nil
	}
	var re *readmodel.Error
	if errors.As(err, &re) {
		return err
	}
	if errors.Is(err, badger.ErrTxnTooBig) {
		return readmodel.Wrap(readmodel.Internal, ErrTooBig, what)
	}
	return readmodel.Wrap(readmodel.Internal, err, what)
}

// ErrTooBig is the cause of an Update that wrote more than one Badger
// transaction can hold.
var ErrTooBig = errors.New("transaction too big")

func (s *Store) get(k []byte) ([]byte, bool, error) {
	var v []byte
	err := s.db.View(func(txn *badger.Txn) error {
		it, err := txn.Get(k)
		if err != nil {
			return err
		}
		v, err = it.ValueCopy(nil)
		return err
	})
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, internal(err, "read view")
	}
	return v, true, nil
}

func notFound(what string) error { return readmodel.Errorf(readmodel.NotFound, "%s not found", what) }

// viewKeyBuf is the stack buffer a view's key is built in for a cache
// lookup (longer keys spill to the heap).
const viewKeyBuf = 192

// browsePlace is the length of a browse entry's place in its order, after
// browsePrefix and before the collection id: native and present bytes,
// then the sort value (8 bytes).
const browsePlace = 10

func decodePos(after string) ([]byte, error) {
	if after == "" {
		return nil, nil
	}
	b, err := hex.DecodeString(after)
	if err != nil || len(b) == 0 {
		return nil, errors.New("bad position")
	}
	return b, nil
}

// page reads up to limit values after pos under prefix, from the cache
// or, on a miss, from Badger. Concurrent misses of the same page at the
// same cache generation share one read (a single flight): a commit that
// touches a family (every browse order, or a collection's sales)
// invalidates all of its cached pages at once, and under load every
// connection asking for a popular page then missed it together, each
// iterating Badger for the same bytes. Sharing keeps the freshness of
// the cache: a reader joins only a read that started at its generation,
// so it never gets a page older than one it could have read from the
// cache. Safe for concurrent use.
func (s *Store) page(prefix, pos []byte, limit int, cacheKey, salesOf string) (render.Page, error) {
	if limit <= 0 {
		limit = 1
	}
	ck := cacheKey + "|" + strconv.Itoa(limit)
	cached, gen, ok := s.cache.getPage(ck, salesOf)
	if ok {
		return cached, nil
	}
	fk := ck + "|" + strconv.FormatUint(gen, 16)
	s.flightMu.Lock()
	if f, ok := s.flights[fk]; ok {
		f.waiters++
		s.flightMu.Unlock()
		<-f.done
		return f.page, f.err
	}
	f := &pageFlight{done: make(chan struct{})}
	s.flights[fk] = f
	s.flightMu.Unlock()
	defer func() {
		s.flightMu.Lock()
		delete(s.flights, fk)
		s.flightMu.Unlock()
		close(f.done)
	}()
	if s.beforePageRead != nil {
		s.beforePageRead(f)
	}
	f.page, f.err = s.readPage(prefix, pos, limit, salesOf)
	if f.err == nil {
		s.cache.putPage(ck, salesOf, gen, f.page)
	}
	return f.page, f.err
}

// readPage reads up to limit values after pos under prefix from Badger:
// browse entries, or, when salesOf is a collection id, its sale records,
// each rendered here (renderSale). A record that does not decode is an
// Internal "corrupt sale record" error (Damaged).
func (s *Store) readPage(prefix, pos []byte, limit int, salesOf string) (render.Page, error) {
	var page render.Page
	q := s.USD()
	page.USD = q.Version
	sum := uint64(14695981039346656037) // FNV-1a offset basis
	err := s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix, PrefetchValues: true, PrefetchSize: min(limit+1, 100)})
		defer it.Close()
		start := append(append([]byte(nil), prefix...), pos...)
		it.Seek(start)
		if pos != nil && it.ValidForPrefix(prefix) && string(it.Item().Key()) == string(start) {
			it.Next()
		}
		var last, buf, ik []byte
		if salesOf != "" {
			// The page's items are rendered into one buffer (about 700
			// bytes each), each its own capped slice of it.
			buf = make([]byte, 0, 720*min(limit, 100))
		}
		for ; it.ValidForPrefix(prefix); it.Next() {
			if len(page.Items) == limit {
				page.HasMore = true
				page.Next = hex.EncodeToString(last)
				break
			}
			k := it.Item().Key()[len(prefix):]
			var item, head []byte
			var saleHead [8]byte
			if salesOf != "" {
				err := it.Item().Value(func(v []byte) error {
					start := len(buf)
					var err error
					if buf, err = appendSale(buf, salesOf, k, v, q); err != nil {
						return err
					}
					item, saleHead = buf[start:len(buf):len(buf)], saleVersion(v)
					head = saleHead[:]
					return nil
				})
				if err != nil {
					return err
				}
			} else {
				// A browse entry places its collection's summary, stored
				// once (SetBrowse): its key ends with the collection id,
				// after the native, present and sort-value bytes.
				if len(k) <= browsePlace {
					continue
				}
				ik = append(append(ik[:0], pBrowseItem...), k[browsePlace:]...)
				si, err := txn.Get(ik)
				if errors.Is(err, badger.ErrKeyNotFound) {
					continue
				}
				if err != nil {
					return err
				}
				v, err := si.ValueCopy(nil)
				if err != nil {
					return err
				}
				if len(v) < 8 {
					continue
				}
				item, head = filled(v[8:], q), v[:8]
			}
			page.Items = append(page.Items, item)
			last = append(last[:0], k...)
			sum = pageVersionMix(pageVersionMix(sum, head), last)
		}
		return nil
	})
	// A page's version is an order-sensitive hash of its items' keys and
	// headers (browse entries carry a content hash there, see plain; a
	// sale's is a hash of its record, saleVersion) and whether more
	// follow: it changes whenever the page's
	// composition, order or any item changes, which is what the API's ETag
	// needs.
	if page.HasMore {
		sum = pageVersionMix(sum, []byte{1})
	}
	page.Version = max(sum, 1)
	if err != nil {
		return render.Page{}, internal(err, "read page")
	}
	return page, nil
}

// pageVersionMix folds b into an FNV-1a 64 hash.
func pageVersionMix(h uint64, b []byte) uint64 {
	for _, c := range b {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return h
}

// Digest returns a hex SHA-256 over every view (keys and contents, in key
// order), excluding versions and node-local bookkeeping: two nodes that
// applied the same messages hold the same digest however they got there.
// Token views, rendered on read, are rendered as of at from their records
// (with USD slots, under their view keys v/t/…) and hashed after the
// stored views.
func (s *Store) Digest(ctx context.Context, at time.Time) (string, error) {
	h := sha256.New()
	var n [binary.MaxVarintLen64]byte
	put := func(k, v []byte) {
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(k)))])
		h.Write(k)
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(v)))])
		h.Write(v)
	}
	err := s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: pView, PrefetchValues: true, PrefetchSize: 256})
		defer it.Close()
		for it.Seek(pView); it.ValidForPrefix(pView); it.Next() {
			if err := ctx.Err(); err != nil {
				return err
			}
			k := it.Item().Key()
			sale := bytes.HasPrefix(k, pSale) // a sale record has no header
			err := it.Item().Value(func(v []byte) error {
				if len(v) >= 8 && !sale {
					v = v[8:]
				}
				put(k, v)
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		err = s.db.View(func(txn *badger.Txn) error {
			vk := append([]byte(nil), pToken...)
			stop := ctx.Err
			royalties := map[string]*int64{}
			// A collection's tokens are one address's, read in a row:
			// its order book is decoded once while they last.
			var book *natives
			bookOf := ""
			return eachTokenRecord(txn, stop, func(k, raw string) error {
				r, err := decodeTokenRecord(raw)
				if err != nil {
					return readmodel.Errorf(readmodel.Internal, "corrupt token record %q", k)
				}
				royalty, seen := royalties[r.Doc.CollectionID]
				if !seen {
					doc, err := readRoyaltyDoc(txn, r.Doc.CollectionID)
					if err != nil {
						return err
					}
					if doc != nil {
						royalty = doc.RoyaltyBps
					}
					royalties[r.Doc.CollectionID] = royalty
				}
				var native []readmodel.ListingRow
				if r.Doc.Chain.IsEVM() {
					if book == nil || bookOf != r.Doc.CollectionID {
						if book, err = readNatives(txn, r.Doc.CollectionID); err != nil {
							return err
						}
						bookOf = r.Doc.CollectionID
					}
					native = book.rows[k]
				}
				v, _ := RenderToken(r, native, royalty, at)
				e := &enc{}
				e.timed(v.Body)
				put(append(vk[:len(pToken)], k...), e.b)
				return nil
			})
		})
	}
	if err != nil {
		return "", internal(err, "digest")
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// CopyTo copies every key except superseded listing snapshots into dst (used by
// replay to start a build from the node's current views). dst must be unused.
func (s *Store) CopyTo(ctx context.Context, dst *Store) error {
	err := s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{PrefetchValues: true, PrefetchSize: 256})
		defer it.Close()
		wb := dst.db.NewWriteBatch()
		defer wb.Cancel()
		for it.Rewind(); it.Valid(); it.Next() {
			if err := ctx.Err(); err != nil {
				return err
			}
			if len(it.Item().Key()) >= 2 && string(it.Item().Key()[:2]) == "o/" {
				continue
			}
			v, err := it.Item().ValueCopy(nil)
			if err != nil {
				return err
			}
			if err := wb.Set(it.Item().KeyCopy(nil), v); err != nil {
				return err
			}
		}
		return wb.Flush()
	})
	dst.quote.Store(nil)
	return internal(err, "copy store")
}

// jsonGet reads the record at k, which putJSON or Put (packed, see
// packInput) wrote with encoding/json, unpacking it first, with
// github.com/goccy/go-json: the projector reads a collection's stored
// rows on every render, and this reads them to the same values
// (projector's TestStoredInputsDecodeAsStd) in a third of the time.
func jsonGet[T any](txn *badger.Txn, k []byte) (*T, error) {
	it, err := txn.Get(k)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var v T
	err = it.Value(func(b []byte) error {
		b, err := unpackInput(b)
		if err != nil {
			return err
		}
		return gojson.Unmarshal(b, &v)
	})
	if err != nil {
		return nil, err
	}
	return &v, nil
}

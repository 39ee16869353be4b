package ingest_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/ingest"
	"github.com/marketd/marketd/ingest/sim"
	"github.com/marketd/marketd/ingest/source"
	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/normalize"
)

var anchor = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

// fakePub records what was published; Flush acknowledges everything.
type fakePub struct {
	mu        sync.Mutex
	msgs      []*readmodel.Message
	flushed   int
	failFlush int // fail this many Flush calls
	inFlight  int // Publish calls running at once (must stay ≤ 1)
	overlap   bool
	// polled holds the KindPolled messages apart: they go out every cycle
	// a poll succeeds, changed or not (TestPolledEveryCycle).
	polled []*readmodel.Message
}

func (p *fakePub) Publish(_ context.Context, m *readmodel.Message) error {
	p.mu.Lock()
	p.inFlight++
	if p.inFlight > 1 {
		p.overlap = true
	}
	cp := *m
	if m.Kind == readmodel.KindPolled {
		p.polled = append(p.polled, &cp)
	} else {
		p.msgs = append(p.msgs, &cp)
	}
	p.inFlight--
	p.mu.Unlock()
	return nil
}

func (p *fakePub) Flush(context.Context) (readmodel.Position, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.failFlush > 0 {
		p.failFlush--
		return readmodel.Position{}, errors.New("nats: timeout")
	}
	p.flushed = len(p.msgs)
	return readmodel.Position{State: uint64(len(p.msgs)), Sales: 7}, nil
}

// take returns and forgets the messages published so far.
func (p *fakePub) take() []*readmodel.Message {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.msgs
	p.msgs = nil
	return out
}

// takePolled returns and forgets the KindPolled messages published so far.
func (p *fakePub) takePolled() []*readmodel.Message {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.polled
	p.polled = nil
	return out
}

type env struct {
	sim  *sim.Sim
	url  string
	pub  *fakePub
	in   *ingest.Ingest
	now  time.Time
	mu   sync.Mutex
	edge map[string]string
}

func (e *env) clock() time.Time { e.mu.Lock(); defer e.mu.Unlock(); return e.now }

// MustEnv starts a simulator behind an httptest server (wrapped by
// override when given) and an Ingest reading it; both close at cleanup.
// Every source gets a generous timeout.
func MustEnv(t *testing.T, override func(sim http.Handler) http.Handler) *env {
	t.Helper()
	return MustEnvTimeout(t, override, 30*time.Second)
}

// MustEnvTimeout is MustEnv with the analytics source's timeout set (the
// timeout fault holds a request until the client gives up).
func MustEnvTimeout(t *testing.T, override func(sim http.Handler) http.Handler, analytics time.Duration) *env {
	t.Helper()
	return mustEnvHooks(t, override, analytics, ingest.Hooks{})
}

// mustEnvHooks is MustEnvTimeout with ingest's hooks set.
func mustEnvHooks(t *testing.T, override func(sim http.Handler) http.Handler, analytics time.Duration, hooks ingest.Hooks) *env {
	t.Helper()
	s, url := mustSimServer(t, override)
	e := &env{sim: s, url: url, pub: &fakePub{}, now: anchor.Add(10 * time.Second), edge: s.EdgeCases()}
	cfg := ingest.Config{Sources: map[readmodel.Source]ingest.SourceConfig{}, Now: e.clock, PageLimit: 300, Hooks: hooks}
	for _, src := range readmodel.Sources {
		cfg.Sources[src] = ingest.SourceConfig{BaseURL: url + "/" + string(src), Timeout: 30 * time.Second}
	}
	cfg.Sources[readmodel.SourceAnalytics] = ingest.SourceConfig{BaseURL: url + "/analytics", Timeout: analytics}
	in, err := ingest.New(cfg, e.pub, zerolog.Nop())
	require.NoError(t, err)
	e.in = in
	t.Cleanup(func() { require.NoError(t, in.Close(context.Background())) })
	return e
}

// mustSimServer serves the tests' simulated market (20 collections of
// 60 tokens) behind an httptest server, through override when given;
// both close at cleanup, after what the test registers later.
func mustSimServer(t *testing.T, override func(sim http.Handler) http.Handler) (*sim.Sim, string) {
	t.Helper()
	s := sim.New(sim.Options{Seed: 9, Collections: 20, TokensPerCollection: 60, Anchor: anchor})
	h := s.Handler()
	if override != nil {
		h = override(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		require.NoError(t, s.Close(context.Background()))
		srv.Close()
	})
	return s, srv.URL
}

func (e *env) fault(t *testing.T, src readmodel.Source, mode string) {
	t.Helper()
	resp, err := http.Post(e.url+"/_sim/faults", "application/json", strings.NewReader(`{"source":"`+string(src)+`","mode":"`+mode+`"}`))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

func byKind(msgs []*readmodel.Message, k readmodel.Kind) []*readmodel.Message {
	var out []*readmodel.Message
	for _, m := range msgs {
		if m.Kind == k {
			out = append(out, m)
		}
	}
	return out
}

func find(msgs []*readmodel.Message, k readmodel.Kind, src readmodel.Source, coll string) *readmodel.Message {
	for _, m := range msgs {
		if m.Kind == k && m.Source == src && m.CollectionID == coll {
			return m
		}
	}
	return nil
}

func TestRunCycleFirstPublishesEverything(t *testing.T) {
	e := MustEnv(t, nil)
	sum, err := e.in.RunCycle(context.Background())
	require.NoError(t, err)
	msgs := e.pub.take()

	assert.Equal(t, uint64(len(msgs)), sum.Position.State, "summary carries the flushed position")
	assert.Equal(t, len(msgs), sum.Published)
	for _, src := range readmodel.Sources {
		require.Contains(t, sum.Sources, string(src))
		assert.Equal(t, 1, sum.Sources[string(src)].PollsOK, "%s", src)
	}
	assert.Len(t, byKind(msgs, readmodel.KindCollection), 20)

	// IDs: <cycle start ns>/<kind>/<source>/<collection>/<bucket>.
	m := find(msgs, readmodel.KindListings, readmodel.SourceOrderBook, e.edge[sim.EdgeDualListed])
	require.NotNil(t, m)
	assert.Equal(t, strconv.FormatInt(e.now.UnixNano(), 10)+"/listings/order-book/"+m.CollectionID+"/0", m.ID)
	assert.True(t, m.ObservedAt.Equal(e.now))

	// Rates: no feed for MATIC and APE.
	rates := byKind(msgs, readmodel.KindRates)
	require.Len(t, rates, 1)
	assert.Contains(t, rates[0].Rates, "SOL")
	assert.NotContains(t, rates[0].Rates, "MATIC")
	assert.NotContains(t, rates[0].Rates, "APE")

	// Trimming: order-book ≤ 200, mirror ≤ 450, sorted by raw price.
	many := e.edge[sim.EdgeManyListings]
	ob := find(msgs, readmodel.KindListings, readmodel.SourceOrderBook, many)
	mir := find(msgs, readmodel.KindListings, readmodel.SourceIndexerMirror, many)
	require.NotNil(t, ob)
	require.NotNil(t, mir)
	assert.Len(t, ob.Listings, readmodel.OrderBookMax)
	assert.LessOrEqual(t, len(mir.Listings), source.MirrorKeep)
	assert.Greater(t, len(ob.Listings)+len(mir.Listings), 300)
	for i := 1; i < len(ob.Listings); i++ {
		a, b := ob.Listings[i-1].PriceRaw, ob.Listings[i].PriceRaw
		assert.True(t, len(a) < len(b) || len(a) == len(b) && a <= b, "sorted by raw")
	}

	// A collection with no listings still gets an (empty) set and an ok status.
	none := e.edge[sim.EdgeNoListings]
	for _, src := range []readmodel.Source{readmodel.SourceOrderBook, readmodel.SourceIndexerMirror} {
		l := find(msgs, readmodel.KindListings, src, none)
		require.NotNil(t, l, "%s", src)
		assert.Empty(t, l.Listings)
	}

	// Mirror: legacy brand prefix stripped; escrow never a seller.
	for _, r := range find(msgs, readmodel.KindListings, readmodel.SourceIndexerMirror, e.edge[sim.EdgeLegacySolanaIDs]).Listings {
		assert.False(t, strings.HasPrefix(r.OrderID, normalize.LegacyOrderIDPrefix))
		assert.NotEqual(t, sim.EscrowWallet, r.Seller)
	}

	// Source-wide statuses are published; a healthy collection carries
	// none (its rows say its sources answered), and every poll that
	// succeeded says so (Polled).
	statuses := byKind(msgs, readmodel.KindStatus)
	perColl := map[readmodel.Source]int{}
	for _, s := range statuses {
		require.NotNil(t, s.Status)
		assert.True(t, s.Status.OK)
		assert.True(t, s.Status.LastGoodAt.Equal(e.now))
		if s.CollectionID != "" {
			perColl[s.Source]++
		}
	}
	for _, src := range []readmodel.Source{readmodel.SourceOrderBook, readmodel.SourceIndexerMirror, readmodel.SourceIndexerStats, readmodel.SourceAnalytics} {
		assert.Zero(t, perColl[src], "%s", src)
		p := find(e.pub.polled, readmodel.KindPolled, src, "")
		require.NotNil(t, p, "%s", src)
		assert.True(t, p.Polled.At.Equal(e.now), "%s", src)
	}
	for _, src := range []readmodel.Source{readmodel.SourcePriceFeed, readmodel.SourceCollectionIndex, readmodel.SourceSales} {
		require.NotNil(t, find(msgs, readmodel.KindStatus, src, ""), "%s", src)
	}

	// Rejections are counted by reason, not fatal.
	assert.Positive(t, sum.Sources["sales"].Rejected["bad_price"], "uninterpretable sale prices")
	assert.Positive(t, sum.Sources["order-book"].Rejected["unknown_chain"]+sum.Sources["indexer-mirror"].Rejected["unknown_chain"])

	// Tokens: buckets of at most ~256, overlay and custody carried.
	toks := byKind(msgs, readmodel.KindTokens)
	require.NotEmpty(t, toks)
	custody := 0
	for _, m := range toks {
		assert.LessOrEqual(t, len(m.Tokens), 256)
		assert.Less(t, m.Bucket, m.Buckets, "a bucket carries its collection's bucket count")
		for _, d := range m.Tokens {
			assert.Equal(t, m.CollectionID, d.CollectionID)
			assert.Equal(t, m.Bucket, readmodel.TokenBucket(readmodel.TokenKey(d.Chain, d.ContractAddress, d.TokenID), int(m.Buckets)), "the token's bucket among Buckets")
			if d.InCustody && d.Overlay == nil {
				custody++
			}
		}
	}
	assert.Positive(t, custody, "escrow tokens with no listing naming a seller")

	// Sales: legacy rows keep their write time; batches bounded.
	sales := byKind(msgs, readmodel.KindSales)
	require.NotEmpty(t, sales)
	legacy := 0
	for _, m := range sales {
		assert.LessOrEqual(t, len(m.Sales), source.SalesBatch)
		for _, s := range m.Sales {
			if s.Timestamp.Before(normalize.SaleTimestampCutoff) {
				legacy++
			}
		}
	}
	assert.Positive(t, legacy)

	st := e.in.Stats()
	assert.Equal(t, uint64(1), st.Cycles)
	assert.Equal(t, uint64(1), st.Polls["order-book"]["ok"])
	assert.Equal(t, uint64(sum.Sources["sales"].Rejected["bad_price"]), st.Rejected["sales"]["bad_price"])
}

// TestFullCycleRepublishesEverything: the first cycle and one asked for
// (POST /admin/ingest?full=true) publish every subject, statuses and all,
// and end with the marker that tells projectors their views are whole.
func TestFullCycleRepublishesEverything(t *testing.T) {
	ctx := context.Background()
	e := MustEnv(t, nil)
	endsFull := func(msgs []*readmodel.Message) bool {
		return len(msgs) > 0 && readmodel.IsFullCycleEnd(msgs[len(msgs)-1].ID)
	}
	first, err := e.in.RunCycle(ctx)
	require.NoError(t, err)
	firstMsgs := e.pub.take()
	assert.True(t, first.Full, "a process's first cycle is full")
	assert.True(t, endsFull(firstMsgs))

	again, err := e.in.RunCycle(ctx)
	require.NoError(t, err)
	assert.False(t, again.Full)
	assert.Empty(t, e.pub.take(), "nothing changed")

	full, err := e.in.RunFullCycle(ctx)
	require.NoError(t, err)
	msgs := e.pub.take()
	assert.True(t, full.Full)
	assert.Zero(t, full.Unchanged, "nothing skipped as unchanged")
	assert.Equal(t, len(firstMsgs), len(msgs), "every subject again, as on the first cycle")
	assert.Equal(t, len(byKind(firstMsgs, readmodel.KindStatus)), len(byKind(msgs, readmodel.KindStatus)), "every poll status again")
	assert.Equal(t, len(byKind(firstMsgs, readmodel.KindTokens)), len(byKind(msgs, readmodel.KindTokens)), "tokens from the watermark's start")
	assert.Equal(t, len(byKind(firstMsgs, readmodel.KindSales)), len(byKind(msgs, readmodel.KindSales)), "sales from the cursor's start")
	require.True(t, endsFull(msgs))
	marker := msgs[len(msgs)-1]
	assert.Equal(t, readmodel.KindStatus, marker.Kind)
	assert.Equal(t, readmodel.SourceCollectionIndex, marker.Source)
	assert.Equal(t, *find(msgs, readmodel.KindStatus, readmodel.SourceCollectionIndex, "").Status, *marker.Status, "a repeat of the index's status")

	next, err := e.in.RunCycle(ctx)
	require.NoError(t, err)
	assert.False(t, next.Full)
	assert.Empty(t, e.pub.take())
}

func TestRunCyclePublishesOnlyChanges(t *testing.T) {
	e := MustEnv(t, nil)
	_, err := e.in.RunCycle(context.Background())
	require.NoError(t, err)
	first := e.pub.take()

	sum, err := e.in.RunCycle(context.Background())
	require.NoError(t, err)
	assert.Empty(t, e.pub.take(), "nothing changed upstream")
	assert.Zero(t, sum.Published)
	assert.Positive(t, sum.Unchanged)

	e.sim.Tick()
	sum, err = e.in.RunCycle(context.Background())
	require.NoError(t, err)
	next := e.pub.take()
	assert.NotEmpty(t, byKind(next, readmodel.KindListings), "the market moved")
	assert.Less(t, len(byKind(next, readmodel.KindListings)), len(byKind(first, readmodel.KindListings)), "only changed subjects")
	assert.Empty(t, byKind(next, readmodel.KindCollection), "documents did not change")
	assert.Empty(t, byKind(next, readmodel.KindStatus), "statuses did not change")
	assert.NotEmpty(t, byKind(next, readmodel.KindSales), "new sales only")
	assert.Less(t, len(byKind(next, readmodel.KindTokens)), len(byKind(first, readmodel.KindTokens)))
	assert.Positive(t, sum.Unchanged)
}

func TestFailedPollPublishesFailureStatus(t *testing.T) {
	garbage := false
	var gmu sync.Mutex
	e := MustEnvTimeout(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			gmu.Lock()
			g := garbage
			gmu.Unlock()
			if g && strings.HasPrefix(r.URL.Path, "/indexer-stats/") {
				_, _ = w.Write([]byte(`{"items": [tru`))
				return
			}
			h.ServeHTTP(w, r)
		})
	}, 3*time.Second)
	_, err := e.in.RunCycle(context.Background())
	require.NoError(t, err)
	e.pub.take()
	firstGood := e.now

	e.fault(t, readmodel.SourceOrderBook, "error")
	e.fault(t, readmodel.SourceAnalytics, "timeout")
	gmu.Lock()
	garbage = true
	gmu.Unlock()
	e.mu.Lock()
	e.now = e.now.Add(time.Minute)
	e.mu.Unlock()
	e.sim.Tick()
	sum, err := e.in.RunCycle(context.Background())
	require.NoError(t, err, "upstream failures are not cycle errors")
	msgs := e.pub.take()

	tests := []struct {
		name  string
		src   readmodel.Source
		kind  readmodel.Kind
		class string
	}{
		{name: "HTTP 500", src: readmodel.SourceOrderBook, kind: readmodel.KindListings, class: "http_5xx"},
		{name: "timeout", src: readmodel.SourceAnalytics, kind: readmodel.KindAnalytics, class: "timeout"},
		{name: "invalid JSON", src: readmodel.SourceIndexerStats, kind: readmodel.KindStats, class: "bad_payload"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, 1, sum.Sources[string(tc.src)].PollsFailed)
			assert.Equal(t, tc.class, sum.Sources[string(tc.src)].ErrorClass)
			n := 0
			for _, m := range msgs {
				if m.Source != tc.src {
					continue
				}
				assert.NotEqual(t, tc.kind, m.Kind, "no rows from a failed poll")
				if m.Kind == readmodel.KindStatus {
					n++
					assert.False(t, m.Status.OK)
					assert.Equal(t, tc.class, m.Status.ErrorClass)
					assert.True(t, m.Status.LastGoodAt.Equal(firstGood))
					assert.True(t, m.Status.FailingSince.Equal(e.now))
				}
			}
			assert.Equal(t, 20, n, "a failure status per collection")
			assert.Equal(t, uint64(1), e.in.Stats().Polls[string(tc.src)][tc.class])
		})
	}
	assert.NotEmpty(t, byKind(msgs, readmodel.KindListings), "the mirror still publishes")

	// Still failing: no status republished; recovery: ok statuses again.
	_, err = e.in.RunCycle(context.Background())
	require.NoError(t, err)
	assert.Empty(t, byKind(e.pub.take(), readmodel.KindStatus))

	resp, err := http.Post(e.url+"/_sim/faults/reset", "application/json", nil)
	require.NoError(t, err)
	resp.Body.Close()
	gmu.Lock()
	garbage = false
	gmu.Unlock()
	_, err = e.in.RunCycle(context.Background())
	require.NoError(t, err)
	msgs = e.pub.take()
	ok := byKind(msgs, readmodel.KindStatus)
	assert.Len(t, ok, 60)
	for _, m := range ok {
		assert.True(t, m.Status.OK)
		assert.True(t, m.Status.FailingSince.IsZero())
	}
	assert.NotNil(t, find(msgs, readmodel.KindListings, readmodel.SourceOrderBook, e.edge[sim.EdgeMirrorLag]), "rows flow again")

	// Healthy again: no status until the next failure; a full cycle
	// sends the rows of every collection it delivered, not a status.
	_, err = e.in.RunCycle(context.Background())
	require.NoError(t, err)
	assert.Empty(t, byKind(e.pub.take(), readmodel.KindStatus))
	_, err = e.in.RunFullCycle(context.Background())
	require.NoError(t, err)
	msgs = e.pub.take()
	for _, m := range byKind(msgs, readmodel.KindStatus) {
		assert.Empty(t, m.CollectionID, "a source-wide status only: %s %s", m.Source, m.CollectionID)
	}
	for _, kind := range []readmodel.Kind{readmodel.KindAnalytics, readmodel.KindStats} {
		assert.Len(t, byKind(msgs, kind), 20, "%s: every collection's rows", kind)
	}
}

func TestRowGarbageIsCountedNotFatal(t *testing.T) {
	long := strings.Repeat("x", 300)
	page := `{"items":[{"collectionId":"ethereum_0x00000000000000000000000000000000000000aa","rows":[
		{"chain":"ethereum","contract":"0x00000000000000000000000000000000000000AA","tokenId":"1","price":"9007199254740993123","createdAt":"2026-11-01T00:00:00Z","orderId":"ok"},
		{"chain":"ethereum","contract":"0x00AA","tokenId":"2","price":"1"},
		{"chain":"ethereum","contract":"0x00000000000000000000000000000000000000aa","tokenId":"3","price":"-1"},
		{"chain":"ethereum","contract":"0x00000000000000000000000000000000000000aa","tokenId":"4","price":1.5},
		{"chain":"dogechain","contract":"0x00000000000000000000000000000000000000aa","tokenId":"5","price":"1"},
		{"chain":"ethereum","contract":"0x00000000000000000000000000000000000000aa","tokenId":"6","price":"1","orderId":"` + long + `"},
		{"chain":"ethereum","contract":"0x00000000000000000000000000000000000000aa","tokenId":"7","price":{"x":1}},
		"not a row", 17, null
	]}],"nextCursor":""}`
	colls := `{"items":[{"id":"ethereum_0x00000000000000000000000000000000000000aa","chain":"ethereum","contract":"0x00000000000000000000000000000000000000aa"}],"nextCursor":""}`
	e := MustEnv(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/order-book/listings":
				_, _ = w.Write([]byte(page))
			case "/collection-index/collections":
				_, _ = w.Write([]byte(colls))
			default:
				h.ServeHTTP(w, r)
			}
		})
	})
	sum, err := e.in.RunCycle(context.Background())
	require.NoError(t, err)
	ob := sum.Sources["order-book"]
	assert.Equal(t, 1, ob.PollsOK)
	assert.Equal(t, 1, ob.RowsAccepted)
	assert.Equal(t, map[string]int{"bad_address": 1, "bad_price": 3, "unknown_chain": 1, "oversized_field": 1, "bad_json": 3}, ob.Rejected)
	m := find(e.pub.take(), readmodel.KindListings, readmodel.SourceOrderBook, "ethereum_0x00000000000000000000000000000000000000aa")
	require.NotNil(t, m)
	require.Len(t, m.Listings, 1)
	assert.Equal(t, "9007199254740993123", m.Listings[0].PriceRaw)
	assert.Positive(t, sum.Sources["indexer-mirror"].Rejected["unknown_collection"], "rows of collections outside the index")
}

func TestFlushFailureRepublishes(t *testing.T) {
	e := MustEnv(t, nil)
	e.pub.failFlush = 1
	_, err := e.in.RunCycle(context.Background())
	require.Error(t, err)
	assert.Equal(t, readmodel.Internal, readmodel.ErrorCode(err))
	first := e.pub.take()
	require.NotEmpty(t, first)

	sum, err := e.in.RunCycle(context.Background())
	require.NoError(t, err)
	again := e.pub.take()
	assert.Len(t, byKind(again, readmodel.KindListings), len(byKind(first, readmodel.KindListings)), "unacknowledged state is published again")
	assert.Len(t, byKind(again, readmodel.KindStatus), len(byKind(first, readmodel.KindStatus)))
	assert.Len(t, byKind(again, readmodel.KindSales), len(byKind(first, readmodel.KindSales)), "the sales cursor did not move")
	assert.Zero(t, sum.Unchanged)
}

func TestConcurrentCyclesSerialize(t *testing.T) {
	e := MustEnv(t, nil)
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.sim.Tick()
			_, err := e.in.RunCycle(context.Background())
			assert.NoError(t, err)
		}()
	}
	wg.Wait()
	msgs := e.pub.take()
	assert.False(t, e.pub.overlap)
	ids := map[string]bool{}
	for _, m := range msgs {
		assert.False(t, ids[m.ID], "duplicate message ID %s", m.ID)
		ids[m.ID] = true
	}
	// Messages of one cycle are contiguous: the ID prefix never comes back,
	// even though the clock is frozen (IDs must differ between cycles).
	seen := map[string]bool{}
	prev := ""
	for _, m := range msgs {
		p := strings.SplitN(m.ID, "/", 2)[0]
		if p != prev {
			assert.False(t, seen[p], "cycles interleaved")
			seen[p] = true
			prev = p
		}
	}
}

// TestBusyHeldThroughEachCycle: Hooks.Busy is called as each cycle starts
// and its call returned as the cycle ends, a cycle that fails included, so
// that every unit of a cycle is built and published while it is held (a
// node holds its larger memory share so).
func TestBusyHeldThroughEachCycle(t *testing.T) {
	var mu sync.Mutex
	var held, starts, ends, unitsHeld, unitsNot int
	hooks := ingest.Hooks{
		Busy: func() func() {
			mu.Lock()
			defer mu.Unlock()
			held++
			starts++
			return func() {
				mu.Lock()
				defer mu.Unlock()
				held--
				ends++
			}
		},
		Yield: func() {
			mu.Lock()
			defer mu.Unlock()
			if held == 1 {
				unitsHeld++
			} else {
				unitsNot++
			}
		},
	}
	e := mustEnvHooks(t, nil, 30*time.Second, hooks)
	for range 2 {
		e.sim.Tick()
		_, err := e.in.RunCycle(context.Background())
		require.NoError(t, err)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := e.in.RunCycle(cancelled)
	require.Error(t, err)

	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, 3, starts, "one call a cycle")
	assert.Equal(t, 3, ends, "each returned call made once the cycle ended, the failed one too")
	assert.Zero(t, held)
	assert.Positive(t, unitsHeld, "units built while held")
	assert.Zero(t, unitsNot, "units built while not held")
}

func TestOpenDoesNotRunACycle(t *testing.T) {
	e := MustEnv(t, nil)
	require.NoError(t, e.in.Open(context.Background()))
	require.NoError(t, e.in.Open(context.Background()))
	assert.Empty(t, e.pub.take())
	require.NoError(t, e.in.Close(context.Background()))
	require.NoError(t, e.in.Close(context.Background()))
}

func TestNewValidatesConfig(t *testing.T) {
	good := func() ingest.Config {
		c := ingest.Config{Sources: map[readmodel.Source]ingest.SourceConfig{}}
		for _, s := range readmodel.Sources {
			c.Sources[s] = ingest.SourceConfig{BaseURL: "http://127.0.0.1:1/" + string(s)}
		}
		return c
	}
	tests := []struct {
		name string
		mod  func(c *ingest.Config)
		ok   bool
	}{
		{name: "complete", mod: func(*ingest.Config) {}, ok: true},
		{name: "missing source", mod: func(c *ingest.Config) { delete(c.Sources, readmodel.SourceSales) }},
		{name: "relative URL", mod: func(c *ingest.Config) { c.Sources[readmodel.SourceSales] = ingest.SourceConfig{BaseURL: "/sales"} }},
		{name: "unknown source", mod: func(c *ingest.Config) { c.Sources["nope"] = ingest.SourceConfig{BaseURL: "http://x"} }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := good()
			tc.mod(&c)
			_, err := ingest.New(c, &fakePub{}, zerolog.Nop())
			if tc.ok {
				assert.NoError(t, err)
			} else {
				assert.Error(t, err)
			}
		})
	}
}

func TestCancelledCycleBlamesNoUpstream(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e := MustEnv(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasPrefix(r.URL.Path, "/analytics/") {
				cancel() // the caller gives up while this source is being read
				<-r.Context().Done()
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	_, err := e.in.RunCycle(ctx)
	require.Error(t, err)
	for _, m := range byKind(e.pub.take(), readmodel.KindStatus) {
		assert.True(t, m.Status.OK, "%s %s: a cancelled poll is not a failed upstream", m.Source, m.CollectionID)
	}
	assert.Zero(t, e.in.Stats().Cycles)
}

func TestListingsExpireBetweenTicks(t *testing.T) {
	e := MustEnv(t, nil)
	_, err := e.in.RunCycle(context.Background())
	require.NoError(t, err)
	exp := e.edge[sim.EdgeExpiring]
	before := find(e.pub.take(), readmodel.KindListings, readmodel.SourceOrderBook, exp)
	require.NotNil(t, before)
	require.NotEmpty(t, before.Listings)
	for _, r := range before.Listings {
		require.NotNil(t, r.ExpiresAt)
		assert.True(t, r.ExpiresAt.After(e.now))
	}

	// Half a step later, no tick: the rows expiring in the first half are gone.
	e.mu.Lock()
	e.now = e.now.Add(time.Minute)
	e.mu.Unlock()
	_, err = e.in.RunCycle(context.Background())
	require.NoError(t, err)
	after := find(e.pub.take(), readmodel.KindListings, readmodel.SourceOrderBook, exp)
	require.NotNil(t, after, "the set changed, so it is republished")
	assert.Less(t, len(after.Listings), len(before.Listings))
	for _, r := range after.Listings {
		assert.True(t, r.ExpiresAt.After(e.now), "no expired row is published")
	}
}

func TestSourcesReportLastSuccessAndFailure(t *testing.T) {
	e := MustEnv(t, nil)
	first, err := e.in.RunCycle(context.Background())
	require.NoError(t, err)
	byName := func() map[string]ingest.SourceStatus {
		out := map[string]ingest.SourceStatus{}
		for _, s := range e.in.Sources() {
			out[s.Source] = s
		}
		return out
	}
	for _, src := range readmodel.Sources {
		s, ok := byName()[string(src)]
		require.True(t, ok, "%s reported", src)
		assert.True(t, s.Healthy, "%s healthy", src)
		assert.Equal(t, first.End, s.LastSuccess, "%s last success", src)
		assert.True(t, s.LastFailure.IsZero())
	}

	e.fault(t, readmodel.SourceOrderBook, "error")
	failed, err := e.in.RunCycle(context.Background())
	require.NoError(t, err)
	ob := byName()[string(readmodel.SourceOrderBook)]
	assert.False(t, ob.Healthy)
	assert.Equal(t, "http_5xx", ob.ErrorClass)
	assert.Equal(t, failed.End, ob.LastFailure)
	assert.Equal(t, first.End, ob.LastSuccess, "last success stays at the last good cycle")
	assert.True(t, byName()[string(readmodel.SourceAnalytics)].Healthy, "other sources unaffected")

	e.fault(t, readmodel.SourceOrderBook, "ok")
	again, err := e.in.RunCycle(context.Background())
	require.NoError(t, err)
	ob = byName()[string(readmodel.SourceOrderBook)]
	assert.True(t, ob.Healthy)
	assert.Equal(t, again.End, ob.LastSuccess)
	assert.Equal(t, failed.End, ob.LastFailure, "the last failure is remembered")
}

// TestSteadyCyclesMatchAFreshIngest: an ingest that has run for a while
// skips decoding the listing groups its upstreams sent unchanged; what it
// has published per collection, and the rows it counts, must still be
// exactly what a fresh ingest reads from the same market at the same time.
func TestSteadyCyclesMatchAFreshIngest(t *testing.T) {
	e := MustEnv(t, nil)
	last := map[string]*readmodel.Message{}
	collect := func() {
		for _, m := range byKind(e.pub.take(), readmodel.KindListings) {
			last[string(m.Source)+"/"+m.CollectionID] = m
		}
	}
	var sum ingest.Summary
	for i := 0; i < 4; i++ {
		if i > 0 {
			e.sim.Tick()
			e.mu.Lock()
			e.now = e.now.Add(2 * time.Minute)
			e.mu.Unlock()
		}
		var err error
		sum, err = e.in.RunCycle(context.Background())
		require.NoError(t, err)
		collect()
	}
	require.Positive(t, sum.Sources[string(readmodel.SourceOrderBook)].Unchanged, "some groups came unchanged")

	pub := &fakePub{}
	cfg := ingest.Config{Sources: map[readmodel.Source]ingest.SourceConfig{}, Now: e.clock, PageLimit: 300}
	for _, src := range readmodel.Sources {
		cfg.Sources[src] = ingest.SourceConfig{BaseURL: e.url + "/" + string(src), Timeout: 30 * time.Second}
	}
	fresh, err := ingest.New(cfg, pub, zerolog.Nop())
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, fresh.Close(context.Background())) })
	freshSum, err := fresh.RunCycle(context.Background())
	require.NoError(t, err)

	// Rows without a time of their own carry the poll's; compare without it.
	rows := func(m *readmodel.Message) []readmodel.ListingRow {
		out := append([]readmodel.ListingRow(nil), m.Listings...)
		for i := range out {
			if out[i].Timestamp.Equal(m.ObservedAt) {
				out[i].Timestamp = time.Time{}
			}
		}
		return out
	}
	want := byKind(pub.take(), readmodel.KindListings)
	require.NotEmpty(t, want)
	for _, m := range want {
		got := last[string(m.Source)+"/"+m.CollectionID]
		require.NotNil(t, got, "%s %s never published", m.Source, m.CollectionID)
		assert.Equal(t, rows(m), rows(got), "%s %s", m.Source, m.CollectionID)
	}
	assert.Len(t, last, len(want))
	for _, src := range []readmodel.Source{readmodel.SourceOrderBook, readmodel.SourceIndexerMirror} {
		s, f := sum.Sources[string(src)], freshSum.Sources[string(src)]
		assert.Equal(t, f.RowsAccepted, s.RowsAccepted, "%s rows accepted", src)
		assert.Equal(t, f.Rejected, s.Rejected, "%s rows rejected", src)
	}
}

// TestListingsRepublishedWhenBytesReturn: a collection's listings that
// come back byte for byte as they were two polls ago are published again
// when the poll in between changed them (here: a row replaced by garbage),
// although the bytes match what the ingest last decoded cleanly.
func TestListingsRepublishedWhenBytesReturn(t *testing.T) {
	var garbage atomic.Bool
	var target atomic.Value
	e := MustEnv(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/order-book/listings" {
				h.ServeHTTP(w, r)
				return
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			var p source.Page[source.Group[json.RawMessage]]
			if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			for i := range p.Items {
				if g := &p.Items[i]; len(g.Rows) > 1 && target.CompareAndSwap(nil, g.CollectionID) || target.Load() == g.CollectionID {
					if garbage.Load() {
						g.Rows = append([]json.RawMessage{json.RawMessage(`"x"`)}, g.Rows[1:]...)
					}
				}
			}
			_ = json.NewEncoder(w).Encode(p) // deterministic: unchanged groups keep their bytes
		})
	})
	run := func() []*readmodel.Message {
		_, err := e.in.RunCycle(context.Background())
		require.NoError(t, err)
		return e.pub.take()
	}
	first := run()
	coll, _ := target.Load().(string)
	require.NotEmpty(t, coll)
	id, err := normalize.CollectionID(coll)
	require.NoError(t, err)
	full := find(first, readmodel.KindListings, readmodel.SourceOrderBook, id)
	require.NotNil(t, full)

	garbage.Store(true)
	cut := find(run(), readmodel.KindListings, readmodel.SourceOrderBook, id)
	require.NotNil(t, cut, "a row gone is a change")
	require.Len(t, cut.Listings, len(full.Listings)-1)

	garbage.Store(false)
	again := find(run(), readmodel.KindListings, readmodel.SourceOrderBook, id)
	require.NotNil(t, again, "the row is back: published again")
	assert.Len(t, again.Listings, len(full.Listings))
}

package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/ingest/sim"
	"github.com/marketd/marketd/ingest/source"
	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/normalize"
)

// contractAnchor is the simulated market's tick 0 in the contract test.
var contractAnchor = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

// TestPollerContract runs every registered poller (upstreams, for every
// source of readmodel.Sources: a new poller is covered once registered)
// against the simulator, which serves every source's endpoint, and checks
// what the seam (source/poll.go, Poller) promises the cycle:
//
//   - spec: a name of its own, under its source, known to readmodel.Polls;
//     the First, Collections, Status, Append and Empty combinations the
//     cycle can run;
//   - a poll of a healthy upstream succeeds and yields units whose kind
//     follows the spec, whose builds hold exactly their kind's payload and
//     as many rows as they say, in normalized form (normalize's rules:
//     lowercase EVM addresses and collection ids, base58 mints kept,
//     canonical integer prices, active unexpired listings);
//   - stateless: the same request against the same upstream yields the
//     same units, rejects and mark; resuming from the mark against an
//     unchanged upstream returns the same mark, and an Append poll yields
//     nothing again;
//   - garbage rows (one injected per page) are each rejected with a reason
//     and counted, and the rest is yielded as before;
//   - a failing upstream (5xx, timeout, not JSON, other status, refused) is
//     an upstream_error of its class, with the mark left where it was; a
//     cancelled context ends the poll promptly with an error; an Emit
//     error ends the poll with that error.
func TestPollerContract(t *testing.T) {
	names := map[string]readmodel.Source{}
	for _, src := range readmodel.Sources {
		mk, ok := upstreams[src]
		require.True(t, ok, "source %s has no registered poller", src)
		for i, p := range mk(source.NewClient(src, "http://127.0.0.1:1/"+string(src), 0, nil)) {
			sp := p.Spec()
			require.NotEmpty(t, sp.Name, "poller %d of %s has no name", i, src)
			_, dup := names[sp.Name]
			require.False(t, dup, "poll name %s used twice", sp.Name)
			names[sp.Name] = src
			t.Run(sp.Name, func(t *testing.T) { pollerContract(t, src, i) })
		}
	}
}

// pollerContract checks the i-th poller registered under src.
func pollerContract(t *testing.T, src readmodel.Source, i int) {
	s := sim.New(sim.Options{Seed: 5, Collections: 20, TokensPerCollection: 40, Anchor: contractAnchor})
	var arrived atomic.Pointer[chan struct{}] // closed when a request reaches the simulator
	h := s.Handler()
	spy := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ch := arrived.Swap(nil); ch != nil {
			close(*ch)
		}
		h.ServeHTTP(w, r)
	})
	srv := httptest.NewServer(spy)
	var injected atomic.Int64
	garbage := httptest.NewServer(garbageRows(h, &injected))
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "/404/") {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(`<html>not json</html>`))
	}))
	t.Cleanup(func() {
		require.NoError(t, s.Close(context.Background()))
		srv.Close()
		garbage.Close()
		broken.Close()
	})
	// poller is the poller under test over a client of src at base.
	poller := func(base string, timeout time.Duration) Poller {
		ps := upstreams[src](source.NewClient(src, base+"/"+string(src), timeout, nil))
		require.Greater(t, len(ps), i)
		return ps[i]
	}
	p := poller(srv.URL, 30*time.Second)
	sp := p.Spec()
	ctx := context.Background()
	req := source.Request{Limit: 7, Now: contractAnchor.Add(10 * time.Second)} // small pages: several per walk

	t.Run("spec", func(t *testing.T) {
		assert.Equal(t, src, sp.Source, "the source it is registered under")
		assert.True(t, sp.Name == string(src) || strings.HasPrefix(sp.Name, string(src)+"/"),
			"name %q is the source's or <source>/<what>", sp.Name)
		assert.GreaterOrEqual(t, readmodel.PollIndex(sp.Name), 0, "poll %s is not in readmodel.Polls (freshness drops it)", sp.Name)
		if sp.Collections == source.Lists {
			assert.True(t, sp.First, "the collection list is polled first")
			assert.NotEqual(t, source.PerCollection, sp.Status, "the list has no per-collection status")
		}
		if sp.Status == source.PerCollection {
			assert.Equal(t, source.Checked, sp.Collections, "per-collection statuses need checked collections")
		}
		if sp.Empty != "" {
			assert.Equal(t, source.PerCollection, sp.Status, "Empty stands for listed collections: per-collection polls only")
			assert.False(t, sp.Append, "an appending poll replaces nothing")
		}
		if sp.Collections == source.Global {
			assert.False(t, sp.Append, "a global poll replaces its one subject")
		}
	})

	// A healthy poll, the baseline of the checks below.
	base := runPoll(ctx, p, req, nil)
	require.NoError(t, base.err, "a healthy upstream")

	t.Run("healthy poll", func(t *testing.T) {
		require.NotEmpty(t, base.units, "the simulator serves rows for every source")
		assert.Positive(t, base.rows, "accepted rows")
		keys := map[string]bool{} // Append: each message's subject and bucket, its ID in the cycle
		for _, u := range base.units {
			checkUnit(t, sp, req, u)
			if sp.Append {
				for _, m := range u.built.Msgs {
					k := u.id + "/" + strconv.FormatUint(uint64(m.Bucket), 10)
					assert.False(t, keys[k], "two messages of %s in bucket %d: their IDs collide", u.id, m.Bucket)
					keys[k] = true
				}
			}
		}
		for reason := range base.rejects {
			assert.Contains(t, knownReasons, reason, "rejects carry a reason of normalize's")
		}
	})

	t.Run("stateless", func(t *testing.T) {
		again := runPoll(ctx, p, req, nil)
		require.NoError(t, again.err)
		assert.Equal(t, base.mark, again.mark, "same request, same upstream: same mark")
		assert.Equal(t, base.rejects, again.rejects)
		assert.Equal(t, base.summary(), again.summary(), "same units and messages")
		fresh := runPoll(ctx, poller(srv.URL, 30*time.Second), req, nil)
		assert.Equal(t, base.summary(), fresh.summary(), "a new poller yields what the used one does")

		resumed := runPoll(ctx, p, source.Request{Limit: req.Limit, Now: req.Now, Mark: base.mark}, nil)
		require.NoError(t, resumed.err)
		assert.Equal(t, base.mark, resumed.mark, "resuming an unchanged upstream stays at the mark")
		if sp.Append {
			assert.Zero(t, resumed.rows, "an appending poll yields nothing twice")
		}
	})

	t.Run("garbage rows", func(t *testing.T) {
		injected.Store(0)
		g := runPoll(ctx, poller(garbage.URL, 30*time.Second), req, nil)
		require.NoError(t, g.err, "bad rows fail only themselves")
		n := int(injected.Load())
		require.Positive(t, n, "garbageRows does not know this poller's wire shape: teach it")
		assert.Equal(t, base.rejected()+n, g.rejected(), "each garbage row counted once (base %v, garbage %v)", base.rejects, g.rejects)
		assert.Equal(t, base.rows, g.rows, "the other rows are still yielded")
		assert.Equal(t, base.summary(), g.summary(), "the same messages")
	})

	t.Run("upstream failure", func(t *testing.T) {
		fresh := source.Request{Limit: req.Limit, Now: req.Now, Mark: base.mark}
		tests := []struct {
			name    string
			fault   sim.Mode
			base    string
			timeout time.Duration
			class   string
		}{
			{name: "HTTP 500", fault: sim.ModeError, base: srv.URL, class: source.ClassHTTP5xx},
			{name: "timeout", fault: sim.ModeTimeout, base: srv.URL, timeout: 200 * time.Millisecond, class: source.ClassTimeout},
			{name: "invalid JSON", base: broken.URL, class: source.ClassBadPayload},
			{name: "other status", base: broken.URL + "/404", class: source.ClassHTTPStatus},
			{name: "connection refused", base: "http://127.0.0.1:1", class: source.ClassTransport},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				if tc.fault != "" {
					s.SetFault(src, tc.fault)
					t.Cleanup(func() { s.SetFault(src, sim.ModeOK) })
				}
				timeout := tc.timeout
				if timeout == 0 {
					timeout = 5 * time.Second
				}
				var r pollResult
				require.NotPanics(t, func() { r = runPoll(ctx, poller(tc.base, timeout), fresh, nil) })
				require.Error(t, r.err)
				assert.Equal(t, tc.class, source.ErrorClass(r.err))
				assert.Equal(t, readmodel.UpstreamError, readmodel.ErrorCode(r.err))
				assert.Equal(t, fresh.Mark, r.mark, "a poll that failed at once leaves the mark where it was")
				assert.Empty(t, r.units)
			})
		}
	})

	t.Run("cancelled", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		r := runPoll(cctx, p, req, nil)
		assert.Error(t, r.err, "a poll of a cancelled context")

		// Cancelled while the upstream holds the request.
		s.SetFault(src, sim.ModeTimeout)
		t.Cleanup(func() { s.SetFault(src, sim.ModeOK) })
		ch := make(chan struct{})
		arrived.Store(&ch)
		cctx, cancel = context.WithCancel(ctx)
		defer cancel()
		done := make(chan pollResult, 1)
		go func() { done <- runPoll(cctx, p, req, nil) }() // the client's timeout is 30 s
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatal("the poll never reached the upstream")
		}
		cancel()
		select {
		case r := <-done:
			assert.Error(t, r.err)
		case <-time.After(5 * time.Second):
			t.Fatal("the poll did not return after its context was cancelled")
		}
	})

	t.Run("emit error", func(t *testing.T) {
		stop := errors.New("publish failed")
		r := runPoll(ctx, p, req, stop)
		require.ErrorIs(t, r.err, stop, "Emit's error ends the poll with it")
		assert.Len(t, r.units, 1, "no unit after a failed Emit")
	})
}

// knownReasons are normalize's reject reasons.
var knownReasons = []normalize.RejectReason{normalize.RejectBadJSON, normalize.RejectBadAddress, normalize.RejectBadPrice,
	normalize.RejectUnknownChain, normalize.RejectOversized, normalize.RejectBadField, normalize.RejectExpired,
	normalize.RejectInactive, normalize.RejectUnknownCollect}

// checkUnit checks one unit of a healthy poll of sp: its kind and
// collection against the spec, its build's shape and its rows' normal
// form.
func checkUnit(t *testing.T, sp source.Spec, req source.Request, u builtUnit) {
	t.Helper()
	switch {
	case sp.Append:
		assert.Equal(t, readmodel.KindSales, u.Kind, "appending polls yield sales, and only they do")
		assert.False(t, u.Lazy, "an appended unit is never skipped as unchanged")
	case sp.Collections == source.Lists:
		assert.Equal(t, readmodel.KindCollection, u.Kind, "the list's units are collections")
	default:
		assert.NotEqual(t, readmodel.KindSales, u.Kind, "sales only from appending polls")
	}
	assert.Contains(t, []readmodel.Kind{readmodel.KindCollection, readmodel.KindStats, readmodel.KindAnalytics,
		readmodel.KindListings, readmodel.KindTokens, readmodel.KindRates, readmodel.KindSales}, u.Kind,
		"a data kind (statuses and polls are the cycle's)")
	if sp.Empty != "" {
		assert.Equal(t, sp.Empty, u.Kind, "the empty message stands for a unit of the same kind")
	}
	if sp.Collections == source.Global {
		assert.Empty(t, u.Collection, "a global poll's units belong to no collection")
	} else {
		assert.NotEmpty(t, u.Collection, "unit of kind %s without a collection", u.Kind)
	}
	b := u.built
	if u.size >= 0 {
		assert.GreaterOrEqual(t, u.size, b.Rows, "Size counts every row the unit holds")
	}
	if !sp.Append {
		if len(b.Msgs) > 1 || len(b.Msgs) == 1 && b.Msgs[0].Buckets > 0 {
			for j, m := range b.Msgs {
				assert.Equal(t, uint32(j), m.Bucket, "bucket %d of %s", j, u.id)
				assert.Equal(t, uint32(len(b.Msgs)), m.Buckets, "bucket count of %s", u.id)
			}
		} else {
			assert.Len(t, b.Msgs, 1, "a replacing unit has one message, or one per bucket")
		}
	}
	rows := 0
	for _, m := range b.Msgs {
		require.NotNil(t, m)
		assert.Contains(t, []readmodel.Kind{"", u.Kind}, m.Kind, "the cycle sets the message's kind")
		assert.Contains(t, []readmodel.Source{"", sp.Source}, m.Source, "a message of %s is %s's", u.id, sp.Source)
		assert.Equal(t, []readmodel.Kind{u.Kind}, payloads(m), "exactly the payload of the unit's kind")
		rows += checkRows(t, u, req.Now, m)
	}
	assert.Equal(t, rows, b.Rows, "Built.Rows counts the rows its messages hold")
}

// payloads lists the kinds whose payload m carries (an empty row list
// counts: a collection with no rows now).
func payloads(m *readmodel.Message) []readmodel.Kind {
	var out []readmodel.Kind
	add := func(set bool, k readmodel.Kind) {
		if set {
			out = append(out, k)
		}
	}
	add(m.Collection != nil, readmodel.KindCollection)
	add(m.Stats != nil, readmodel.KindStats)
	add(m.Analytics != nil, readmodel.KindAnalytics)
	add(m.Listings != nil, readmodel.KindListings)
	add(m.Tokens != nil || m.Buckets > 0, readmodel.KindTokens)
	add(m.Rates != nil, readmodel.KindRates)
	add(m.Status != nil, readmodel.KindStatus)
	add(m.Sales != nil, readmodel.KindSales)
	add(m.Polled != nil, readmodel.KindPolled)
	return out
}

// checkRows checks that m's rows are in normalized form and belong to
// the unit's collection; it returns how many rows m holds.
func checkRows(t *testing.T, u builtUnit, now time.Time, m *readmodel.Message) int {
	t.Helper()
	switch {
	case m.Collection != nil:
		d := m.Collection
		fixed(t, normalize.CollectionID, d.ID, "collection id")
		assert.Equal(t, u.id, d.ID, "the unit's collection is the document's")
		if d.Chain != "" {
			assert.True(t, d.Chain.Valid(), "chain %q", d.Chain)
		}
		if d.Chain.Valid() && d.ContractAddress != "" {
			address(t, d.Chain, d.ContractAddress, "collection contract")
		}
		if d.FloorRaw != "" {
			fixed(t, normalize.PriceRaw, d.FloorRaw, "stored floor")
		}
		nonNeg(t, "supply", d.Supply)
		nonNeg(t, "owners", d.Owners)
		return 1
	case m.Stats != nil:
		nonNeg(t, "owners", m.Stats.Owners)
		nonNeg(t, "listedCount", m.Stats.ListedCount)
		nonNeg(t, "indexedCount", m.Stats.IndexedCount)
		return 1
	case m.Analytics != nil:
		a := m.Analytics
		if a.FloorRaw != "" {
			fixed(t, normalize.PriceRaw, a.FloorRaw, "live floor")
		}
		for _, v := range []*float64{a.Volume24h, a.Volume7d, a.VolumeAllTime} {
			if v != nil {
				assert.True(t, *v >= 0 && !math.IsInf(*v, 0), "volume %v", *v)
			}
		}
		nonNeg(t, "sales24h", a.Sales24h)
		nonNeg(t, "sales7d", a.Sales7d)
		nonNeg(t, "salesAllTime", a.SalesAllTime)
		return 1
	case m.Rates != nil:
		for cur, v := range m.Rates {
			assert.NotContains(t, []string{"MATIC", "APE"}, cur, "no feed for Polygon and ApeChain")
			assert.True(t, v > 0 && !math.IsInf(v, 0), "rate %s = %v", cur, v)
		}
		return len(m.Rates)
	case m.Listings != nil:
		for j := range m.Listings {
			listing(t, &m.Listings[j], now)
			assert.Equal(t, u.id, m.Listings[j].CollectionID, "a listing of the unit's collection")
		}
		return len(m.Listings)
	case m.Sales != nil:
		for j := range m.Sales {
			r := &m.Sales[j]
			item(t, r.Chain, r.ContractAddress, r.TokenID, r.Mint, r.CollectionID, r.PriceRaw)
			assert.Equal(t, u.id, r.CollectionID, "a sale of the unit's collection")
			wallet(t, r.Chain, r.Seller, "seller")
			wallet(t, r.Chain, r.Buyer, "buyer")
			fixed(t, normalize.Marketplace, r.Marketplace, "marketplace")
			assert.Equal(t, readmodel.StatusSold, r.Status)
			assert.False(t, r.Timestamp.IsZero(), "a sale has a time")
		}
		return len(m.Sales)
	case m.Tokens != nil || m.Buckets > 0:
		for j := range m.Tokens {
			d := &m.Tokens[j]
			assert.True(t, d.Chain.Valid(), "chain %q", d.Chain)
			address(t, d.Chain, d.ContractAddress, "token contract")
			if d.Chain == readmodel.Solana {
				address(t, d.Chain, d.TokenID, "asset mint")
			} else {
				fixed(t, normalize.TokenID, d.TokenID, "token id")
			}
			assert.Equal(t, u.id, d.CollectionID, "a token of the unit's collection")
			wallet(t, d.Chain, d.OwnerAddress, "owner")
			if d.LastSaleRaw != "" {
				fixed(t, normalize.PriceRaw, d.LastSaleRaw, "last sale")
			}
			if d.Overlay != nil {
				listing(t, d.Overlay, now)
			}
			if m.Buckets > 1 {
				assert.Equal(t, m.Bucket, readmodel.TokenBucket(readmodel.TokenKey(d.Chain, d.ContractAddress, d.TokenID), int(m.Buckets)),
					"token %s in its bucket", d.TokenID)
			}
		}
		return len(m.Tokens)
	}
	return 0
}

// listing checks a listing row's normal form as of now.
func listing(t *testing.T, r *readmodel.ListingRow, now time.Time) {
	t.Helper()
	item(t, r.Chain, r.ContractAddress, r.TokenID, r.Mint, r.CollectionID, r.PriceRaw)
	if r.BuyerTotalRaw != "" {
		fixed(t, normalize.PriceRaw, r.BuyerTotalRaw, "buyer total")
	}
	wallet(t, r.Chain, r.Seller, "seller")
	fixed(t, normalize.Marketplace, r.Marketplace, "marketplace")
	assert.True(t, r.Live(now), "a listing active and unexpired at the poll time: %s %v", r.Status, r.ExpiresAt)
	assert.False(t, r.Timestamp.IsZero(), "a listing has a time")
}

// item checks the identity and price a listing and a sale share.
func item(t *testing.T, c readmodel.Chain, contract, tokenID, mint, coll, price string) {
	t.Helper()
	require.True(t, c.Valid(), "chain %q", c)
	if c == readmodel.Solana {
		address(t, c, mint, "mint")
		assert.Empty(t, contract+tokenID, "a Solana row has a mint only")
	} else {
		address(t, c, contract, "contract")
		fixed(t, normalize.TokenID, tokenID, "token id")
		assert.Empty(t, mint, "an EVM row has no mint")
	}
	fixed(t, normalize.CollectionID, coll, "collection id")
	fixed(t, normalize.PriceRaw, price, "price")
}

// wallet checks an optional wallet address on chain c: normalized, and
// never the escrow wallet (SPEC: the seller is the beneficial owner).
func wallet(t *testing.T, c readmodel.Chain, a, what string) {
	t.Helper()
	if a == "" {
		return
	}
	address(t, c, a, what)
	if what != "owner" { // a token in custody names it; the projector hides it
		assert.NotEqual(t, sim.EscrowWallet, a, "%s is the escrow wallet", what)
	}
}

// address checks that a is a valid address on chain c in its normal form:
// lowercase on EVM chains, byte for byte on Solana.
func address(t *testing.T, c readmodel.Chain, a, what string) {
	t.Helper()
	fixed(t, func(s string) (string, error) { return normalize.Address(c, s) }, a, what)
}

// fixed checks that v is valid and a fixed point of the normalizing rule
// norm: normalized already.
func fixed(t *testing.T, norm func(string) (string, error), v, what string) {
	t.Helper()
	n, err := norm(v)
	if assert.NoError(t, err, "%s %q", what, v) {
		assert.Equal(t, n, v, "%s %q is not in normal form", what, v)
	}
}

func nonNeg(t *testing.T, what string, p *int64) {
	t.Helper()
	if p != nil {
		assert.GreaterOrEqual(t, *p, int64(0), what)
	}
}

// builtUnit is a unit a poll yielded, with its checked collection id and
// its build (as the cycle builds an accepted unit, inside Emit).
type builtUnit struct {
	source.Unit
	id    string
	built source.Built
	size  int // u.Size() as Emit saw it (-1 without Size): a unit is valid only during Emit
}

// pollResult is what one poll handed its sink and returned.
type pollResult struct {
	units   []builtUnit
	rejects map[normalize.RejectReason]int
	rows    int
	mark    string
	err     error
}

// rejected is how many rows the poll rejected, for any reason.
func (r pollResult) rejected() int {
	n := 0
	for _, k := range r.rejects {
		n += k
	}
	return n
}

// summary is the poll's output without what differs between equal
// polls of different bytes (a lazy unit's raw rows, a build's cleanness).
func (r pollResult) summary() []any {
	out := make([]any, 0, len(r.units))
	for _, u := range r.units {
		out = append(out, []any{u.Kind, u.Collection, u.id, u.built.Msgs, u.built.Rows})
	}
	return out
}

// contractSink is the cycle's side of a poll as the seam describes it: it
// checks each unit's collection as a Checked poll's is checked (without
// a list), builds the units it accepts within Emit, counts rejects by
// reason, and fails Emit with failEmit when set. It is not synchronized:
// the race detector reports a poller that calls it from two goroutines.
type contractSink struct {
	spec     source.Spec
	res      *pollResult
	failEmit error
}

func (s *contractSink) Reject(err error, n int) {
	var re *normalize.RejectError
	if !errors.As(err, &re) || n < 1 {
		s.res.rejects["<not a *normalize.RejectError or n < 1>"]++
		return
	}
	s.res.rejects[re.Reason] += n
}

func (s *contractSink) Emit(u source.Unit) error {
	bu := builtUnit{Unit: u}
	switch s.spec.Collections {
	case source.Checked:
		id, err := normalize.CollectionID(u.Collection)
		if err != nil {
			n := 1
			if u.Size != nil {
				n = max(u.Size(), 1)
			}
			s.Reject(err, n)
			return nil
		}
		bu.id = id
	case source.Lists:
		bu.id = u.Collection
	}
	if u.Build == nil {
		s.res.rejects["<unit without Build>"]++
		return nil
	}
	bu.size = -1
	if u.Size != nil {
		bu.size = u.Size()
	}
	bu.built = u.Build(bu.id)
	s.res.rows += bu.built.Rows
	s.res.units = append(s.res.units, bu)
	return s.failEmit
}

// runPoll runs one poll of p with a contractSink; failEmit, when set, is
// what every Emit returns.
func runPoll(ctx context.Context, p Poller, req source.Request, failEmit error) pollResult {
	r := pollResult{rejects: map[normalize.RejectReason]int{}}
	r.mark, r.err = p.Poll(ctx, req, &contractSink{spec: p.Spec(), res: &r, failEmit: failEmit})
	return r
}

// garbageRows serves h's answers with one garbage row more in each
// successful page, counting them in n: a row that is not an object in a
// flat page's items and in the first group's rows of a grouped page, a
// rate that is not a number in the rates. Other values pass byte for
// byte (json.RawMessage), so big integer prices stay exact.
func garbageRows(h http.Handler, n *atomic.Int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		body := rec.Body.Bytes()
		var page map[string]json.RawMessage
		if rec.Code == http.StatusOK && json.Unmarshal(body, &page) == nil {
			if b, ok := withGarbage(page); ok {
				body = b
				n.Add(1)
			}
		}
		for k, v := range rec.Header() {
			if k != "Content-Length" {
				w.Header()[k] = v
			}
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(body)
	})
}

// garbageRow is the row garbageRows adds: a string where an object or a
// number belongs.
const garbageRow = `"garbage"`

// withGarbage adds one garbage row to page, if it knows the page's shape.
func withGarbage(page map[string]json.RawMessage) ([]byte, bool) {
	if raw, ok := page["rates"]; ok {
		var rates map[string]json.RawMessage
		if json.Unmarshal(raw, &rates) != nil {
			return nil, false
		}
		rates["GARBAGE"] = json.RawMessage(garbageRow)
		page["rates"], _ = json.Marshal(rates)
	} else {
		var items []json.RawMessage
		if json.Unmarshal(page["items"], &items) != nil || len(items) == 0 {
			return nil, false
		}
		if g, ok := garbageGroup(items); ok {
			items[g.at], _ = json.Marshal(g.group)
		} else {
			items = append(items, json.RawMessage(garbageRow))
		}
		page["items"], _ = json.Marshal(items)
	}
	b, err := json.Marshal(page)
	return b, err == nil
}

// aGroup is a grouped page's group with one garbage row more, and its
// index in the page's items.
type aGroup struct {
	at    int
	group map[string]json.RawMessage
}

// garbageGroup adds a garbage row to the first group of items whose rows
// are an array (the first group when none is), if items are groups
// (objects with rows).
func garbageGroup(items []json.RawMessage) (aGroup, bool) {
	first := aGroup{at: -1}
	for i, it := range items {
		var g map[string]json.RawMessage
		if json.Unmarshal(it, &g) != nil {
			return aGroup{}, false
		}
		raw, ok := g["rows"]
		if !ok {
			return aGroup{}, false // a flat page's row
		}
		var rows []json.RawMessage
		if json.Unmarshal(raw, &rows) == nil && rows != nil {
			g["rows"], _ = json.Marshal(append(rows, json.RawMessage(garbageRow)))
			return aGroup{at: i, group: g}, true
		}
		if first.at < 0 {
			first = aGroup{at: i, group: g}
		}
	}
	if first.at < 0 {
		return aGroup{}, false
	}
	first.group["rows"] = json.RawMessage("[" + garbageRow + "]")
	return first, true
}

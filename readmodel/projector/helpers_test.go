package projector_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/bus"
	"github.com/marketd/marketd/readmodel/bus/bustest"
	"github.com/marketd/marketd/readmodel/projector"
	"github.com/marketd/marketd/readmodel/render"
	"github.com/marketd/marketd/readmodel/store"
)

var t0 = time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)

// env is one NATS server, one publisher and one node (store + projector)
// driven synchronously with ApplyAvailable and an injected clock.
type env struct {
	t   testing.TB
	js  jetstream.JetStream
	pub *bus.Publisher
	st  *store.Store
	p   *projector.Projector
	now atomic.Pointer[time.Time]
}

func mustEnv(t testing.TB) *env {
	t.Helper()
	e := &env{t: t}
	e.js = bustest.MustConnect(t, bustest.MustStartServer(t), 1)
	e.pub = bus.NewPublisher(e.js)
	e.setNow(t0)
	e.st, e.p = e.mustNode(t.TempDir())
	return e
}

func (e *env) setNow(t time.Time) { e.now.Store(&t) }

func (e *env) opts() projector.Options {
	return projector.Options{Now: func() time.Time { return *e.now.Load() }, RowRetention: 10 * time.Minute}
}

// mustNode opens a store in dir and a projector on it; both close at cleanup.
func (e *env) mustNode(dir string) (*store.Store, *projector.Projector) {
	e.t.Helper()
	st := mustStoreAt(e.t, dir, e.opts().Now)
	return st, projector.New(e.js, st, e.opts(), zerolog.Nop())
}

func mustStore(t testing.TB, dir string) *store.Store { return mustStoreAt(t, dir, nil) }

// mustStoreAt opens a store in dir whose token views are rendered as of
// now (nil: the wall clock); it closes at cleanup.
func mustStoreAt(t testing.TB, dir string, now func() time.Time) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), dir, store.Options{MemTableSize: 16 << 20, Now: now})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close(context.Background()) })
	return st
}

var msgSeq atomic.Int64

func (e *env) publish(msgs ...*readmodel.Message) readmodel.Position {
	e.t.Helper()
	ctx := context.Background()
	for _, m := range msgs {
		if m.ID == "" {
			m.ID = fmt.Sprintf("test/%d", msgSeq.Add(1))
		}
		if m.ObservedAt.IsZero() {
			m.ObservedAt = *e.now.Load()
		}
		require.NoError(e.t, e.pub.Publish(ctx, m))
	}
	pos, err := e.pub.Flush(ctx)
	require.NoError(e.t, err)
	return pos
}

func (e *env) apply() int {
	e.t.Helper()
	n, err := e.p.ApplyAvailable(context.Background())
	require.NoError(e.t, err)
	return n
}

// run publishes msgs and applies them.
func (e *env) run(msgs ...*readmodel.Message) {
	e.t.Helper()
	e.publish(msgs...)
	e.apply()
}

// jsonMap decodes a prepared body with its USD slots filled as null (no
// quote); jsonMapQ fills them from q.
func jsonMap(t testing.TB, b []byte) map[string]any {
	t.Helper()
	return jsonMapQ(t, b, nil)
}

func jsonMapQ(t testing.TB, b []byte, q *render.USDQuote) map[string]any {
	t.Helper()
	var m map[string]any
	b = render.AppendUSD(nil, b, q)
	require.NoError(t, json.Unmarshal(b, &m), "%s", b)
	return m
}

func timed(t testing.TB, b render.TimedBody, now time.Time) map[string]any {
	t.Helper()
	out := append([]byte(nil), b.Head...)
	if b.Timed {
		out = append(out, readmodel.FormatTime(now)...)
		out = append(out, b.Tail...)
	}
	return jsonMap(t, out)
}

// --- message builders -----------------------------------------------------

func i64(v int64) *int64        { return &v }
func f64(v float64) *float64    { return &v }
func tp(t time.Time) *time.Time { return &t }

func docMsg(d readmodel.CollectionDoc) *readmodel.Message {
	return &readmodel.Message{Kind: readmodel.KindCollection, Source: readmodel.SourceCollectionIndex, CollectionID: d.ID, Collection: &d}
}

func evmDoc(id string, c readmodel.Chain, contract string) readmodel.CollectionDoc {
	return readmodel.CollectionDoc{ID: id, Chain: c, ContractAddress: contract, Name: "Name " + id, Slug: "slug-" + id, RoyaltyBps: i64(500)}
}

func listingsMsg(src readmodel.Source, cid string, rows ...readmodel.ListingRow) *readmodel.Message {
	if rows == nil {
		rows = []readmodel.ListingRow{}
	}
	return &readmodel.Message{Kind: readmodel.KindListings, Source: src, CollectionID: cid, Listings: rows}
}

func statusMsg(src readmodel.Source, cid string, ok bool, lastGood time.Time) *readmodel.Message {
	st := readmodel.PollStatus{OK: ok, LastGoodAt: lastGood}
	if !ok {
		st.ErrorClass = "http_5xx"
		st.FailingSince = lastGood.Add(time.Minute)
	}
	return &readmodel.Message{Kind: readmodel.KindStatus, Source: src, CollectionID: cid, Status: &st}
}

func ratesMsg(r readmodel.USDRates) *readmodel.Message {
	return &readmodel.Message{Kind: readmodel.KindRates, Source: readmodel.SourcePriceFeed, Rates: r}
}

// evmRow is an active EVM listing.
func evmRow(cid, contract, token, raw, market, order string) readmodel.ListingRow {
	return readmodel.ListingRow{Chain: readmodel.Ethereum, ContractAddress: contract, TokenID: token, CollectionID: cid,
		PriceRaw: raw, Seller: "0xseller" + token, Marketplace: market, Status: readmodel.StatusActive, Timestamp: t0.Add(-time.Hour), OrderID: order}
}

func solRow(cid, mint, raw, market, order string) readmodel.ListingRow {
	return readmodel.ListingRow{Chain: readmodel.Solana, Mint: mint, CollectionID: cid, PriceRaw: raw, Seller: "Seller" + mint,
		Marketplace: market, Status: readmodel.StatusActive, Timestamp: t0.Add(-time.Hour), OrderID: order, Tx: "sig" + mint}
}

func orderIDs(t testing.TB, v render.ListingsView) []string {
	t.Helper()
	var out []string
	for _, it := range v.Items {
		m := jsonMap(t, it)
		id, _ := m["orderId"].(string)
		out = append(out, id)
	}
	return out
}

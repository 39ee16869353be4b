package projector

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/store"
)

// TestOrderBookWritesNoTokenRecord: an order-book change rewrites no
// token record (a token's view reads its native listing from the book
// when rendered), yet every token's view shows the new book at once:
// repriced, gone, new, and a non-native row ignored.
func TestOrderBookWritesNoTokenRecord(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)
	cid := "ethereum_0xc0"
	row := func(token, raw, market, order string) readmodel.ListingRow {
		return readmodel.ListingRow{Chain: readmodel.Ethereum, ContractAddress: "0xc0", TokenID: token, CollectionID: cid,
			PriceRaw: raw, Seller: "0xs" + token, Marketplace: market, Status: readmodel.StatusActive, Timestamp: t0.Add(-time.Hour), OrderID: order}
	}
	book := func(seq uint64, rows ...readmodel.ListingRow) *readmodel.Message {
		return &readmodel.Message{Kind: readmodel.KindListings, Source: readmodel.SourceOrderBook, CollectionID: cid,
			ObservedAt: t0.Add(time.Duration(seq) * time.Minute), Listings: rows}
	}
	var docs []readmodel.TokenDoc
	for _, id := range []string{"1", "2", "3", "4"} {
		docs = append(docs, readmodel.TokenDoc{Chain: readmodel.Ethereum, ContractAddress: "0xc0", TokenID: id, CollectionID: cid, OwnerAddress: "0xs" + id})
	}
	st, err := store.Open(ctx, t.TempDir(), store.Options{Now: func() time.Time { return t0.Add(10 * time.Minute) }})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close(ctx) })
	applyDeferred(t, st, 1, book(1, row("1", "100", "NATIVE", "a1"), row("2", "200", "NATIVE", "a2"), row("3", "300", "opensea", "x3")))
	_, rendered := applyDeferred(t, st, 2, &readmodel.Message{Kind: readmodel.KindTokens, CollectionID: cid, Bucket: 0, Buckets: 1, ObservedAt: t0, Tokens: docs})
	require.Len(t, rendered, len(docs))
	orderID := regexp.MustCompile(`"orderId":"([^"]*)"`) // only a listing has one
	listed := func(id string) string {
		v, err := st.Token(ctx, readmodel.Ethereum, "0xc0", id)
		require.NoError(t, err)
		if m := orderID.FindSubmatch(append(append([]byte(nil), v.Body.Head...), v.Body.Tail...)); m != nil {
			return string(m[1])
		}
		return ""
	}
	for id, want := range map[string]string{"1": "a1", "2": "a2", "3": "", "4": ""} {
		assert.Equal(t, want, listed(id), "token %s before", id)
	}
	before := st.TokensVersion()
	_, rendered = applyDeferred(t, st, 3, book(3, row("1", "150", "NATIVE", "b1"), row("4", "400", "NATIVE", "a4"), row("3", "300", "opensea", "x3")))
	assert.Empty(t, rendered, "no token record written")
	assert.NotEqual(t, before, st.TokensVersion(), "the tokens' views may have changed")
	for id, want := range map[string]string{"1": "b1", "2": "", "3": "", "4": "a4"} {
		assert.Equal(t, want, listed(id), "token %s after", id)
	}
}

// mustStore opens a store in a temporary directory, closed with the test.
func mustStore(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), t.TempDir(), store.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close(context.Background()) })
	return st
}

// applyDeferred applies msg (state sequence seq) in one transaction the
// way a batch does, and returns what it marked for rendering: collections
// and token keys, sorted.
func applyDeferred(t *testing.T, st *store.Store, seq uint64, msg *readmodel.Message) (collections, tokens []string) {
	t.Helper()
	require.NoError(t, st.Update(context.Background(), func(tx *store.Tx) error {
		a := &applier{tx: tx, now: msg.ObservedAt, seq: seq}
		if err := applyOne(a, msg); err != nil {
			return err
		}
		if a.coll != nil {
			collections = a.coll.ids()
		}
		if err := a.indexTokens(); err != nil {
			return err
		}
		for k := range a.dirtyTok {
			tokens = append(tokens, k)
		}
		return a.finish()
	}))
	sort.Strings(collections)
	sort.Strings(tokens)
	return collections, tokens
}

// TestBucketInOneTransaction: the messages of a batch are applied in one
// transaction, and the token records they write reach the token blocks
// only at its flush; a later message of the same bucket still deletes
// the tokens an earlier one wrote and it no longer lists (and only its
// collection's).
func TestBucketInOneTransaction(t *testing.T) {
	t0 := time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)
	bucket := func(cid string, b, n uint32, ids ...string) *readmodel.Message {
		var docs []readmodel.TokenDoc
		for _, id := range ids {
			docs = append(docs, readmodel.TokenDoc{Chain: readmodel.Ethereum, ContractAddress: "0xc0", TokenID: id, CollectionID: cid, OwnerAddress: "0xa"})
		}
		return &readmodel.Message{Kind: readmodel.KindTokens, CollectionID: cid, Bucket: b, Buckets: n, ObservedAt: t0, Tokens: docs}
	}
	const c, other = "ethereum_0xc0", "ethereum_other"
	tests := []struct {
		name string
		msgs []*readmodel.Message
		live []string
		gone []string
	}{
		{name: "dropped by the next message of its bucket",
			msgs: []*readmodel.Message{bucket(c, 0, 1, "1", "2"), bucket(c, 0, 1, "1")},
			live: []string{"1"}, gone: []string{"2"}},
		{name: "its bucket emptied",
			msgs: []*readmodel.Message{bucket(c, 0, 1, "1", "2"), bucket(c, 0, 1)},
			gone: []string{"1", "2"}},
		{name: "moved to a new bucket, then dropped by its old one",
			msgs: []*readmodel.Message{bucket(c, 0, 1, "1", "2"), bucket(c, 1, 2, "2"), bucket(c, 0, 2, "1")},
			live: []string{"1", "2"}},
		{name: "another collection's tokens at the address stay",
			msgs: []*readmodel.Message{bucket(c, 0, 1, "1", "2"), bucket(other, 0, 1, "10"), bucket(c, 0, 1, "1")},
			live: []string{"1", "10"}, gone: []string{"2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := mustStore(t)
			require.NoError(t, st.Update(context.Background(), func(tx *store.Tx) error {
				a := &applier{tx: tx, now: t0, seq: 1}
				for _, m := range tt.msgs {
					if err := applyOne(a, m); err != nil {
						return err
					}
				}
				return a.finish()
			}))
			for _, id := range tt.live {
				_, err := st.Token(context.Background(), readmodel.Ethereum, "0xc0", id)
				assert.NoError(t, err, "token %s", id)
			}
			for _, id := range tt.gone {
				_, err := st.Token(context.Background(), readmodel.Ethereum, "0xc0", id)
				assert.Equal(t, readmodel.NotFound, readmodel.ErrorCode(err), "token %s", id)
			}
		})
	}
}

// TestUnchangedTokenDocsAreNotRendered: a bucket is republished whenever
// one of its tokens changed; only tokens whose document changed are
// rendered again (the tokens' records decide, with a bucket count or
// without one).
func TestUnchangedTokenDocsAreNotRendered(t *testing.T) {
	for _, buckets := range []uint32{0, 1} {
		t.Run(fmt.Sprintf("bucket count %d", buckets), func(t *testing.T) {
			st := mustStore(t)
			t0 := time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)
			doc := func(id, owner string) readmodel.TokenDoc {
				return readmodel.TokenDoc{Chain: readmodel.Ethereum, ContractAddress: "0xc0", TokenID: id, CollectionID: "ethereum_0xc0", OwnerAddress: owner}
			}
			bucket := func(at time.Time, docs ...readmodel.TokenDoc) *readmodel.Message {
				return &readmodel.Message{Kind: readmodel.KindTokens, CollectionID: "ethereum_0xc0", Bucket: 1, Buckets: buckets, ObservedAt: at, Tokens: docs}
			}
			key := func(id string) string { return readmodel.TokenKey(readmodel.Ethereum, "0xc0", id) }
			tests := []struct {
				name string
				msg  *readmodel.Message
				want []string
			}{
				{"first bucket: every token", bucket(t0, doc("1", "0xa"), doc("2", "0xb"), doc("3", "0xc")), []string{key("1"), key("2"), key("3")}},
				{"republished, one owner changed", bucket(t0.Add(2*time.Minute), doc("1", "0xa"), doc("2", "0xz"), doc("3", "0xc")), []string{key("2")}},
				{"republished unchanged", bucket(t0.Add(4*time.Minute), doc("1", "0xa"), doc("2", "0xz"), doc("3", "0xc")), nil},
				{"token 3 dropped", bucket(t0.Add(6*time.Minute), doc("1", "0xa"), doc("2", "0xz")), nil},
				{"token 3 re-added: rendered again", bucket(t0.Add(8*time.Minute), doc("1", "0xa"), doc("2", "0xz"), doc("3", "0xc")), []string{key("3")}},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					_, rendered := applyDeferred(t, st, 0, tt.msg)
					assert.Equal(t, tt.want, rendered)
				})
			}
			_, err := st.Token(context.Background(), readmodel.Ethereum, "0xc0", "3")
			assert.NoError(t, err, "the re-added token has a view")
		})
	}
}

// TestHealthyStatusRendersNothing: a per-collection OK status that follows
// an OK (or no) status changes no view, so it renders nothing; a failure
// and the recovery after it re-render the collection.
func TestHealthyStatusRendersNothing(t *testing.T) {
	st := mustStore(t)
	t0 := time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)
	seq := uint64(0)
	status := func(src readmodel.Source, cid string, ok bool) []string {
		seq++
		msg := &readmodel.Message{Kind: readmodel.KindStatus, Source: src, CollectionID: cid, ObservedAt: t0,
			Status: &readmodel.PollStatus{OK: ok, LastGoodAt: t0}}
		rendered, _ := applyDeferred(t, st, seq, msg)
		return rendered
	}
	ob, stats := readmodel.SourceOrderBook, readmodel.SourceIndexerStats
	tests := []struct {
		name   string
		src    readmodel.Source
		cid    string
		ok     bool
		render bool
	}{
		{"first status, healthy", ob, "c1", true, false},
		{"healthy again", ob, "c1", true, false},
		{"failed", ob, "c1", false, true},
		{"recovered", ob, "c1", true, true},
		{"healthy after recovery", ob, "c1", true, false},
		{"another source, healthy", stats, "c1", true, false},
		{"source-wide failure", stats, "", false, false}, // queues a re-render job instead
		{"healthy per collection after a source-wide failure", stats, "c1", true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := status(tt.src, tt.cid, tt.ok)
			if tt.render {
				assert.Equal(t, []string{tt.cid}, got)
			} else {
				assert.Empty(t, got)
			}
		})
	}
}

// TestTokenViewsWrittenTogetherMatchOneByOne: a flush writes the token
// records a batch marked once each, after the batch's order book; every
// view they render is the one writing the tokens one by one renders.
// Half the tokens have a native listing, so views differ.
func TestTokenViewsWrittenTogetherMatchOneByOne(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)
	const n = 300
	cid := "ethereum_0xc0"
	var docs []readmodel.TokenDoc
	var rows []readmodel.ListingRow
	for i := range n {
		id := strconv.Itoa(i)
		docs = append(docs, readmodel.TokenDoc{Chain: readmodel.Ethereum, ContractAddress: "0xc0", TokenID: id, CollectionID: cid,
			Name: "Token #" + id, OwnerAddress: "0xo" + id})
		if i%2 == 0 {
			exp := t0.Add(time.Duration(i+1) * time.Minute)
			rows = append(rows, readmodel.ListingRow{Chain: readmodel.Ethereum, ContractAddress: "0xc0", TokenID: id, CollectionID: cid,
				PriceRaw: strconv.Itoa(1000 + i), Seller: "0xo" + id, Marketplace: "NATIVE", Status: readmodel.StatusActive,
				Timestamp: t0.Add(-time.Hour), OrderID: "o" + id, ExpiresAt: &exp})
		}
	}
	book := &readmodel.Message{Kind: readmodel.KindListings, Source: readmodel.SourceOrderBook, CollectionID: cid, ObservedAt: t0, Listings: rows}
	together, alone := mustStore(t), mustStore(t)
	// Together: the book and one bucket of every token, one deferred flush.
	applyDeferred(t, together, 1, book)
	_, rendered := applyDeferred(t, together, 2, &readmodel.Message{Kind: readmodel.KindTokens, CollectionID: cid, Bucket: 1, Buckets: 1, ObservedAt: t0, Tokens: docs})
	require.Len(t, rendered, n)
	// Alone: the same messages, each token view rendered as it comes.
	require.NoError(t, alone.Update(ctx, func(tx *store.Tx) error {
		a := &applier{tx: tx, now: t0, seq: 1}
		if err := applyOne(a, book); err != nil {
			return err
		}
		if err := a.finish(); err != nil {
			return err
		}
		a.seq = 2
		if err := applyOne(a, &readmodel.Message{Kind: readmodel.KindTokens, CollectionID: cid, Bucket: 1, Buckets: 1, ObservedAt: t0, Tokens: docs}); err != nil {
			return err
		}
		return a.finish()
	}))
	for _, d := range docs {
		got, err := together.Token(ctx, readmodel.Ethereum, "0xc0", d.TokenID)
		require.NoError(t, err)
		want, err := alone.Token(ctx, readmodel.Ethereum, "0xc0", d.TokenID)
		require.NoError(t, err)
		assert.Equal(t, want.Body, got.Body, "token %s", d.TokenID)
	}
}

// TestStalledPast: the watchdog recreates a consumer only for a head it
// saw at the previous check and still has not applied, never for a
// message published since (it may still be on its way) nor for a head
// the stream no longer has.
func TestStalledPast(t *testing.T) {
	tests := []struct {
		name                string
		prev, head, applied uint64
		want                bool
	}{
		{"first check of an idle spell", 0, 120, 100, false},
		{"published since the last check, not yet delivered", 100, 120, 100, false},
		{"the head seen last time still not applied", 120, 120, 100, true},
		{"more published since, the old head still not applied", 110, 130, 100, true},
		{"caught up since", 120, 120, 120, false},
		{"the stream lost its tail since", 120, 90, 100, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, stalledPast(tt.prev, tt.head, tt.applied))
		})
	}
}

// TestApplyRendersNothing: applying a message changes its collection's
// state and marks what it makes stale; the views appear only when the
// batch finishes (finish), so a batch renders each collection once.
func TestApplyRendersNothing(t *testing.T) {
	ctx := context.Background()
	st := mustStore(t)
	cid := "ethereum_0xc0"
	doc := &readmodel.Message{Kind: readmodel.KindCollection, Source: readmodel.SourceCollectionIndex, CollectionID: cid,
		ObservedAt: time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC),
		Collection: &readmodel.CollectionDoc{ID: cid, Chain: readmodel.Ethereum, ContractAddress: "0xc0", Name: "c0"}}
	var marked []string
	require.NoError(t, st.Update(ctx, func(tx *store.Tx) error {
		a := &applier{tx: tx, now: doc.ObservedAt, seq: 1}
		if err := applyOne(a, doc); err != nil {
			return err
		}
		marked = a.coll.ids()
		return a.save()
	}))
	assert.Equal(t, []string{cid}, marked)
	_, err := st.Collection(ctx, cid)
	assert.Equal(t, readmodel.NotFound, readmodel.ErrorCode(err), "no view before the batch finishes")
	id, err := st.ResolveCollection(ctx, "0xc0")
	assert.Equal(t, cid, id, "the aliases are saved with the state")
	require.NoError(t, err)

	require.NoError(t, st.Update(ctx, func(tx *store.Tx) error {
		a := &applier{tx: tx, now: doc.ObservedAt, seq: 1}
		if err := applyOne(a, doc); err != nil {
			return err
		}
		return a.finish()
	}))
	v, err := st.Collection(ctx, cid)
	require.NoError(t, err)
	assert.Equal(t, cid, v.ID, "rendered at finish")
}

// applyOne loads what msg needs and applies it, as a batch does.
func applyOne(a *applier, msg *readmodel.Message) error {
	if err := a.load(msg); err != nil {
		return err
	}
	return a.apply(msg)
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math/big"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/client"
	"github.com/marketd/marketd/httpapi"
	"github.com/marketd/marketd/ingest/sim"
	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/wire"
)

// apiRecorder is the transport of a client under test: it checks every
// answer against the OpenAPI document and records which documented paths
// answered 200, so a test can tell that it reached each of them.
type apiRecorder struct {
	tb       testing.TB
	patterns map[string]*regexp.Regexp // documented path → its pattern
	mu       sync.Mutex
	answered map[string]bool
}

func newAPIRecorder(tb testing.TB) *apiRecorder {
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	require.NoError(tb, json.Unmarshal(httpapi.OpenAPIDocument, &doc))
	r := &apiRecorder{tb: tb, patterns: map[string]*regexp.Regexp{}, answered: map[string]bool{}}
	param := regexp.MustCompile(`\\\{[^/]+\\\}`)
	for p, ops := range doc.Paths {
		if _, ok := ops["get"]; ok {
			r.patterns[p] = regexp.MustCompile("^" + param.ReplaceAllString(regexp.QuoteMeta(p), "[^/]+") + "$")
		}
	}
	return r
}

// RoundTrip sends req, validates a GET answer against the document and
// notes the documented path a 200 answered.
func (r *apiRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		return nil, err
	}
	res.Body = io.NopCloser(bytes.NewReader(body))
	validateAgainstOpenAPI(r.tb, req, res, body)
	if res.StatusCode == http.StatusOK {
		r.mu.Lock()
		for p, re := range r.patterns {
			if re.MatchString(req.URL.EscapedPath()) {
				r.answered[p] = true
			}
		}
		r.mu.Unlock()
	}
	return res, nil
}

// documented returns every documented GET path, sorted.
func (r *apiRecorder) documented() []string {
	var out []string
	for p := range r.patterns {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// unanswered returns the documented paths no call got a 200 from.
func (r *apiRecorder) unanswered() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, p := range r.documented() {
		if !r.answered[p] {
			out = append(out, p)
		}
	}
	return out
}

// assertTime checks an RFC 3339 time as the API writes it.
func assertTime(t *testing.T, s *string, what string) {
	t.Helper()
	if assert.NotNil(t, s, "%s is known", what) {
		_, err := time.Parse(time.RFC3339, *s)
		assert.NoError(t, err, "%s %q", what, *s)
	}
}

// assertListingItem checks a listing row's fees: the fee table's kinds,
// and a buyerPrice, when known, that is the ask plus every fee.
func assertListingItem(t *testing.T, li client.ListingItem, royaltyKnown bool) {
	t.Helper()
	require.Len(t, li.Fees, 2, "fees of %v", li.OrderID)
	first := wire.FeeAggregator
	if li.Marketplace == readmodel.MarketplaceNative {
		first = wire.FeePlatform
	}
	assert.Equal(t, first, li.Fees[0].Kind)
	assert.Equal(t, wire.FeeRoyalty, li.Fees[1].Kind)
	if !royaltyKnown {
		assert.Nil(t, li.Fees[1].Bps, "unknown royalty: bps null")
		assert.Nil(t, li.BuyerPrice, "unknown royalty: buyerPrice null, never a guess")
		return
	}
	require.NotNil(t, li.BuyerPrice)
	sum, ok := new(big.Int).SetString(li.Price.Raw, 10)
	require.True(t, ok)
	for _, f := range li.Fees {
		require.NotNil(t, f.Amount, "%s amount", f.Kind)
		a, ok := new(big.Int).SetString(f.Amount.Raw, 10)
		require.True(t, ok)
		sum.Add(sum, a)
	}
	assert.Equal(t, sum.String(), li.BuyerPrice.Raw, "buyerPrice is the ask plus its fees")
}

// TestGoClientAgainstNode drives the client package users import against
// a real node, strictly (a field the client's types lack fails the call):
// every endpoint the OpenAPI document describes, each answer checked
// against the document and its decoded values asserted; cursor walks with
// SPEC's dedupe (the change feed's too, resumed from its head); 404 and
// 400 typed; and 502 (every listing source failed) as ErrUnknown.
func TestGoClientAgainstNode(t *testing.T) {
	e := newAPIEnv(t)
	rec := newAPIRecorder(t)
	c := client.New(e.API, client.WithHTTPClient(&http.Client{Transport: rec, Timeout: 30 * time.Second}), client.WithStrictDecoding())
	ctx := context.Background()
	many := e.id(t, sim.EdgeManyListings)
	dual := e.id(t, sim.EdgeDualListed)
	e.cycle(t) // one more cycle, applied: token views of every bucket are in

	idx, err := c.Index(ctx)
	require.NoError(t, err)
	assert.Equal(t, "marketd", idx.Name)
	assert.Equal(t, httpapi.APIVersion, idx.Version)
	assert.Equal(t, "/v1/docs", idx.Documentation)
	var listed []string
	for _, ep := range idx.Endpoints {
		assert.Equal(t, http.MethodGet, ep.Method)
		assert.NotEmpty(t, ep.Description, ep.Path)
		listed = append(listed, ep.Path)
	}
	sort.Strings(listed)
	assert.Equal(t, rec.documented(), listed, "the index lists every documented path")
	doc, err := c.OpenAPI(ctx)
	require.NoError(t, err)
	assert.JSONEq(t, string(httpapi.OpenAPIDocument), string(doc))

	// Collections: every one once across pages of 7.
	var summaries []client.CollectionSummary
	for s, err := range c.AllCollections(ctx, client.CollectionsQuery{Sort: readmodel.SortVolume, PageQuery: client.PageQuery{Limit: 7}}) {
		require.NoError(t, err)
		summaries = append(summaries, s)
	}
	require.Len(t, summaries, 40, "every collection once across pages of 7")
	var sol *client.CollectionSummary // a Solana collection: its mint is contractAddress, case kept
	floors := 0
	for i, s := range summaries {
		assert.NotEmpty(t, s.Name, s.ID)
		if s.Stats.Floor != nil {
			floors++
		}
		if s.Chain != nil && *s.Chain == readmodel.Solana && s.ContractAddress != nil && sol == nil {
			sol = &summaries[i]
		}
	}
	assert.Greater(t, floors, 20, "summaries carry floors")
	require.NotNil(t, sol, "a Solana collection")
	assert.Equal(t, readmodel.CollectionIDFor(readmodel.Solana, *sol.ContractAddress), sol.ID, "the id lowercases the case-kept mint")

	detail, err := c.Collection(ctx, many)
	require.NoError(t, err)
	assert.Equal(t, many, detail.ID)
	require.NotNil(t, detail.Chain)
	require.NotNil(t, detail.ContractAddress)
	assert.NotNil(t, detail.Stats.Floor)
	assert.NotNil(t, detail.Stats.Volume.AllTime, "analytics answered")
	assert.NotNil(t, detail.Stats.Sales.AllTime)
	assertTime(t, detail.Stats.AsOf, "stats.asOf")
	assert.False(t, detail.Stale)

	// Listings: a page with its snapshot, then the whole snapshot walked.
	page, err := c.Listings(ctx, many, client.PageQuery{Limit: 100})
	require.NoError(t, err)
	assert.Nil(t, page.Meta, "healthy")
	require.NotEmpty(t, page.Data)
	assertTime(t, page.Snapshot.AsOf, "snapshot.asOf")
	var listings []client.ListingItem
	for it, err := range c.AllListings(ctx, many, 40) {
		require.NoError(t, err)
		listings = append(listings, it)
	}
	require.Greater(t, len(listings), 40, "more than one page walked")
	seen := map[string]bool{}
	for _, it := range listings {
		k := client.ListingKey(it.MarketItem)
		assert.False(t, seen[k], "orderId %s yielded once", k)
		seen[k] = true
		assert.Equal(t, many, it.CollectionID)
		assertListingItem(t, it, detail.RoyaltyBps != nil)
	}
	assert.Equal(t, page.Snapshot.ListedCount > readmodel.ListingsCeiling, page.Snapshot.Truncated)
	if !page.Snapshot.Truncated {
		assert.Equal(t, int64(len(listings)), page.Snapshot.ListedCount, "an untruncated snapshot is walked whole")
	}

	floor, err := c.Floor(ctx, many)
	require.NoError(t, err)
	assert.Equal(t, many, floor.CollectionID)
	assert.True(t, floor.Aggregated)
	assert.False(t, floor.Stale)
	assert.NotNil(t, floor.AskFloor)
	require.NotNil(t, floor.BuyerFloor)
	assertTime(t, &floor.UpdatedAt, "updatedAt")
	assertTime(t, floor.AsOf, "floor asOf")
	require.Len(t, floor.Fees, 2, "the floor's listing's fees")
	assert.Equal(t, listings[0].Fees[0].Amount, floor.Fees[0].Amount, "the floor's row is the cheapest listing")
	assert.Equal(t, listings[0].BuyerPrice, floor.BuyerPrice)

	// The floor history holds what the floor showed: its latest observed
	// close is the askFloor the floor endpoint serves.
	hist, err := c.FloorHistory(ctx, many, client.FloorHistoryQuery{})
	require.NoError(t, err)
	assert.Equal(t, "1h", hist.Interval)
	require.Len(t, hist.Points, 168, "a week of hours by default")
	var last *readmodel.Price
	for _, p := range hist.Points {
		if p.Close != nil {
			last = p.Close
		}
	}
	require.NotNil(t, last, "the floor was observed")
	assert.Equal(t, floor.AskFloor.Raw, last.Raw)
	_, err = c.FloorHistory(ctx, many, client.FloorHistoryQuery{Interval: "1d", From: time.Now().AddDate(-1, 0, 0)})
	assert.ErrorIs(t, err, client.ErrBadRequest, "a year of days is more than kept")
	// Sweep: the first rows of the listings feed (the same snapshot: the
	// market has not moved since the walk), and their exact sums.
	sw, err := c.Sweep(ctx, many, 5)
	require.NoError(t, err)
	assert.Equal(t, many, sw.Data.CollectionID)
	assert.Equal(t, 5, sw.Data.Count)
	require.Len(t, sw.Data.Items, min(5, len(listings)))
	asks, buyer := new(big.Int), new(big.Int)
	for i, it := range sw.Data.Items {
		assert.Equal(t, listings[i], it, "row %d is the listings feed's", i)
		assertListingItem(t, it, detail.RoyaltyBps != nil)
		addRaw(t, asks, &it.Price)
		addRaw(t, buyer, it.BuyerPrice)
	}
	assert.Equal(t, asks.String(), sw.Data.Totals.Asks.Raw)
	assert.Equal(t, page.Snapshot.ListedCount, sw.Snapshot.ListedCount)
	if detail.RoyaltyBps != nil {
		require.NotNil(t, sw.Data.Totals.BuyerPrice)
		assert.Equal(t, buyer.String(), sw.Data.Totals.BuyerPrice.Raw)
	} else {
		assert.Nil(t, sw.Data.Totals.BuyerPrice, "an unknown royalty: no total")
	}
	_, err = c.Sweep(ctx, many, 51)
	assert.ErrorIs(t, err, client.ErrBadRequest)
	_, err = c.Sweep(ctx, "no-such-collection", 0)
	assert.ErrorIs(t, err, client.ErrNotFound)

	// Status: every source healthy, the views applied the cycles.
	st, err := c.Status(ctx)
	require.NoError(t, err)
	assert.True(t, st.Node.Ready)
	assert.Positive(t, st.Node.Applied.State)
	require.Len(t, st.Sources, len(readmodel.Sources))
	for _, src := range st.Sources {
		assert.True(t, src.Healthy, src.Source)
		assert.Zero(t, src.FailingCollections, src.Source)
		assertTime(t, src.LastSuccess, string(src.Source)+" lastSuccess")
	}

	var sales []readmodel.MarketItem
	saleKeys := map[string]bool{}
	for s, err := range c.AllSales(ctx, many, 50) {
		require.NoError(t, err)
		assert.Equal(t, many, s.CollectionID)
		k := client.SaleKey(s)
		assert.False(t, saleKeys[k], "sale %q yielded once", k)
		saleKeys[k] = true
		sales = append(sales, s)
	}
	assert.NotEmpty(t, sales)

	// The change feed: walked, filtered, and resumed from its head.
	var events []client.Event
	types := map[string]int{}
	for ev, err := range c.AllEvents(ctx, many, client.EventsQuery{PageQuery: client.PageQuery{Limit: 50}}) {
		require.NoError(t, err)
		assert.Equal(t, many, ev.CollectionID)
		assert.Contains(t, []string{wire.EventListingAdded, wire.EventListingRemoved, wire.EventPriceChanged, wire.EventFloorChanged, wire.EventSale}, ev.Type)
		assertTime(t, &ev.ObservedAt, "observedAt")
		events = append(events, ev)
		types[ev.Type]++
	}
	require.NotEmpty(t, events)
	assert.Positive(t, types[wire.EventListingAdded], "the listings arrived as events")
	// Paged by hand: the same events, and a cursor on every page.
	pageAll := func(id string, limit int) (ids []string, head string) {
		q := client.EventsQuery{PageQuery: client.PageQuery{Limit: limit}}
		for {
			p, err := c.Events(ctx, id, q)
			require.NoError(t, err)
			for _, ev := range p.Data {
				ids = append(ids, ev.EventID)
			}
			require.NotNil(t, p.Pagination.NextCursor, "every page, the head too, has a cursor")
			if !p.Pagination.HasMore {
				return ids, *p.Pagination.NextCursor
			}
			q.Cursor = *p.Pagination.NextCursor
		}
	}
	paged, _ := pageAll(many, 17)
	walked := make([]string, len(events))
	for i, ev := range events {
		walked[i] = ev.EventID
	}
	assert.Equal(t, paged, walked, "the walk is the pages, in order")
	sold := 0
	for ev, err := range c.AllEvents(ctx, many, client.EventsQuery{Types: []string{wire.EventSale}}) {
		require.NoError(t, err)
		assert.Equal(t, wire.EventSale, ev.Type)
		assert.NotNil(t, ev.Sale)
		sold++
	}
	assert.Equal(t, types[wire.EventSale], sold)
	// Resumed from its head after the market moved (this collection's
	// listings change every tick): only new events.
	lag := e.id(t, sim.EdgeMirrorLag)
	before, head := pageAll(lag, 100)
	e.tick(t)
	e.cycle(t)
	known := map[string]bool{}
	for _, id := range before {
		known[id] = true
	}
	resumed := 0
	for ev, err := range c.AllEvents(ctx, lag, client.EventsQuery{PageQuery: client.PageQuery{Cursor: head}}) {
		require.NoError(t, err)
		assert.Equal(t, lag, ev.CollectionID)
		assert.False(t, known[ev.EventID], "resumed at the head: %s is new", ev.EventID)
		resumed++
	}
	assert.Positive(t, resumed, "the tick's changes are in the feed")

	// The market's feed, filtered to one collection, is that collection's
	// feed; a chain filter keeps that chain's collections.
	var market []string
	for ev, err := range c.AllMarketEvents(ctx, client.MarketEventsQuery{Collections: []string{lag}, EventsQuery: client.EventsQuery{PageQuery: client.PageQuery{Limit: 30}}}) {
		require.NoError(t, err)
		assert.Equal(t, lag, ev.CollectionID)
		market = append(market, ev.EventID)
	}
	own, _ := pageAll(lag, 100)
	assert.Equal(t, own, market, "the market's feed of one collection is its own")
	mp, err := c.MarketEvents(ctx, client.MarketEventsQuery{Chain: readmodel.Solana, EventsQuery: client.EventsQuery{Types: []string{wire.EventListingAdded}}})
	require.NoError(t, err)
	require.NotEmpty(t, mp.Data)
	for _, ev := range mp.Data {
		assert.True(t, strings.HasPrefix(ev.CollectionID, "solana_"), ev.CollectionID)
		assert.Equal(t, wire.EventListingAdded, ev.Type)
	}
	_, err = c.MarketEvents(ctx, client.MarketEventsQuery{Collections: []string{"no-such-collection"}})
	assert.ErrorIs(t, err, client.ErrNotFound)

	// Tokens: one, then a batch with one found, one not indexed, one
	// malformed, and a Solana token named by its collection's case-kept
	// mint. A listed token need not be indexed (404 means not indexed).
	dualDetail, err := c.Collection(ctx, dual)
	require.NoError(t, err)
	dualPage, err := c.Listings(ctx, dual, client.PageQuery{Limit: 100})
	require.NoError(t, err)
	require.NotEmpty(t, dualPage.Data)
	refOf := func(it readmodel.MarketItem, collectionMint *string) client.TokenRef {
		if it.Chain == readmodel.Solana {
			return client.TokenRef{Chain: it.Chain, Address: *collectionMint, TokenID: *it.Mint}
		}
		return client.TokenRef{Chain: it.Chain, Address: *it.ContractAddress, TokenID: *it.TokenID}
	}
	var ref client.TokenRef
	var tok client.TokenDetail
	for _, it := range dualPage.Data {
		ref = refOf(it.MarketItem, dualDetail.ContractAddress)
		if tok, err = c.Token(ctx, ref.Chain, ref.Address, ref.TokenID); !errors.Is(err, client.ErrNotFound) {
			break
		}
	}
	require.NoError(t, err)
	assert.Equal(t, dual, tok.CollectionID)
	assert.Equal(t, ref.Chain, tok.Chain)
	assert.Contains(t, []client.OwnerKind{wire.OwnerWallet, wire.OwnerCustody, wire.OwnerUnknown}, tok.Owner.Kind)
	assertTime(t, tok.AsOf, "token asOf")
	if tok.Listing != nil {
		assertListingItem(t, *tok.Listing, dualDetail.RoyaltyBps != nil)
	}
	solPage, err := c.Listings(ctx, sol.ID, client.PageQuery{Limit: 5})
	require.NoError(t, err)
	require.NotEmpty(t, solPage.Data, "the Solana collection has listings")
	solRefs := make([]client.TokenRef, len(solPage.Data))
	for i, it := range solPage.Data {
		solRefs[i] = refOf(it.MarketItem, sol.ContractAddress)
	}
	missing := client.TokenRef{Chain: ref.Chain, Address: ref.Address, TokenID: "999999999999"}
	if ref.Chain == readmodel.Solana {
		missing.TokenID = "1111111111111111111111111111111111"
	}
	bad := client.TokenRef{Chain: readmodel.Ethereum, Address: "not-an-address", TokenID: "1"}
	batch, err := c.Tokens(ctx, append([]client.TokenRef{ref, missing, bad}, solRefs...)...)
	require.NoError(t, err)
	require.Len(t, batch, 3+len(solRefs), "one answer per ref, in order")
	require.NoError(t, batch[0].Err)
	assert.Equal(t, tok.CollectionID, batch[0].Token.CollectionID)
	assert.Equal(t, tok.TokenID, batch[0].Token.TokenID)
	assert.Equal(t, tok.Mint, batch[0].Token.Mint)
	assert.ErrorIs(t, batch[1].Err, client.ErrNotFound)
	assert.Nil(t, batch[1].Token)
	assert.ErrorIs(t, batch[2].Err, client.ErrBadRequest)
	solFound := 0
	for i, r := range batch[3:] {
		if r.Err != nil {
			assert.ErrorIs(t, r.Err, client.ErrNotFound, "%s", solRefs[i])
			continue
		}
		assert.Equal(t, sol.ID, r.Token.CollectionID)
		assert.Equal(t, solRefs[i].TokenID, *r.Token.Mint)
		assert.Nil(t, r.Token.ContractAddress, "Solana tokens have a mint, no contract")
		solFound++
	}
	assert.Positive(t, solFound, "a Solana token is found by its collection's contractAddress")

	_, err = c.Collection(ctx, "no-such-collection")
	assert.ErrorIs(t, err, client.ErrNotFound)
	_, err = c.Collections(ctx, client.CollectionsQuery{Chain: "bitcoin"})
	assert.ErrorIs(t, err, client.ErrBadRequest)
	_, err = c.Events(ctx, many, client.EventsQuery{Types: []string{"transfer"}})
	assert.ErrorIs(t, err, client.ErrBadRequest)
	_, err = c.Tokens(ctx)
	assert.ErrorIs(t, err, client.ErrBadRequest, "no ids")

	// The reference page and its script are for browsers, not the client:
	// read them over the same recording transport.
	hc := &http.Client{Transport: rec, Timeout: 30 * time.Second}
	for _, p := range []string{"/v1/docs", "/v1/docs/redoc-2.5.4.standalone.js"} {
		res, err := hc.Get(e.API + p)
		require.NoError(t, err)
		_ = res.Body.Close()
		assert.Equal(t, http.StatusOK, res.StatusCode, p)
	}

	assert.Empty(t, rec.unanswered(), "every documented endpoint answered the client")

	t.Run("502 is unknown, not empty", func(t *testing.T) {
		e.fault(t, "order-book", "error")
		e.fault(t, "indexer-mirror", "error")
		e.cycle(t)
		defer func() { e.reset(t); e.cycle(t) }()
		p, err := c.Listings(ctx, e.id(t, sim.EdgeNoListings), client.PageQuery{})
		require.ErrorIs(t, err, client.ErrUnknown)
		assert.Nil(t, p.Data)
		var apiErr *client.Error
		require.True(t, errors.As(err, &apiErr))
		assert.Equal(t, readmodel.UpstreamError, apiErr.Code)
		_, err = c.Sweep(ctx, e.id(t, sim.EdgeNoListings), 0)
		require.ErrorIs(t, err, client.ErrUnknown, "the sweep follows the listings rule")
		st, err := c.Status(ctx)
		require.NoError(t, err)
		failing := map[readmodel.Source]int{}
		for _, src := range st.Sources {
			if !src.Healthy {
				failing[src.Source] = src.FailingCollections
			}
		}
		assert.Positive(t, failing[readmodel.SourceOrderBook], "the order book fails for its collections")
		assert.Positive(t, failing[readmodel.SourceIndexerMirror])
	})
}

// TestGoClientRateLimited: against a node with a list budget of 2, the
// third call in a window is a 429 whose Retry-After (1 to 60 s) the client reports; a
// client told not to retry returns it as ErrRateLimited with the headers.
func TestGoClientRateLimited(t *testing.T) {
	m := MustRunMain(t, "--sim-collections", "5", "--rate-list", "2", "--cursor-key", testCursorKey)
	c := client.New(m.API, client.WithRetries(0))
	ctx := context.Background()
	var err error
	for i := 0; i < 5 && err == nil; i++ { // 3 unless a window ends between calls
		_, err = c.Collections(ctx, client.CollectionsQuery{})
	}
	require.ErrorIs(t, err, client.ErrRateLimited)
	var apiErr *client.Error
	require.True(t, errors.As(err, &apiErr))
	assert.Equal(t, 2, apiErr.Limit)
	assert.Equal(t, 0, apiErr.Remaining)
	assert.GreaterOrEqual(t, apiErr.RetryAfter.Seconds(), 1.0)
	assert.LessOrEqual(t, apiErr.RetryAfter.Seconds(), 60.0)
	assert.False(t, apiErr.Reset.IsZero())
}

// addRaw adds p's raw amount to sum (nothing for nil).
func addRaw(t *testing.T, sum *big.Int, p *readmodel.Price) {
	t.Helper()
	if p == nil {
		return
	}
	n, ok := new(big.Int).SetString(p.Raw, 10)
	require.True(t, ok, p.Raw)
	sum.Add(sum, n)
}

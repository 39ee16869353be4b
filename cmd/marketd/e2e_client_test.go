package main

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/client"
	"github.com/marketd/marketd/ingest/sim"
	"github.com/marketd/marketd/readmodel"
)

// TestGoClientAgainstNode drives the client package users import against
// a real node: every endpoint typed, cursor walks with SPEC's dedupe, 404
// and 400 typed, and 502 (every listing source failed) as ErrUnknown.
func TestGoClientAgainstNode(t *testing.T) {
	e := newAPIEnv(t)
	c := client.New(e.API)
	ctx := context.Background()
	many := e.id(t, sim.EdgeManyListings)

	idx, err := c.Index(ctx)
	require.NoError(t, err)
	assert.Equal(t, "/v1/openapi.json", idx.Documentation)
	doc, err := c.OpenAPI(ctx)
	require.NoError(t, err)
	assert.Contains(t, string(doc), `"openapi"`)

	var ids []string
	for s, err := range c.AllCollections(ctx, client.CollectionsQuery{Sort: readmodel.SortVolume, PageQuery: client.PageQuery{Limit: 7}}) {
		require.NoError(t, err)
		ids = append(ids, s.ID)
	}
	assert.Len(t, ids, 40, "every collection once across pages of 7")

	detail, err := c.Collection(ctx, many)
	require.NoError(t, err)
	assert.Equal(t, many, detail.ID)
	floor, err := c.Floor(ctx, many)
	require.NoError(t, err)
	assert.True(t, floor.Aggregated)

	var listings []readmodel.MarketItem
	for it, err := range c.AllListings(ctx, many, 40) {
		require.NoError(t, err)
		listings = append(listings, it)
	}
	require.Greater(t, len(listings), 40, "more than one page walked")
	seen := map[string]bool{}
	for _, it := range listings {
		k := client.ListingKey(it)
		assert.False(t, seen[k], "orderId %s yielded once", k)
		seen[k] = true
	}
	page, err := c.Listings(ctx, many, client.PageQuery{Limit: 100})
	require.NoError(t, err)
	assert.Nil(t, page.Meta, "healthy")

	sales := 0
	for _, err := range c.AllSales(ctx, many, 50) {
		require.NoError(t, err)
		sales++
	}
	assert.Positive(t, sales)

	// A listed token need not be indexed (404 means not indexed): the first
	// one of the dual-listed collection that is.
	dual := e.id(t, sim.EdgeDualListed)
	e.cycle(t) // one more cycle, applied: token views of every bucket are in
	dualPage, err := c.Listings(ctx, dual, client.PageQuery{Limit: 100})
	require.NoError(t, err)
	require.NotEmpty(t, dualPage.Data)
	var tok client.TokenDetail
	for _, it := range dualPage.Data {
		if it.Chain == readmodel.Solana {
			tok, err = c.Token(ctx, it.Chain, *detail.ContractAddress, *it.Mint)
		} else {
			tok, err = c.Token(ctx, it.Chain, *it.ContractAddress, *it.TokenID)
		}
		if !errors.Is(err, client.ErrNotFound) {
			break
		}
	}
	require.NoError(t, err)
	assert.Equal(t, dual, tok.CollectionID)

	_, err = c.Collection(ctx, "no-such-collection")
	assert.ErrorIs(t, err, client.ErrNotFound)
	_, err = c.Collections(ctx, client.CollectionsQuery{Chain: "bitcoin"})
	assert.ErrorIs(t, err, client.ErrBadRequest)

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

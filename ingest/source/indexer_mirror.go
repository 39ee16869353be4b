package source

import (
	"context"
	"net/url"
	"sort"
	"time"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/normalize"
)

// indexer-mirror has two polls: its listings (MirrorListings) and its
// tokens (MirrorTokens), counted apart under TokensPoll.

// MirrorKeep is how many of the cheapest mirror rows are kept per
// collection: readmodel.ListingsCeiling + readmodel.OrderBookMax, so that
// native collisions cannot starve the 250-window.
const MirrorKeep = readmodel.ListingsCeiling + readmodel.OrderBookMax

// TokensPoll is the Spec.Name of the indexer-mirror token poll.
const TokensPoll = readmodel.PollMirrorTokens

// MirrorListings polls indexer-mirror's listings: external-marketplace
// rows plus a lagged copy of native ones, the cheapest MirrorKeep of each
// collection.
type MirrorListings struct{ c *Client }

// NewMirrorListings returns the indexer-mirror listings poller over c.
func NewMirrorListings(c *Client) MirrorListings { return MirrorListings{c: c} }

// Spec implements the ingest Poller.
func (p MirrorListings) Spec() Spec { return listingsSpec(readmodel.SourceIndexerMirror) }

// Poll yields one KindListings unit per collection.
func (p MirrorListings) Poll(ctx context.Context, req Request, sink Sink) (string, error) {
	return "", pollListings(ctx, p.c, MirrorKeep, req, sink)
}

// MirrorTokens polls indexer-mirror's tokens incrementally: its mark is
// the token watermark, and each collection it yields carries every token
// of the collection, in buckets (BucketCount, TokenBucket).
type MirrorTokens struct{ c *Client }

// NewMirrorTokens returns the indexer-mirror token poller over c.
func NewMirrorTokens(c *Client) MirrorTokens { return MirrorTokens{c: c} }

// Spec implements the ingest Poller.
func (p MirrorTokens) Spec() Spec {
	return Spec{Name: TokensPoll, Source: readmodel.SourceIndexerMirror, Collections: Checked, Status: NoStatus}
}

// Poll yields one KindTokens unit per changed collection and returns the
// watermark to resume from (req.Mark again when the poll failed).
func (p MirrorTokens) Poll(ctx context.Context, req Request, sink Sink) (string, error) {
	wm, err := p.c.Tokens(ctx, req.Mark, req.Limit, func(groups []RowsGroup[normalize.RawToken]) error {
		now := req.Now
		for _, g := range groups {
			u := Unit{Kind: readmodel.KindTokens, Collection: g.CollectionID, At: now,
				Size:  func() int { return len(g.Rows) + len(g.Rejects) },
				Build: func(id string) Built { return tokensBuild(sink, id, g, now) }}
			if err := sink.Emit(u); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return req.Mark, err
	}
	return wm, nil
}

// tokensBuild normalizes one collection's tokens into its buckets.
func tokensBuild(sink Sink, id string, g RowsGroup[normalize.RawToken], now time.Time) Built {
	rejectAll(sink, g.Rejects)
	docs := make([]readmodel.TokenDoc, 0, len(g.Rows))
	for i := range g.Rows {
		d, err := normalize.Token(g.Rows[i], now)
		if err != nil {
			sink.Reject(err, 1)
			continue
		}
		d.CollectionID = id
		if d.Overlay != nil {
			d.Overlay.CollectionID = id
		}
		docs = append(docs, d)
	}
	nb := BucketCount(len(docs))
	buckets := make([][]readmodel.TokenDoc, nb)
	for _, d := range docs {
		b := readmodel.TokenBucket(readmodel.TokenKey(d.Chain, d.ContractAddress, d.TokenID), nb)
		buckets[b] = append(buckets[b], d)
	}
	msgs := make([]*readmodel.Message, nb)
	for b, toks := range buckets {
		sort.Slice(toks, func(i, j int) bool { return toks[i].TokenID < toks[j].TokenID })
		msgs[b] = &readmodel.Message{Bucket: uint32(b), Buckets: uint32(nb), Tokens: toks}
	}
	return Built{Msgs: msgs, Rows: len(docs)}
}

// BucketCount is how many token buckets a collection of n tokens uses: a
// power of two keeping buckets near 128 tokens (at most about 256).
func BucketCount(n int) int {
	b := 1
	for b*128 < n {
		b *= 2
	}
	return b
}

// Tokens walks indexer-mirror GET /tokens?since=, calling fn with each
// page's groups (each the complete token set of a changed collection). It
// returns the watermark to pass as since on the next walk; since "" reads
// every collection.
func (c *Client) Tokens(ctx context.Context, since string, limit int, fn func(groups []RowsGroup[normalize.RawToken]) error) (watermark string, err error) {
	q := url.Values{}
	if since != "" {
		q.Set("since", since)
	}
	err = walk(ctx, c, "/tokens", q, limit, grouped[normalize.RawToken], func(p groupedPage[normalize.RawToken]) error {
		if watermark == "" {
			watermark = p.watermark
		}
		return fn(p.groups)
	})
	if err != nil {
		return "", err
	}
	return watermark, nil
}

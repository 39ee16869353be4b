package source

import (
	"context"
	"net/url"
	"slices"
	"strings"
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

// tokensBuild normalizes one collection's tokens into its buckets, each
// in TokenID order (ties in the upstream's order).
//
// Every token is copied once, into its bucket's exact-size array, in an
// order sorted by index: a TokenDoc is a few hundred bytes, and sorting or
// growing arrays of them was about half of this function's time (at
// 100,000 collections, 3 of its 7.6 CPU-s in a 90-second profile of the
// first cycle). A collection of one bucket (up to 128 tokens) whose tokens
// come sorted is not copied at all.
func tokensBuild(sink Sink, id string, g RowsGroup[normalize.RawToken], now time.Time) Built {
	rejectAll(sink, g.Rejects)
	docs := normalizeTokens(sink, id, g.Rows, now)
	nb := BucketCount(len(docs))
	sorted := nb == 1 // only a single bucket is returned as it came
	for i := 1; i < len(docs) && sorted; i++ {
		sorted = docs[i-1].TokenID <= docs[i].TokenID
	}
	if nb == 1 && sorted {
		if len(docs) == 0 {
			docs = nil // an empty bucket's Tokens is nil, as in the others
		}
		return Built{Msgs: []*readmodel.Message{{Bucket: 0, Buckets: 1, Tokens: docs}}, Rows: len(docs)}
	}
	order := make([]int32, len(docs))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortStableFunc(order, func(a, b int32) int { return strings.Compare(docs[a].TokenID, docs[b].TokenID) })
	bucket := make([]uint32, len(docs)) // all 0 for one bucket
	counts := make([]int, nb)
	for i := range docs {
		if nb > 1 {
			bucket[i] = readmodel.TokenBucket(readmodel.TokenKey(docs[i].Chain, docs[i].ContractAddress, docs[i].TokenID), nb)
		}
		counts[bucket[i]]++
	}
	msgs := make([]*readmodel.Message, nb)
	for b := range msgs {
		msgs[b] = &readmodel.Message{Bucket: uint32(b), Buckets: uint32(nb)}
		if counts[b] > 0 {
			msgs[b].Tokens = make([]readmodel.TokenDoc, 0, counts[b])
		}
	}
	for _, i := range order {
		m := msgs[bucket[i]]
		m.Tokens = append(m.Tokens, docs[i])
	}
	return Built{Msgs: msgs, Rows: len(docs)}
}

// normalizeTokens normalizes the tokens of collection id as of now, in
// their order, counting each rejected one on sink.
func normalizeTokens(sink Sink, id string, rows []normalize.RawToken, now time.Time) []readmodel.TokenDoc {
	docs := make([]readmodel.TokenDoc, 0, len(rows))
	for i := range rows {
		d, err := normalize.Token(rows[i], now)
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
	return docs
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

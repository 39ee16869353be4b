package ingest

import (
	"context"

	"github.com/marketd/marketd/ingest/source"
	"github.com/marketd/marketd/readmodel"
)

// Poller is one poll of one upstream. Each upstream's pollers live in
// one file of ingest/source and are registered in upstreams; the cycle
// runs them (Spec says how) and owns everything they publish and
// remember. Poll fetches, decodes and normalizes, reports rejected rows
// and yields the rest through sink, and returns the mark the next poll
// resumes from (Request.Mark); the cycle records the mark only once the
// poll's messages are durable.
type Poller interface {
	Spec() source.Spec
	Poll(ctx context.Context, req source.Request, sink source.Sink) (mark string, err error)
}

// upstreams lists each upstream's pollers, over its client. Every source of
// readmodel.Sources has an entry; an upstream may have several polls.
var upstreams = map[readmodel.Source]func(c *source.Client) []Poller{
	readmodel.SourceCollectionIndex: func(c *source.Client) []Poller { return []Poller{source.NewCollectionIndex(c)} },
	readmodel.SourcePriceFeed:       func(c *source.Client) []Poller { return []Poller{source.NewPriceFeed(c)} },
	readmodel.SourceOrderBook:       func(c *source.Client) []Poller { return []Poller{source.NewOrderBook(c)} },
	readmodel.SourceIndexerMirror: func(c *source.Client) []Poller {
		return []Poller{source.NewMirrorListings(c), source.NewMirrorTokens(c)}
	},
	readmodel.SourceIndexerStats: func(c *source.Client) []Poller { return []Poller{source.NewIndexerStats(c)} },
	readmodel.SourceAnalytics:    func(c *source.Client) []Poller { return []Poller{source.NewAnalytics(c)} },
	readmodel.SourceSales:        func(c *source.Client) []Poller { return []Poller{source.NewSales(c)} },
}

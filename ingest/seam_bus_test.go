package ingest_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/ingest"
	"github.com/marketd/marketd/ingest/source"
	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/bus"
	"github.com/marketd/marketd/readmodel/bus/bustest"
	"github.com/marketd/marketd/readmodel/normalize"
)

// tinyListings is a listings poller of the test's own: it walks its
// upstream's GET /listings through the client the cycle gives it and
// yields each collection's rows as they normalize, with no trimming and no
// lazy units.
type tinyListings struct{ c *source.Client }

func (p tinyListings) Spec() source.Spec {
	return source.Spec{Name: string(p.c.Source()), Source: p.c.Source(), Collections: source.Checked,
		Status: source.PerCollection, Empty: readmodel.KindListings}
}

func (p tinyListings) Poll(ctx context.Context, req source.Request, sink source.Sink) (string, error) {
	return "", p.c.Listings(ctx, req.Limit, func(groups []source.LazyGroup[normalize.RawListing]) error {
		for _, g := range groups {
			raws, rejects := g.Decode()
			err := sink.Emit(source.Unit{Kind: readmodel.KindListings, Collection: g.CollectionID, At: req.Now,
				Build: func(id string) source.Built {
					for _, r := range rejects {
						sink.Reject(r, 1)
					}
					rows := []readmodel.ListingRow{}
					for _, raw := range raws {
						row, err := normalize.Listing(p.c.Source(), raw, req.Now)
						if err != nil {
							sink.Reject(err, 1)
							continue
						}
						row.CollectionID = id
						rows = append(rows, row)
					}
					return source.Built{Msgs: []*readmodel.Message{{Listings: rows}}, Rows: len(rows)}
				}})
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// TestOwnPollerOnTheBus swaps a poller of the test's own in for
// indexer-mirror's (ingest.WithPollers: the seam a registered poller is
// run through), pointed at an upstream of one collection, and runs one
// cycle against a real NATS server with JetStream: its row is on the
// state stream as indexer-mirror's listings of that collection,
// normalized, every other listed collection has indexer-mirror's empty
// listings, the poll's success is published, and the registered pollers
// of the other sources ran as before.
func TestOwnPollerOnTheBus(t *testing.T) {
	js := bustest.MustConnect(t, bustest.MustStartServer(t), 1)
	s, simURL := mustSimServer(t, nil)
	coll := s.CollectionID(17) // no edge case: listed, with order-book listings
	other := s.CollectionID(18)
	page, err := json.Marshal(map[string]any{"nextCursor": "", "items": []any{map[string]any{
		"collectionId": coll,
		"rows": []map[string]any{{
			"chain": "ethereum", "contract": "0xAbCdEf0123456789aBcDeF0123456789AbCdEf01", "tokenId": "0042",
			"price": "1000000000000000000001", "marketplace": "Blur", "orderId": "tiny-1",
			"seller": "0x00000000000000000000000000000000000000Aa", "createdAt": "2026-11-22T11:00:00Z",
		}},
	}}})
	require.NoError(t, err)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/listings" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(page)
	}))
	t.Cleanup(up.Close)

	start := anchor.Add(10 * time.Second)
	cfg := ingest.Config{Sources: map[readmodel.Source]ingest.SourceConfig{}, Now: func() time.Time { return start }, PageLimit: 300}
	for _, src := range readmodel.Sources {
		cfg.Sources[src] = ingest.SourceConfig{BaseURL: simURL + "/" + string(src), Timeout: 30 * time.Second}
	}
	cfg.Sources[readmodel.SourceIndexerMirror] = ingest.SourceConfig{BaseURL: up.URL, Timeout: 30 * time.Second}
	cfg = ingest.WithPollers(cfg, readmodel.SourceIndexerMirror, func(c *source.Client) []ingest.Poller {
		return []ingest.Poller{tinyListings{c: c}}
	})
	in, err := ingest.New(cfg, bus.NewPublisher(js), zerolog.Nop())
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, in.Close(context.Background())) })

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sum, err := in.RunCycle(ctx)
	require.NoError(t, err)
	mirror := sum.Sources[string(readmodel.SourceIndexerMirror)]
	require.NotNil(t, mirror)
	assert.Equal(t, 1, mirror.PollsOK)
	assert.Equal(t, 1, mirror.RowsAccepted)
	assert.NotContains(t, sum.Sources, source.TokensPoll, "the registered token poll was replaced too")

	var mu sync.Mutex
	var msgs []*readmodel.Message
	_, skipped, err := bus.NewState(js, 1).LastPerSubject(ctx, func(m *readmodel.Message) error {
		mu.Lock()
		msgs = append(msgs, m)
		mu.Unlock()
		return nil
	})
	require.NoError(t, err)
	require.Zero(t, skipped)

	m := find(msgs, readmodel.KindListings, readmodel.SourceIndexerMirror, coll)
	require.NotNil(t, m, "the poller's row on the bus as indexer-mirror's listings of %s", coll)
	assert.True(t, m.ObservedAt.Equal(start))
	require.Len(t, m.Listings, 1)
	row := m.Listings[0]
	assert.Equal(t, "0xabcdef0123456789abcdef0123456789abcdef01", row.ContractAddress, "lowercase EVM address")
	assert.Equal(t, "42", row.TokenID)
	assert.Equal(t, "1000000000000000000001", row.PriceRaw, "an exact price above 2^53")
	assert.Equal(t, "blur", row.Marketplace)
	assert.Equal(t, "tiny-1", row.OrderID)
	assert.Equal(t, coll, row.CollectionID)

	empty := find(msgs, readmodel.KindListings, readmodel.SourceIndexerMirror, other)
	require.NotNil(t, empty, "a listed collection the poll did not deliver")
	assert.Empty(t, empty.Listings)

	var polled []string
	for _, m := range byKind(msgs, readmodel.KindPolled) {
		polled = append(polled, m.Polled.Poll)
	}
	assert.Contains(t, polled, string(readmodel.SourceIndexerMirror), "the poll's success")
	ob := find(msgs, readmodel.KindListings, readmodel.SourceOrderBook, coll)
	require.NotNil(t, ob, "order-book's registered poller ran")
	assert.NotEmpty(t, ob.Listings)
}

package projector_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/ingest"
	"github.com/marketd/marketd/ingest/sim"
	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/store"
)

// feedEvent is the part of a change-feed event the tests read.
type feedEvent struct {
	EventID       string           `json:"eventId"`
	Type          string           `json:"type"`
	Reason        *string          `json:"reason"`
	ObservedAt    string           `json:"observedAt"`
	Listing       *feedItem        `json:"listing"`
	PreviousPrice *readmodel.Price `json:"previousPrice"`
	Sale          *saleItem        `json:"sale"`
}

// saleItem is the part of a sale's item the tests compare.
type saleItem struct {
	TokenID *string         `json:"tokenId"`
	Mint    *string         `json:"mint"`
	OrderID *string         `json:"orderId"`
	Tx      *string         `json:"tx"`
	Price   readmodel.Price `json:"price"`
	Status  string          `json:"status"`
}

// salesOf is collection cid's whole sales history, each item as it
// compares.
func salesOf(t *testing.T, st *store.Store, cid string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	after := ""
	for {
		p, err := st.Sales(context.Background(), cid, after, 100)
		require.NoError(t, err)
		for _, b := range p.Items {
			var it saleItem
			require.NoError(t, json.Unmarshal(jsonBytes(t, b), &it))
			out[it.key()] = true
		}
		if !p.HasMore {
			return out
		}
		after = p.Next
	}
}

// key is it as it compares: its JSON, with the decimal left out (events
// and the sales page carry the same raw price).
func (it saleItem) key() string {
	it.Price.Decimal, it.Price.USD = 0, nil
	b, _ := json.Marshal(it)
	return string(b)
}

type feedItem struct {
	Chain           string          `json:"chain"`
	ContractAddress *string         `json:"contractAddress"`
	TokenID         *string         `json:"tokenId"`
	Mint            *string         `json:"mint"`
	OrderID         *string         `json:"orderId"`
	Price           readmodel.Price `json:"price"`
}

func (it *feedItem) key() string {
	s := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	return readmodel.AssetKey(readmodel.Chain(it.Chain), s(it.ContractAddress), s(it.TokenID), s(it.Mint))
}

func (it *feedItem) value() string {
	o := ""
	if it.OrderID != nil {
		o = *it.OrderID
	}
	return o + "@" + it.Price.Raw
}

// snapshotSet is collection cid's current listings view as asset key →
// orderId@raw price.
func snapshotSet(t *testing.T, st *store.Store, cid string) map[string]string {
	t.Helper()
	v, err := st.Listings(context.Background(), cid, 0)
	require.NoError(t, err)
	out := map[string]string{}
	for _, b := range v.Items {
		var it feedItem
		require.NoError(t, json.Unmarshal(jsonBytes(t, b), &it))
		out[it.key()] = it.value()
	}
	return out
}

func jsonBytes(t *testing.T, b []byte) []byte {
	t.Helper()
	m := jsonMap(t, b)
	out, err := json.Marshal(m)
	require.NoError(t, err)
	return out
}

// walkFeed reads collection cid's feed after (seq, id) to its head in
// pages of limit, and returns the events and the position reached.
func walkFeed(t *testing.T, st *store.Store, cid string, after uint64, afterID string, limit int) ([]feedEvent, uint64, string) {
	t.Helper()
	var out []feedEvent
	for {
		p, err := st.Events(context.Background(), cid, after, afterID, limit, 0)
		require.NoError(t, err)
		for _, b := range p.Items {
			var e feedEvent
			require.NoError(t, json.Unmarshal(b, &e), "%s", b)
			out = append(out, e)
		}
		after, afterID = p.Last, p.LastID
		if !p.Full {
			return out, after, afterID
		}
	}
}

// TestFeedReplaysSnapshots proves the change feed gap-free: the simulated
// market moves N ticks (tokens listed, delisted, repriced, sold, expired),
// each cycle is ingested and applied, and for every collection the events
// after the first snapshot, applied to it in order, yield the last
// snapshot exactly. Every event id is unique, and every sale event's item
// is a sale of the collection's sales history.
func TestFeedReplaysSnapshots(t *testing.T) {
	const ticks = 12
	anchor := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	e := mustEnv(t)
	s, in := mustSimIngest(t, e, 30, anchor)
	cycle := func(tick int) {
		e.setNow(anchor.Add(time.Duration(tick)*2*time.Minute + 10*time.Second))
		_, err := in.RunCycle(context.Background())
		require.NoError(t, err)
		e.apply()
	}

	cycle(0)
	var cids []string
	var err error
	require.NoError(t, e.st.View(context.Background(), func(tx *store.Tx) error {
		cids, err = tx.Collections("", 1000)
		return err
	}))
	require.NotEmpty(t, cids)
	type start struct {
		set map[string]string
		seq uint64
		id  string
	}
	first := map[string]start{}
	for _, cid := range cids {
		_, seq, id := walkFeed(t, e.st, cid, 0, "", 100)
		first[cid] = start{snapshotSet(t, e.st, cid), seq, id}
	}
	for tick := 1; tick <= ticks; tick++ {
		s.Tick()
		cycle(tick)
	}

	seen := map[string]int{}
	ids := map[string]bool{}
	for _, cid := range cids {
		f := first[cid]
		evs, _, _ := walkFeed(t, e.st, cid, f.seq, f.id, 7)
		set := f.set
		var sales map[string]bool
		for _, ev := range evs {
			require.False(t, ids[ev.EventID], "event id %s repeated", ev.EventID)
			ids[ev.EventID] = true
			seen[ev.Type]++
			if ev.Reason != nil {
				seen[ev.Type+":"+*ev.Reason]++
			}
			switch ev.Type {
			case "listing_added":
				k := ev.Listing.key()
				_, dup := set[k]
				require.False(t, dup, "%s: %s added while listed", cid, k)
				set[k] = ev.Listing.value()
			case "listing_removed":
				k := ev.Listing.key()
				require.Equal(t, set[k], ev.Listing.value(), "%s: %s removed as listed", cid, k)
				delete(set, k)
			case "price_changed":
				k := ev.Listing.key()
				require.Contains(t, set, k, "%s: price of an unlisted asset changed", cid)
				require.NotNil(t, ev.PreviousPrice)
				require.Equal(t, set[k], *ev.Listing.OrderID+"@"+ev.PreviousPrice.Raw)
				set[k] = ev.Listing.value()
			case "sale":
				require.NotNil(t, ev.Sale, "%s: a sale event without its sale", cid)
				assert.Equal(t, "sold", ev.Sale.Status)
				assert.Nil(t, ev.Sale.Price.USD, "an event's prices carry usd null")
				if sales == nil {
					sales = salesOf(t, e.st, cid)
				}
				assert.True(t, sales[ev.Sale.key()], "%s: sale event %s is a sale of the collection's history", cid, ev.EventID)
			}
		}
		assert.Equal(t, snapshotSet(t, e.st, cid), set, "%s: events applied to the first snapshot are the last", cid)
	}
	t.Logf("events by type and reason over %d ticks: %v", ticks, seen)
	for _, k := range []string{"listing_added", "listing_removed", "floor_changed", "sale",
		"listing_removed:expired", "listing_removed:cancelled", "listing_removed:repriced"} {
		assert.NotZero(t, seen[k], "the market produced no %s", k)
	}
}

// walkMarket reads the market's feed from its start to its head in pages
// of limit.
func walkMarket(t *testing.T, st *store.Store, limit int) []marketFeedEvent {
	t.Helper()
	var out []marketFeedEvent
	var after uint64
	var afterID string
	for {
		p, err := st.MarketEvents(context.Background(), after, afterID, limit, store.MarketFilter{})
		require.NoError(t, err)
		for _, b := range p.Items {
			var e marketFeedEvent
			require.NoError(t, json.Unmarshal(b, &e), "%s", b)
			out = append(out, e)
		}
		after, afterID = p.Last, p.LastID
		if !p.Full {
			return out
		}
	}
}

// marketFeedEvent is an event of the market's feed: a collection's event
// and the collection.
type marketFeedEvent struct {
	feedEvent
	CollectionID string `json:"collectionId"`
}

// TestMarketFeedReplaysSnapshots proves the market's feed gap-free and in
// the order applied: over N ticks of the simulated market, every
// collection's events in the market's feed are its own feed's, in its
// order, once each; each stream's messages follow in the order of the
// stream; and following the market's feed from its start, every
// collection's events applied to an empty set yield its last snapshot
// exactly.
func TestMarketFeedReplaysSnapshots(t *testing.T) {
	const ticks = 8
	anchor := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	e := mustEnv(t)
	s, in := mustSimIngest(t, e, 31, anchor)
	for tick := 0; tick <= ticks; tick++ {
		if tick > 0 {
			s.Tick()
		}
		e.setNow(anchor.Add(time.Duration(tick)*2*time.Minute + 10*time.Second))
		_, err := in.RunCycle(context.Background())
		require.NoError(t, err)
		e.apply()
	}
	var cids []string
	var err error
	require.NoError(t, e.st.View(context.Background(), func(tx *store.Tx) error {
		cids, err = tx.Collections("", 1000)
		return err
	}))
	require.NotEmpty(t, cids)

	market := walkMarket(t, e.st, 37)
	byColl := map[string][]string{}
	sets := map[string]map[string]string{}
	last := map[string][2]uint64{} // per stream letter: the last message's seq and event index
	seen := map[string]int{}
	for _, ev := range market {
		seen[ev.Type]++
		byColl[ev.CollectionID] = append(byColl[ev.CollectionID], ev.EventID)
		// eventId: the stream's letter and seq, "-", the event's index, "-", a hash.
		var seq, idx uint64
		var hash string
		_, err := fmt.Sscanf(strings.ReplaceAll(ev.EventID[1:], "-", " "), "%d %d %s", &seq, &idx, &hash)
		require.NoError(t, err, ev.EventID)
		if l, ok := last[ev.EventID[:1]]; ok {
			require.True(t, seq > l[0] || seq == l[0] && idx > l[1], "%s after %v: the stream's order", ev.EventID, l)
		}
		last[ev.EventID[:1]] = [2]uint64{seq, idx}
		set := sets[ev.CollectionID]
		if set == nil {
			set = map[string]string{}
			sets[ev.CollectionID] = set
		}
		switch ev.Type {
		case "listing_added":
			set[ev.Listing.key()] = ev.Listing.value()
		case "listing_removed":
			require.Equal(t, set[ev.Listing.key()], ev.Listing.value(), "%s: removed as listed", ev.CollectionID)
			delete(set, ev.Listing.key())
		case "price_changed":
			set[ev.Listing.key()] = ev.Listing.value()
		}
	}
	for _, cid := range cids {
		own, _, _ := walkFeed(t, e.st, cid, 0, "", 100)
		ids := []string{}
		for _, ev := range own {
			ids = append(ids, ev.EventID)
		}
		assert.Equal(t, ids, append([]string{}, byColl[cid]...), "%s: the market's feed holds the collection's events, in its order", cid)
		want := snapshotSet(t, e.st, cid)
		got := sets[cid]
		if got == nil {
			got = map[string]string{}
		}
		assert.Equal(t, want, got, "%s: the market's events applied from the start are the last snapshot", cid)
	}
	t.Logf("%d events in the market's feed over %d ticks: %v", len(market), ticks, seen)
	for _, k := range []string{"listing_added", "listing_removed", "floor_changed", "sale"} {
		assert.NotZero(t, seen[k], "the market produced no %s", k)
	}
}

// mustSimIngest starts a simulated market of 24 collections of 40 tokens
// (seed, anchored at anchor) and an ingest polling it on e's clock and
// publishing to e's bus; both stop when t ends.
func mustSimIngest(t *testing.T, e *env, seed uint64, anchor time.Time) (*sim.Sim, *ingest.Ingest) {
	t.Helper()
	s := sim.New(sim.Options{Seed: seed, Collections: 24, TokensPerCollection: 40, SalesDepth: 1, Anchor: anchor})
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	clock := func() time.Time { return *e.now.Load() }
	cfg := ingest.Config{Sources: map[readmodel.Source]ingest.SourceConfig{}, Now: clock, PageLimit: 300}
	for _, src := range readmodel.Sources {
		cfg.Sources[src] = ingest.SourceConfig{BaseURL: srv.URL + "/" + string(src), Timeout: 30 * time.Second}
	}
	in, err := ingest.New(cfg, e.pub, zerolog.Nop())
	require.NoError(t, err)
	t.Cleanup(func() { _ = in.Close(context.Background()) })
	return s, in
}

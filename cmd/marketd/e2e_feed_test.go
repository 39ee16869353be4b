package main

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/ingest/sim"
)

// assetOf is a MarketItem's asset key and orderId@raw price.
func assetOf(it map[string]any) (string, string) {
	s := func(k string) string { v, _ := it[k].(string); return v }
	key := s("chain") + "|" + s("contractAddress") + "|" + s("tokenId") + "|" + s("mint")
	return key, s("orderId") + "@" + s("raw")
}

func assetValue(it map[string]any) (string, string) {
	k, _ := assetOf(it)
	p := obj(it["price"])
	raw, _ := p["raw"].(string)
	o, _ := it["orderId"].(string)
	return k, o + "@" + raw
}

// listingSet walks a collection's listings to their end.
func listingSet(t *testing.T, e *apiEnv, id string) (map[string]string, []map[string]any) {
	t.Helper()
	set := map[string]string{}
	var items []map[string]any
	path := collection(id, "listings") + "?limit=100"
	for {
		r := e.get(t, path)
		require.Equal(t, 200, r.Status, "%s", r.Body)
		for _, it := range arr(r.JSON["data"]) {
			k, v := assetValue(obj(it))
			set[k] = v
			items = append(items, obj(it))
		}
		p := obj(r.JSON["pagination"])
		if p["hasMore"] != true {
			return set, items
		}
		path = collection(id, "listings") + "?limit=100&cursor=" + url.QueryEscape(p["nextCursor"].(string))
	}
}

// walkEvents reads a collection's feed after cursor ("" from the start)
// to its head and returns the events and the head page's cursor.
func walkEvents(t *testing.T, e *apiEnv, id, cursor string) ([]map[string]any, string) {
	t.Helper()
	var out []map[string]any
	for {
		path := collection(id, "events") + "?limit=40"
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		r := e.get(t, path)
		require.Equal(t, 200, r.Status, "%s", r.Body)
		for _, ev := range arr(r.JSON["data"]) {
			out = append(out, obj(ev))
		}
		p := obj(r.JSON["pagination"])
		if next, ok := p["nextCursor"].(string); ok {
			cursor = next
		}
		if p["hasMore"] != true {
			return out, cursor
		}
		assert.Contains(t, r.Header.Get("Cache-Control"), "s-maxage", "%s", path)
	}
}

// TestChangeFeedThroughTicks runs marketd all: the events a walk reads
// after a first snapshot, applied to it, give the listings after three
// ticks of the simulated market, and every event id is new. The market's
// clock starts an hour ahead, so that no listing expires by the node's
// clock during the test: the listings endpoint hides a row the moment it
// expires, the feed reports it at the collection's next message (the
// projector's TestFeedReplaysSnapshots covers expiry).
func TestChangeFeedThroughTicks(t *testing.T) {
	e := newAPIEnv(t, "--sim-anchor", time.Now().Add(time.Hour).UTC().Truncate(time.Minute).Format(time.RFC3339))
	id := e.id(t, sim.EdgeMirrorLag)
	first, _ := listingSet(t, e, id)
	_, cursor := walkEvents(t, e, id, "")
	require.NotEmpty(t, cursor, "a collection with listings has a feed")
	for i := 0; i < 3; i++ {
		e.tick(t)
		e.cycle(t)
	}
	evs, _ := walkEvents(t, e, id, cursor)
	require.NotEmpty(t, evs)
	seen := map[string]bool{}
	set := first
	for _, ev := range evs {
		eid := ev["eventId"].(string)
		require.False(t, seen[eid], "event %s twice", eid)
		seen[eid] = true
		l := obj(ev["listing"])
		switch ev["type"] {
		case "listing_added":
			k, v := assetValue(l)
			set[k] = v
		case "listing_removed":
			k, v := assetValue(l)
			require.Equal(t, set[k], v, "removed as listed")
			require.NotNil(t, ev["reason"])
			delete(set, k)
		case "price_changed":
			k, v := assetValue(l)
			set[k] = v
		}
	}
	last, _ := listingSet(t, e, id)
	assert.Equal(t, last, set)
}

// TestBatchTokensMatchSingle: each item of a batch is what the single
// token endpoint answers for the same id.
func TestBatchTokensMatchSingle(t *testing.T) {
	e := newAPIEnv(t)
	var ids []string
	for _, edge := range []string{sim.EdgeDualListed, sim.EdgeLegacySolanaIDs} {
		cid := e.id(t, edge)
		d := obj(e.get(t, collection(cid)).JSON["data"])
		_, items := listingSet(t, e, cid)
		for _, it := range items[:min(3, len(items))] {
			if it["chain"] == "solana" {
				ids = append(ids, "solana/"+d["contractAddress"].(string)+"/"+it["mint"].(string))
			} else {
				ids = append(ids, it["chain"].(string)+"/"+it["contractAddress"].(string)+"/"+it["tokenId"].(string))
			}
		}
	}
	ids = append(ids, "ethereum/0x0000000000000000000000000000000000000001/1", "bitcoin/x/1")
	r := e.get(t, "/v1/tokens?ids="+strings.Join(ids, ","))
	require.Equal(t, 200, r.Status, "%s", r.Body)
	items := arr(r.JSON["data"])
	require.Len(t, items, len(ids))
	for i, id := range ids[:len(ids)-2] {
		single := obj(e.get(t, "/v1/tokens/"+id).JSON["data"])
		got := obj(items[i])
		for _, m := range []map[string]any{single, got} {
			if l := obj(m["listing"]); l != nil {
				delete(l, "timestamp") // an overlay listing is stamped when the response is built
			}
		}
		assert.Equal(t, single, got, id)
	}
	assert.Equal(t, "not_found", obj(obj(items[len(ids)-2])["error"])["code"])
	assert.Equal(t, "bad_request", obj(obj(items[len(ids)-1])["error"])["code"])
}

// TestFeedEventsSetting: --feed-events bounds each collection's feed: a
// collection whose first cycle alone made more events keeps the newest
// that many.
func TestFeedEventsSetting(t *testing.T) {
	e := newAPIEnv(t, "--feed-events", "3")
	id := e.id(t, sim.EdgeMirrorLag)
	_, items := listingSet(t, e, id)
	require.Greater(t, len(items), 3, "its first cycle listed more than the feed keeps")
	evs, cursor := walkEvents(t, e, id, "")
	assert.Len(t, evs, 3, "the newest 3 events")
	assert.NotEmpty(t, cursor)
}

// walkMarket reads the market's feed (GET /v1/events) with query after
// cursor ("" from the start) to its head, and returns the events and the
// head page's cursor.
func walkMarket(t *testing.T, e *apiEnv, query, cursor string) ([]map[string]any, string) {
	t.Helper()
	var out []map[string]any
	for {
		path := "/v1/events?limit=100" + query
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		r := e.get(t, path)
		require.Equal(t, 200, r.Status, "%s", r.Body)
		for _, ev := range arr(r.JSON["data"]) {
			out = append(out, obj(ev))
		}
		p := obj(r.JSON["pagination"])
		if next, ok := p["nextCursor"].(string); ok {
			cursor = next
		}
		if p["hasMore"] != true {
			return out, cursor
		}
	}
}

// TestMarketFeedThroughTicks runs marketd all: following the market's
// feed (GET /v1/events) from a first snapshot, every collection's events
// applied to its listings then give its listings after three ticks; the
// market's feed holds each collection's own feed's events in its order;
// and its chain and collections filters keep only what they name. The
// market's clock starts an hour ahead, as in TestChangeFeedThroughTicks.
func TestMarketFeedThroughTicks(t *testing.T) {
	e := newAPIEnv(t, "--sim-anchor", time.Now().Add(time.Hour).UTC().Truncate(time.Minute).Format(time.RFC3339))
	var ids []string
	for path := "/v1/collections?limit=100"; ; {
		r := e.get(t, path)
		require.Equal(t, 200, r.Status, "%s", r.Body)
		for _, c := range arr(r.JSON["data"]) {
			id := obj(c)["id"].(string)
			if e.get(t, collection(id, "listings")).Status == 200 { // not one without a chain
				ids = append(ids, id)
			}
		}
		p := obj(r.JSON["pagination"])
		if p["hasMore"] != true {
			break
		}
		path = "/v1/collections?limit=100&cursor=" + url.QueryEscape(p["nextCursor"].(string))
	}
	require.NotEmpty(t, ids)
	sets := map[string]map[string]string{}
	feeds := map[string]string{} // each collection's own feed's head cursor
	for _, id := range ids {
		sets[id], _ = listingSet(t, e, id)
		_, feeds[id] = walkEvents(t, e, id, "")
	}
	_, cursor := walkMarket(t, e, "", "")
	require.NotEmpty(t, cursor)
	for i := 0; i < 3; i++ {
		e.tick(t)
		e.cycle(t)
	}

	evs, _ := walkMarket(t, e, "", cursor)
	require.NotEmpty(t, evs)
	byColl := map[string][]string{}
	for _, ev := range evs {
		cid := ev["collectionId"].(string)
		byColl[cid] = append(byColl[cid], ev["eventId"].(string))
		set, ok := sets[cid]
		if !ok {
			continue // one whose listings are not served (no chain)
		}
		l := obj(ev["listing"])
		switch ev["type"] {
		case "listing_added", "price_changed":
			k, v := assetValue(l)
			set[k] = v
		case "listing_removed":
			k, v := assetValue(l)
			require.Equal(t, set[k], v, "%s: removed as listed", cid)
			delete(set, k)
		}
	}
	for _, id := range ids {
		last, _ := listingSet(t, e, id)
		assert.Equal(t, last, sets[id], "%s: the market's events applied to the first snapshot are the last", id)
		own, _ := walkEvents(t, e, id, feeds[id])
		want := []string{}
		for _, ev := range own {
			want = append(want, ev["eventId"].(string))
		}
		assert.Equal(t, want, append([]string{}, byColl[id]...), "%s: the market's feed holds the collection's events in its order", id)
	}

	sol := e.id(t, sim.EdgeLegacySolanaIDs)
	two := []string{e.id(t, sim.EdgeMirrorLag), sol}
	for _, tc := range []struct {
		name, query string
		keeps       func(cid string) bool
	}{
		{"chain", "&chain=solana", func(cid string) bool { return strings.HasPrefix(cid, "solana_") }},
		{"collections", "&collections=" + strings.Join(two, ","), func(cid string) bool { return cid == two[0] || cid == two[1] }},
		{"collections and types", "&types=sale&collections=" + sol, func(cid string) bool { return cid == sol }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := walkMarket(t, e, tc.query, "")
			require.NotEmpty(t, got)
			for _, ev := range got {
				assert.True(t, tc.keeps(ev["collectionId"].(string)), "%s: %v", tc.query, ev["collectionId"])
			}
		})
	}
	r := e.get(t, "/v1/events?collections=nope")
	assert.Equal(t, 404, r.Status, "%s", r.Body)
}

// TestMarketEventsSetting: --market-events bounds the market's feed: the
// newest that many are kept, and a cursor before them is a 400 that names
// the oldest kept.
func TestMarketEventsSetting(t *testing.T) {
	e := newAPIEnv(t, "--market-events", "5")
	evs, _ := walkMarket(t, e, "", "")
	assert.Len(t, evs, 5, "the newest 5 events")
	r := e.get(t, "/v1/events?limit=1")
	require.Equal(t, 200, r.Status, "%s", r.Body)
	old := obj(r.JSON["pagination"])["nextCursor"].(string)
	for i := 0; i < 3; i++ { // more than 5 events
		e.tick(t)
		e.cycle(t)
	}
	r = e.get(t, "/v1/events?cursor="+url.QueryEscape(old))
	assert.Equal(t, 400, r.Status, "%s", r.Body)
	assert.Contains(t, string(r.Body), "oldest available")
	evs, _ = walkMarket(t, e, "", "")
	assert.Len(t, evs, 5)
}

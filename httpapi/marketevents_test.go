package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/render"
)

// fakeMarket is the market's feed: every event addEvents added, in order;
// those before first dropped (retention; 0: none).
type fakeMarket struct {
	first  uint64
	events []fakeMarketEvent // events[i] has seq i+1
}

type fakeMarketEvent struct {
	cid string
	fakeEvent
}

func (f *fakeReader) MarketEvents(_ context.Context, after uint64, afterID string, limit int, types uint8, chain readmodel.Chain, colls []string) (render.EventPage, error) {
	if err := f.enter("MarketEvents"); err != nil {
		return render.EventPage{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	m := &f.market
	first := max(m.first, 1)
	if after != 0 {
		if after > uint64(len(m.events)) || m.events[after-1].id != afterID {
			return render.EventPage{}, readmodel.Errorf(readmodel.BadRequest, "cursor does not resolve")
		}
		if after+1 < first {
			return render.EventPage{}, readmodel.Errorf(readmodel.BadRequest, "cursor is older than the events kept; the oldest available is eventId %q", m.events[first-1].id)
		}
	}
	p := render.EventPage{Last: after, LastID: afterID}
	for seq := max(after+1, first); seq <= uint64(len(m.events)); seq++ {
		e := &m.events[seq-1]
		p.Last, p.LastID = seq, e.id
		c, _, _ := strings.Cut(e.cid, "_")
		if (types == 0 || render.EventTypeBit(e.typ)&types != 0) && (chain == "" || c == string(chain)) &&
			(len(colls) == 0 || slices.Contains(colls, e.cid)) {
			p.Items = append(p.Items, e.body)
		}
		if len(p.Items) == limit {
			p.Full = true
			break
		}
	}
	return p, nil
}

type marketPage struct {
	Data []struct {
		EventID      string `json:"eventId"`
		Type         string `json:"type"`
		CollectionID string `json:"collectionId"`
	} `json:"data"`
	Pagination struct {
		NextCursor *string `json:"nextCursor"`
		HasMore    bool    `json:"hasMore"`
	} `json:"pagination"`
}

// ids is the page's events as collection/eventId.
func (p marketPage) ids() []string {
	out := []string{}
	for _, e := range p.Data {
		out = append(out, e.CollectionID+"/"+e.EventID)
	}
	return out
}

func (h *harness) market(t *testing.T, query string) (result, marketPage) {
	t.Helper()
	res := h.get("/v1/events" + query)
	var p marketPage
	if res.status == 200 {
		require.NoError(t, json.Unmarshal(res.body, &p), "%s", res.body)
	}
	return res, p
}

// marketHarness is a harness whose market holds, in order, 3 events of
// testID (ethereum), 4 of otherID (base) and 3 more of testID.
func marketHarness(t *testing.T, cfg func(*Config)) *harness {
	h := MustHarness(t, cfg)
	h.r.collections[otherID] = render.CollectionView{ID: otherID, Chain: readmodel.Base, HasContract: true, Version: 1, Detail: detailJSON}
	h.r.addEvents(testID, 3)
	h.r.addEvents(otherID, 4)
	h.r.addEvents(testID, 3)
	return h
}

// TestMarketEventsWalk: a walk from the start reads every collection's
// events once, in the market's order; full pages after a cursor are
// immutable, the first and head pages short-cached, and the head page's
// cursor resumes once more events arrive.
func TestMarketEventsWalk(t *testing.T) {
	h := marketHarness(t, nil)
	var got []string
	query := "?limit=4"
	var immutable string
	var body []byte
	for page := 0; ; page++ {
		res, p := h.market(t, query)
		require.Equal(t, 200, res.status, "%s", res.body)
		got = append(got, p.ids()...)
		require.NotNil(t, p.Pagination.NextCursor, "every page resumes")
		switch {
		case !p.Pagination.HasMore:
			assert.Len(t, p.Data, 2)
			assert.Equal(t, "public, s-maxage=5, stale-while-revalidate=10", res.header.Get("Cache-Control"))
		case page == 0:
			assert.Equal(t, "public, s-maxage=5, stale-while-revalidate=10", res.header.Get("Cache-Control"), "the first page")
		default:
			assert.Equal(t, "public, s-maxage=31536000, max-age=31536000, immutable", res.header.Get("Cache-Control"))
			assert.Equal(t, "max-age=31536000, immutable", res.header.Get("CDN-Cache-Control"))
			immutable, body = query, res.body
		}
		query = "?limit=4&cursor=" + *p.Pagination.NextCursor
		if !p.Pagination.HasMore {
			break
		}
	}
	assert.Equal(t, []string{
		testID + "/s1-0-x", testID + "/s2-0-x", testID + "/s3-0-x",
		otherID + "/s1-0-x", otherID + "/s2-0-x", otherID + "/s3-0-x", otherID + "/s4-0-x",
		testID + "/s4-0-x", testID + "/s5-0-x", testID + "/s6-0-x",
	}, got)

	h.r.addEvents(otherID, 1)
	_, p := h.market(t, query)
	assert.Equal(t, []string{otherID + "/s5-0-x"}, p.ids(), "the head page's cursor resumes")

	for round := 0; round < 3; round++ { // built, remembered, served from the memo
		res, _ := h.market(t, immutable)
		assert.Equal(t, body, res.body, "a full page never changes")
	}
	res, _ := h.market(t, immutable)
	res = h.get("/v1/events"+immutable, "If-None-Match", res.header.Get("ETag"))
	assert.Equal(t, http.StatusNotModified, res.status)
}

func TestMarketEventsFilters(t *testing.T) {
	h := marketHarness(t, nil)
	for _, tc := range []struct {
		name, query string
		want        []string
	}{
		{"chain", "?chain=base", []string{otherID + "/s1-0-x", otherID + "/s2-0-x", otherID + "/s3-0-x", otherID + "/s4-0-x"}},
		{"a chain without events", "?chain=solana", []string{}},
		{"a collection by its slug", "?collections=" + testSlug + "&types=sale",
			[]string{testID + "/s1-0-x", testID + "/s3-0-x", testID + "/s5-0-x"}},
		{"collections, each once", "?collections=" + otherID + "," + testID + "," + testSlug + "&limit=100",
			[]string{testID + "/s1-0-x", testID + "/s2-0-x", testID + "/s3-0-x",
				otherID + "/s1-0-x", otherID + "/s2-0-x", otherID + "/s3-0-x", otherID + "/s4-0-x",
				testID + "/s4-0-x", testID + "/s5-0-x", testID + "/s6-0-x"}},
		{"collections and chain", "?collections=" + otherID + "," + testID + "&chain=base&types=listing_added",
			[]string{otherID + "/s2-0-x", otherID + "/s4-0-x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, p := h.market(t, tc.query)
			require.Equal(t, 200, res.status, "%s", res.body)
			assert.Equal(t, tc.want, p.ids())
			require.NotNil(t, p.Pagination.NextCursor, "the head page resumes after what it filtered out")
		})
	}
}

func TestMarketEventsErrors(t *testing.T) {
	h := marketHarness(t, nil)
	_, p := h.market(t, "?limit=2")
	old := *p.Pagination.NextCursor // after event 2
	_, fp := h.events(t, "?limit=2")
	feedCursor := *fp.Pagination.NextCursor

	h.r.mu.Lock()
	h.r.market.first = 5 // events 1-4 dropped
	h.r.mu.Unlock()
	twentyOne := strings.TrimSuffix(strings.Repeat(testID+",", 21), ",")
	tests := []struct {
		name, query string
		status      int
	}{
		{"cursor older than retention", "?cursor=" + old, 400},
		{"a collection feed's cursor", "?cursor=" + feedCursor, 400},
		{"garbled cursor", "?cursor=abc", 400},
		{"empty cursor", "?cursor=", 400},
		{"unknown type", "?types=transfer", 400},
		{"unknown chain", "?chain=bitcoin", 400},
		{"chain in capitals", "?chain=Ethereum", 400},
		{"empty chain", "?chain=", 400},
		{"unknown collection", "?collections=nope", 404},
		{"empty collections", "?collections=", 400},
		{"an empty collection id", "?collections=" + testID + ",", 400},
		{"21 collection ids", "?collections=" + twentyOne, 400},
		{"20 collection ids", "?collections=" + strings.TrimSuffix(strings.Repeat(testID+",", 20), ","), 200},
		{"limit 0", "?limit=0", 400},
		{"limit 101", "?limit=101", 400},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := h.get("/v1/events" + tc.query)
			require.Equal(t, tc.status, res.status, "%s", res.body)
			if tc.status == 400 {
				assert.Equal(t, "bad_request", res.errorCode(t))
				assert.Equal(t, "no-store", res.header.Get("Cache-Control"))
			}
		})
	}
	res := h.get("/v1/events?cursor=" + old)
	assert.Contains(t, string(res.body), `"s2-0-x`, "the 400 names the oldest event kept: otherID's second")
	res = h.get("/v1/events?collections=nope")
	assert.Contains(t, string(res.body), `nope`, "the 404 names the id")

	_, p = h.market(t, "")
	res = h.get("/v1/collections/" + testID + "/events?cursor=" + *p.Pagination.NextCursor)
	assert.Equal(t, 400, res.status, "a market cursor is not a collection feed's")
}

// TestMarketEventsListBucket: the market's feed counts in the list bucket.
func TestMarketEventsListBucket(t *testing.T) {
	h := MustHarness(t, func(c *Config) { c.RateList, c.RateItem = 1, 100 })
	require.Equal(t, 200, h.get("/v1/events").status)
	res := h.get("/v1/collections/" + testID + "/sales")
	assert.Equal(t, http.StatusTooManyRequests, res.status)
	assert.Equal(t, 200, h.get("/v1/collections/"+testID).status, "the item bucket is untouched")
}

package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/render"
)

// fakeFeed is a collection's change feed: events first..len(events), the
// earlier ones dropped (retention).
type fakeFeed struct {
	first  uint64
	events []fakeEvent // events[i] has seq i+1
}

// fakeEvent is a stored event: rendered once, as the store keeps them.
type fakeEvent struct {
	id, typ string
	body    []byte
}

// addEvents appends n listing_added (even) and sale (odd) events to id's feed.
func (f *fakeReader) addEvents(id string, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.feeds == nil {
		f.feeds = map[string]*fakeFeed{}
	}
	fd := f.feeds[id]
	if fd == nil {
		fd = &fakeFeed{first: 1}
		f.feeds[id] = fd
	}
	for i := 0; i < n; i++ {
		seq := len(fd.events) + 1
		e := render.Event{ID: "s" + strconv.Itoa(seq) + "-0-x", CollectionID: id, ObservedAt: t0}
		if seq%2 == 0 {
			e.Type, e.Listing = render.EventListingAdded, evmItem(id, testContract, seq, "1000", 1e-15, "o"+strconv.Itoa(seq))
		} else {
			e.Type, e.Sale = render.EventSale, saleItem(id, seq)
		}
		fd.events = append(fd.events, fakeEvent{id: e.ID, typ: e.Type, body: render.EventJSON(&e)})
		f.market.events = append(f.market.events, fakeMarketEvent{cid: id, fakeEvent: fd.events[len(fd.events)-1]})
	}
}

func (f *fakeReader) Events(_ context.Context, id string, after uint64, afterID string, limit int, types uint8) (render.EventPage, error) {
	if err := f.enter("Events"); err != nil {
		return render.EventPage{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	fd := f.feeds[id]
	if fd == nil {
		fd = &fakeFeed{first: 1}
	}
	if after != 0 {
		if after > uint64(len(fd.events)) || fd.events[after-1].id != afterID {
			return render.EventPage{}, readmodel.Errorf(readmodel.BadRequest, "cursor does not resolve")
		}
		if after+1 < fd.first {
			return render.EventPage{}, readmodel.Errorf(readmodel.BadRequest, "cursor is older than the events kept; the oldest available is eventId %q", fd.events[fd.first-1].id)
		}
	}
	p := render.EventPage{Last: after, LastID: afterID}
	for seq := max(after+1, fd.first); seq <= uint64(len(fd.events)); seq++ {
		e := &fd.events[seq-1]
		p.Last, p.LastID = seq, e.id
		if types == 0 || render.EventTypeBit(e.typ)&types != 0 {
			p.Items = append(p.Items, e.body)
		}
		if len(p.Items) == limit {
			p.Full = true
			break
		}
	}
	return p, nil
}

type eventsPage struct {
	Data []struct {
		EventID string `json:"eventId"`
		Type    string `json:"type"`
	} `json:"data"`
	Pagination struct {
		NextCursor *string `json:"nextCursor"`
		HasMore    bool    `json:"hasMore"`
	} `json:"pagination"`
}

func (h *harness) events(t *testing.T, query string) (result, eventsPage) {
	t.Helper()
	res := h.get("/v1/collections/" + testSlug + "/events" + query)
	var p eventsPage
	if res.status == 200 {
		require.NoError(t, json.Unmarshal(res.body, &p))
	}
	return res, p
}

// TestEventsWalk: a walk from the start reads every event once, in order;
// full pages are immutable, the head page short-cached, and its cursor
// resumes the walk once more events arrive, also hours later.
func TestEventsWalk(t *testing.T) {
	h := MustHarness(t, nil)
	h.r.addEvents(testID, 12)
	var got []string
	var bodies [][]byte
	var immutable []string
	query := "?limit=5"
	for page := 0; ; page++ {
		served := query
		res, p := h.events(t, query)
		require.Equal(t, 200, res.status, "%s", res.body)
		for _, e := range p.Data {
			got = append(got, e.EventID)
		}
		require.NotNil(t, p.Pagination.NextCursor, "every page resumes")
		query = "?limit=5&cursor=" + *p.Pagination.NextCursor
		if !p.Pagination.HasMore {
			assert.Len(t, p.Data, 2)
			assert.Equal(t, "public, s-maxage=5, stale-while-revalidate=10", res.header.Get("Cache-Control"))
			break
		}
		assert.Len(t, p.Data, 5)
		if page == 0 {
			assert.Equal(t, "public, s-maxage=5, stale-while-revalidate=10", res.header.Get("Cache-Control"), "the first page starts at the oldest event kept, which moves")
			continue
		}
		assert.Equal(t, "public, s-maxage=31536000, max-age=31536000, immutable", res.header.Get("Cache-Control"))
		assert.Equal(t, "max-age=31536000, immutable", res.header.Get("CDN-Cache-Control"))
		bodies = append(bodies, res.body)
		immutable = append(immutable, served)
	}
	require.Len(t, got, 12)
	for i, id := range got {
		assert.Equal(t, "s"+strconv.Itoa(i+1)+"-0-x", id)
	}

	h.r.addEvents(testID, 3)
	h.clock.Add(3 * time.Hour) // past the cursor TTL: feed cursors do not expire
	res, p := h.events(t, query)
	require.Equal(t, 200, res.status, "%s", res.body)
	require.Len(t, p.Data, 3)
	assert.Equal(t, "s13-0-x", p.Data[0].EventID)

	for round := 0; round < 3; round++ { // built, remembered, served from the memo
		res, _ = h.events(t, immutable[0])
		require.Equal(t, 200, res.status)
		assert.Equal(t, bodies[0], res.body, "a full page never changes")
	}
	tag := res.header.Get("ETag")
	require.NotEmpty(t, tag)
	res = h.get("/v1/collections/"+testSlug+"/events"+immutable[0], "If-None-Match", tag)
	assert.Equal(t, http.StatusNotModified, res.status)
}

func TestEventsTypes(t *testing.T) {
	h := MustHarness(t, nil)
	h.r.addEvents(testID, 10)
	res, p := h.events(t, "?types=sale")
	require.Equal(t, 200, res.status, "%s", res.body)
	require.Len(t, p.Data, 5)
	for _, e := range p.Data {
		assert.Equal(t, "sale", e.Type)
	}
	_, p = h.events(t, "?types=sale,listing_added&limit=100")
	assert.Len(t, p.Data, 10)
	_, p = h.events(t, "?types=floor_changed")
	assert.Empty(t, p.Data)
	require.NotNil(t, p.Pagination.NextCursor, "the head page skips what was filtered out")
	h.r.addEvents(testID, 1)
	_, p = h.events(t, "?types=sale&cursor="+*p.Pagination.NextCursor)
	require.Len(t, p.Data, 1)
	assert.Equal(t, "s11-0-x", p.Data[0].EventID)
}

func TestEventsErrors(t *testing.T) {
	h := MustHarness(t, nil)
	h.r.addEvents(testID, 6)
	_, p := h.events(t, "?limit=2")
	old := *p.Pagination.NextCursor // after event 2
	sales := h.get("/v1/collections/" + testID + "/sales?limit=2")
	require.Equal(t, 200, sales.status)
	salesCursor, _ := pagination(t, sales)

	h.r.mu.Lock()
	h.r.feeds[testID].first = 5 // events 1-4 dropped
	h.r.mu.Unlock()
	tests := []struct {
		name, target string
		status       int
	}{
		{"unknown collection", "/v1/collections/nope/events", 404},
		{"cursor older than retention", "/v1/collections/" + testID + "/events?cursor=" + old, 400},
		{"empty cursor", "/v1/collections/" + testID + "/events?cursor=", 400},
		{"null cursor", "/v1/collections/" + testID + "/events?cursor=null", 400},
		{"sales cursor", "/v1/collections/" + testID + "/events?cursor=" + salesCursor, 400},
		{"unknown type", "/v1/collections/" + testID + "/events?types=transfer", 400},
		{"empty types", "/v1/collections/" + testID + "/events?types=", 400},
		{"limit 0", "/v1/collections/" + testID + "/events?limit=0", 400},
		{"limit 101", "/v1/collections/" + testID + "/events?limit=101", 400},
		{"empty feed", "/v1/collections/" + noContractID + "/events", 200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := h.get(tc.target)
			require.Equal(t, tc.status, res.status, "%s", res.body)
			if tc.status == 400 {
				assert.Equal(t, "bad_request", res.errorCode(t))
				assert.Equal(t, "no-store", res.header.Get("Cache-Control"))
			}
		})
	}
	res := h.get("/v1/collections/" + testID + "/events?cursor=" + old)
	assert.Contains(t, string(res.body), `s5-0-x`, "the 400 names the oldest event kept")

	_, p = h.events(t, "")
	res = h.get("/v1/collections/" + testID + "/listings?cursor=" + *p.Pagination.NextCursor)
	assert.Equal(t, 400, res.status, "an events cursor is not a listings cursor")
}

// TestEventsListBucket: the feed counts in the list bucket.
func TestEventsListBucket(t *testing.T) {
	h := MustHarness(t, func(c *Config) { c.RateList, c.RateItem = 1, 100 })
	require.Equal(t, 200, h.get("/v1/collections/"+testID+"/events").status)
	res := h.get("/v1/collections/" + testID + "/sales")
	assert.Equal(t, http.StatusTooManyRequests, res.status)
	assert.Equal(t, 200, h.get("/v1/collections/"+testID).status, "the item bucket is untouched")
}

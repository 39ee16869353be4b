package httpapi

import (
	"bytes"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/render"
)

var listEndpoints = map[string]string{
	"collections": "/v1/collections",
	"listings":    "/v1/collections/" + testID + "/listings",
	"sales":       "/v1/collections/" + testID + "/sales",
}

// TestLimitParam: limit is 1..100, default 25; out of range or malformed is
// 400, never clamped.
func TestLimitParam(t *testing.T) {
	tests := []struct {
		name, q string
		status  int
		n       int // items expected (when 200), given enough data
	}{
		{"default", "", 200, 25},
		{"one", "limit=1", 200, 1},
		{"max", "limit=100", 200, 100},
		{"leading zero", "limit=07", 200, 7},
		{"zero", "limit=0", 400, 0},
		{"101", "limit=101", 400, 0},
		{"negative", "limit=-1", 400, 0},
		{"huge", "limit=99999999999999999999", 400, 0},
		{"empty", "limit=", 400, 0},
		{"fraction", "limit=1.5", 400, 0},
		{"word", "limit=ten", 400, 0},
		{"plus", "limit=%2B5", 400, 0},
		{"space", "limit=5%20", 400, 0},
	}
	for ep, path := range listEndpoints {
		for _, tc := range tests {
			t.Run(ep+"/"+tc.name, func(t *testing.T) {
				h := MustHarness(t, nil)
				h.r.putListings(testID, listingsView(2, 150, nil))
				h.r.sales[testID] = nil
				for i := 0; i < 150; i++ {
					h.r.sales[testID] = append(h.r.sales[testID], saleItem(testID, i))
				}
				h.r.browse["volume|"] = nil
				for i := 0; i < 150; i++ {
					h.r.browse["volume|"] = append(h.r.browse["volume|"], summaryItem("c"+strconv.Itoa(i), i))
				}
				res := h.get(path + "?" + tc.q)
				require.Equal(t, tc.status, res.status, "%s", res.body)
				if tc.status == 400 {
					assert.Equal(t, "bad_request", res.errorCode(t))
					return
				}
				assert.Len(t, data(t, res), tc.n)
			})
		}
	}
}

// TestCursorRejections: empty, null, hand-built, tampered, expired,
// other-endpoint, other-collection and other-query cursors are 400.
func TestCursorRejections(t *testing.T) {
	h := MustHarness(t, func(c *Config) { c.CursorTTL = time.Hour })
	h.r.putListings(otherID, listingsView(1, 30, nil))
	h.r.collections[otherID] = render.CollectionView{ID: otherID, Chain: readmodel.Base, HasContract: true, Version: 1, Detail: detailJSON}
	h.r.sales[otherID] = h.r.sales[testID]
	mint := func(path string) string {
		t.Helper()
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		res := h.get(path + sep + "limit=2")
		require.Equal(t, 200, res.status, "%s", res.body)
		next, more := pagination(t, res)
		require.True(t, more)
		require.NotEmpty(t, next)
		return next
	}
	cur := map[string]string{}
	for ep, path := range listEndpoints {
		cur[ep] = mint(path)
	}
	cur["listings-other"] = mint("/v1/collections/" + otherID + "/listings")
	cur["sales-other"] = mint("/v1/collections/" + otherID + "/sales")
	cur["collections-floor"] = mint("/v1/collections?sort=floor")
	cur["collections-eth"] = mint("/v1/collections?chain=ethereum")

	tamper := func(s string) string {
		b := []byte(s)
		if b[len(b)/2] == 'A' {
			b[len(b)/2] = 'B'
		} else {
			b[len(b)/2] = 'A'
		}
		return string(b)
	}
	type tcase struct{ name, path, cursor string }
	var tests []tcase
	for ep, path := range listEndpoints {
		tests = append(tests,
			tcase{ep + "/empty", path, ""},
			tcase{ep + "/null", path, "null"},
			tcase{ep + "/hand built", path, "10"},
			tcase{ep + "/base64 junk", path, "eyJvZmZzZXQiOjI1fQ"},
			tcase{ep + "/tampered", path, tamper(cur[ep])},
			tcase{ep + "/truncated", path, cur[ep][:len(cur[ep])-3]},
			tcase{ep + "/too long", path, strings.Repeat("A", 5000)},
		)
		for other := range listEndpoints {
			if other != ep {
				tests = append(tests, tcase{ep + "/minted by " + other, path, cur[other]})
			}
		}
	}
	tests = append(tests,
		tcase{"listings/other collection", listEndpoints["listings"], cur["listings-other"]},
		tcase{"sales/other collection", listEndpoints["sales"], cur["sales-other"]},
		tcase{"collections/other sort", "/v1/collections", cur["collections-floor"]},
		tcase{"collections/other chain", "/v1/collections", cur["collections-eth"]},
		tcase{"collections/cursor of chain without chain", "/v1/collections?sort=volume", cur["collections-eth"]},
	)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sep := "?"
			if strings.Contains(tc.path, "?") {
				sep = "&"
			}
			res := h.get(tc.path + sep + "cursor=" + url.QueryEscape(tc.cursor))
			require.Equal(t, http.StatusBadRequest, res.status, "%s", res.body)
			assert.Equal(t, "bad_request", res.errorCode(t))
		})
	}
	t.Run("valid cursors still work", func(t *testing.T) {
		for ep, path := range listEndpoints {
			assert.Equal(t, 200, h.get(path+"?cursor="+cur[ep]).status, ep)
		}
		assert.Equal(t, 200, h.get("/v1/collections?sort=floor&cursor="+cur["collections-floor"]).status)
	})
	t.Run("same collection through another id form", func(t *testing.T) {
		assert.Equal(t, 200, h.get("/v1/collections/"+testSlug+"/listings?cursor="+cur["listings"]).status)
		assert.Equal(t, 200, h.get("/v1/collections/"+testContract+"/sales?cursor="+cur["sales"]).status)
	})
	t.Run("expired", func(t *testing.T) {
		h.clock.Add(time.Hour + 2*time.Minute)
		for ep, path := range listEndpoints {
			res := h.get(path + "?cursor=" + cur[ep])
			assert.Equal(t, http.StatusBadRequest, res.status, ep)
		}
	})
	t.Run("other key", func(t *testing.T) {
		h2 := MustHarness(t, func(c *Config) { c.CursorKey = []byte("another key") })
		res := h2.get(listEndpoints["sales"] + "?cursor=" + cur["sales"])
		assert.Equal(t, http.StatusBadRequest, res.status)
	})
}

const otherID = "base_0x2222222222222222222222222222222222222222"

func TestCollectionsBrowse(t *testing.T) {
	t.Run("defaults and walk", func(t *testing.T) {
		h := MustHarness(t, nil)
		var ids []string
		next := ""
		for page := 0; ; page++ {
			require.Less(t, page, 10)
			target := "/v1/collections?limit=3"
			if next != "" {
				target += "&cursor=" + next
			}
			res := h.get(target)
			require.Equal(t, 200, res.status, "%s", res.body)
			for _, it := range data(t, res) {
				ids = append(ids, it.(map[string]any)["id"].(string))
			}
			var more bool
			next, more = pagination(t, res)
			if !more {
				assert.Empty(t, next, "nextCursor null on the last page")
				assert.Contains(t, string(res.body), `"nextCursor":null`)
				break
			}
		}
		assert.Equal(t, []string{"c0", "c1", "c2", "c3", "c4", "c5", "c6"}, ids)
		assert.Equal(t, [2]string{"volume", ""}, h.r.lastBrowse)
	})
	tests := []struct {
		name, q string
		status  int
		sort    string
		chain   string
	}{
		{"sort floor", "sort=floor", 200, "floor", ""},
		{"sort recent", "sort=recent", 200, "recent", ""},
		{"chain", "chain=ethereum", 200, "volume", "ethereum"},
		{"robinhood in the enumeration", "chain=robinhood", 200, "volume", "robinhood"},
		{"unknown sort", "sort=price", 400, "", ""},
		{"empty sort", "sort=", 400, "", ""},
		{"unknown chain", "chain=bitcoin", 400, "", ""},
		{"empty chain", "chain=", 400, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := MustHarness(t, nil)
			res := h.get("/v1/collections?" + tc.q)
			require.Equal(t, tc.status, res.status, "%s", res.body)
			if tc.status == 200 {
				assert.Equal(t, [2]string{tc.sort, tc.chain}, h.r.lastBrowse)
			} else {
				assert.Equal(t, "bad_request", res.errorCode(t))
			}
		})
	}
	t.Run("index unreachable is 502", func(t *testing.T) {
		h := MustHarness(t, nil)
		h.r.setErr("Browse", readmodel.Errorf(readmodel.UpstreamError, "collection index unreachable"))
		res := h.get("/v1/collections")
		require.Equal(t, 502, res.status)
		assert.Equal(t, "upstream_error", res.errorCode(t))
	})
}

func TestFloor(t *testing.T) {
	t.Run("updatedAt is the request time", func(t *testing.T) {
		h := MustHarness(t, nil)
		res := h.get("/v1/collections/" + testSlug + "/floor")
		require.Equal(t, 200, res.status, "%s", res.body)
		d := res.json(t)["data"].(map[string]any)
		assert.Equal(t, readmodel.FormatTime(t0), d["updatedAt"])
		assert.Equal(t, true, d["aggregated"])
		h.clock.Add(7 * time.Second)
		d = h.get("/v1/collections/" + testSlug + "/floor").json(t)["data"].(map[string]any)
		assert.Equal(t, readmodel.FormatTime(t0.Add(7*time.Second)), d["updatedAt"])
		// The formatted time is reused within its millisecond only.
		h.clock.Add(999 * time.Microsecond)
		d = h.get("/v1/collections/" + testSlug + "/floor").json(t)["data"].(map[string]any)
		assert.Equal(t, readmodel.FormatTime(t0.Add(7*time.Second)), d["updatedAt"])
		h.clock.Add(time.Microsecond)
		d = h.get("/v1/collections/" + testSlug + "/floor").json(t)["data"].(map[string]any)
		assert.Equal(t, readmodel.FormatTime(t0.Add(7*time.Second+time.Millisecond)), d["updatedAt"])
	})
	t.Run("last-good buyerFloor ages out to the fallback", func(t *testing.T) {
		h := MustHarness(t, nil)
		h.r.floors[testID] = render.FloorView{
			Version: 9, Body: floorBody(testID, "1050000000000000000", true),
			FallbackAfter: t0.Add(10 * time.Minute), Fallback: floorBody(testID, "", false),
		}
		d := h.get("/v1/collections/" + testID + "/floor").json(t)["data"].(map[string]any)
		assert.Equal(t, true, d["stale"])
		assert.NotNil(t, d["buyerFloor"])
		h.clock.Add(10 * time.Minute)
		d = h.get("/v1/collections/" + testID + "/floor").json(t)["data"].(map[string]any)
		assert.Equal(t, false, d["stale"])
		assert.Nil(t, d["buyerFloor"], "null is unknown, not zero")
	})
	tests := []struct {
		name, id string
	}{
		{"unresolved", "nope"},
		{"no usable chain", noChainID},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := MustHarness(t, nil)
			res := h.get("/v1/collections/" + tc.id + "/floor")
			require.Equal(t, 404, res.status)
			assert.Equal(t, "not_found", res.errorCode(t))
		})
	}
}

// TestCollectionsUnknownIndexIs502: with no collection known at all (the
// collection index never read), the unfiltered first page is 502
// upstream_error, never an empty 200; a chain filter matching nothing is a
// legitimate empty 200. That start-up state is logged once, at info, not
// as an error per request.
func TestCollectionsUnknownIndexIs502(t *testing.T) {
	h := MustHarness(t, nil)
	var logs bytes.Buffer
	h.srv.log = zerolog.New(&logs)
	for k := range h.r.browse {
		delete(h.r.browse, k)
	}
	defer func() {
		lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
		require.Len(t, lines, 1, "one line for both 502s: %s", logs.String())
		assert.Contains(t, lines[0], `"level":"info"`)
		assert.Contains(t, lines[0], "no collection index read yet")
	}()
	tests := []struct {
		name, query string
		status      int
	}{
		{"unfiltered first page", "", 502},
		{"another sort", "?sort=recent", 502},
		{"chain filter with no match", "?chain=robinhood", 200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := h.get("/v1/collections" + tc.query)
			require.Equal(t, tc.status, res.status, "%s", res.body)
			if tc.status == 502 {
				assert.Equal(t, "upstream_error", res.errorCode(t))
				return
			}
			assert.Empty(t, data(t, res))
		})
	}
}

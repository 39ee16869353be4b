package httpapi

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel/render"
)

func TestFloorHistory(t *testing.T) {
	hour := t0.Truncate(time.Hour) // 2026-11-22T12:00:00Z, the harness's hour
	observed := render.ViewValue{Version: 4, Record: &render.FloorHistory{
		Hours: []render.FloorBucket{
			{Start: hour.Add(-2 * time.Hour).Unix(), Open: "1000000000000000000", High: "1200000000000000000", Low: "900000000000000000", Close: "1100000000000000000"},
			{Start: hour.Unix(), Open: "1100000000000000000", High: "1100000000000000000", Low: "1100000000000000000", Close: "1100000000000000000"},
		},
		Days: []render.FloorBucket{
			{Start: hour.Truncate(24 * time.Hour).Unix(), Open: "1000000000000000000", High: "1200000000000000000", Low: "900000000000000000", Close: "1100000000000000000"},
		},
	}}
	base := "/v1/collections/" + testSlug + "/floor/history"
	tests := []struct {
		name    string
		target  string
		none    bool // the collection has observed nothing yet
		status  int
		message string
		points  int
		first   string // the first point's start
		priced  map[int]string
	}{
		{name: "default: a week of hours up to now", target: base, status: 200, points: 168,
			first: "2026-11-15T13:00:00Z", priced: map[int]string{165: "1.2", 167: "1.1"}},
		{name: "days", target: base + "?interval=1d&from=2026-11-20T00:00:00Z", status: 200, points: 3,
			first: "2026-11-20T00:00:00Z", priced: map[int]string{2: "1.2"}},
		{name: "a range of hours, bounds inside intervals", target: base + "?from=2026-11-22T10:30:00Z&to=2026-11-22T11:59:59Z", status: 200, points: 2,
			first: "2026-11-22T10:00:00Z", priced: map[int]string{0: "1.2"}},
		{name: "another offset's time", target: base + "?from=2026-11-22T11:00:00%2B01:00&to=2026-11-22T12:00:00Z", status: 200, points: 3,
			first: "2026-11-22T10:00:00Z", priced: map[int]string{0: "1.2", 2: "1.1"}},
		{name: "nothing observed: nulls", target: base + "?from=2026-11-22T10:00:00Z", none: true, status: 200, points: 3, first: "2026-11-22T10:00:00Z"},
		{name: "unknown interval", target: base + "?interval=2h", status: 400, message: "interval must be 1h or 1d"},
		{name: "from after to", target: base + "?from=2026-11-22T11:00:00Z&to=2026-11-22T10:00:00Z", status: 400, message: "from and to must be RFC 3339 date-times, from not after to"},
		{name: "from not a date-time", target: base + "?from=yesterday", status: 400, message: "from and to must be RFC 3339 date-times, from not after to"},
		{name: "more hours than kept", target: base + "?from=2026-11-01T00:00:00Z", status: 400, message: "with interval 1h, from and to may span at most 168 hours (the hours kept)"},
		{name: "more days than kept", target: base + "?interval=1d&from=2026-01-01T00:00:00Z", status: 400, message: "with interval 1d, from and to may span at most 90 days (the days kept)"},
		{name: "unresolved id", target: "/v1/collections/nope/floor/history", status: 404},
		{name: "no usable chain", target: "/v1/collections/" + noChainID + "/floor/history", status: 404},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := MustHarness(t, nil)
			if !tc.none {
				h.r.floorHistory[testID] = observed
			}
			res := h.get(tc.target)
			require.Equal(t, tc.status, res.status, "%s", res.body)
			if tc.status != http.StatusOK {
				if tc.message != "" {
					assert.Equal(t, tc.message, res.json(t)["error"].(map[string]any)["message"])
				}
				return
			}
			d := res.json(t)["data"].(map[string]any)
			assert.Equal(t, testID, d["collectionId"])
			pts := d["points"].([]any)
			require.Len(t, pts, tc.points)
			assert.Equal(t, tc.first, d["from"])
			assert.Equal(t, tc.first, pts[0].(map[string]any)["start"])
			assert.Equal(t, pts[len(pts)-1].(map[string]any)["start"], d["to"])
			for i, p := range pts {
				pm := p.(map[string]any)
				high, ok := tc.priced[i]
				if !ok {
					for _, f := range []string{"open", "high", "low", "close"} {
						assert.Nil(t, pm[f], "point %d %s: not observed", i, f)
					}
					continue
				}
				require.NotNil(t, pm["high"], "point %d", i)
				pr := pm["high"].(map[string]any)
				assert.Equal(t, high, fmtDecimal(pr["decimal"].(float64)), "point %d", i)
				assert.Equal(t, "ETH", pr["currency"])
				assert.Nil(t, pr["usd"], "past rates are not kept")
			}
		})
	}
}

func fmtDecimal(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

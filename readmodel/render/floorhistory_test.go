package render

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel"
)

func TestFloorHistoryObserve(t *testing.T) {
	at := time.Date(2026, 11, 22, 10, 5, 0, 0, time.UTC)
	hour := func(h int) int64 { return at.Truncate(time.Hour).Add(time.Duration(h) * time.Hour).Unix() }
	type obs struct {
		at      time.Time
		raw     string
		changed bool
	}
	tests := []struct {
		name  string
		obs   []obs
		hours []FloorBucket
		days  int
	}{
		{name: "one observation opens a bucket", obs: []obs{{at, "100", true}},
			hours: []FloorBucket{{hour(0), "100", "100", "100", "100"}}, days: 1},
		{name: "within the hour: high, low, close move; open stays", obs: []obs{{at, "100", true}, {at.Add(time.Minute), "150", true}, {at.Add(2 * time.Minute), "90", true}, {at.Add(3 * time.Minute), "120", true}},
			hours: []FloorBucket{{hour(0), "100", "150", "90", "120"}}, days: 1},
		{name: "the same floor again changes nothing", obs: []obs{{at, "100", true}, {at.Add(time.Minute), "100", false}},
			hours: []FloorBucket{{hour(0), "100", "100", "100", "100"}}, days: 1},
		{name: "prices compare as numbers, not text", obs: []obs{{at, "99", true}, {at.Add(time.Minute), "100", true}},
			hours: []FloorBucket{{hour(0), "99", "100", "99", "100"}}, days: 1},
		{name: "a later hour opens the next bucket, gaps stay gaps", obs: []obs{{at, "100", true}, {at.Add(3 * time.Hour), "110", true}},
			hours: []FloorBucket{{hour(0), "100", "100", "100", "100"}, {hour(3), "110", "110", "110", "110"}}, days: 1},
		{name: "an older observation moves its bucket's high and low, not its close", obs: []obs{{at.Add(time.Hour), "100", true}, {at, "80", true}, {at.Add(time.Minute), "70", true}, {at.Add(2 * time.Minute), "75", true}}, // the last: the day's close
			hours: []FloorBucket{{hour(0), "80", "80", "70", "80"}, {hour(1), "100", "100", "100", "100"}}, days: 1},
		{name: "no price, no observation", obs: []obs{{at, "", false}}},
		{name: "a week of hours is kept", obs: []obs{{at, "100", true}, {at.Add(FloorHoursKept * time.Hour), "200", true}},
			hours: []FloorBucket{{hour(FloorHoursKept), "200", "200", "200", "200"}}, days: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var h FloorHistory
			for i, o := range tc.obs {
				assert.Equal(t, o.changed, h.Observe(o.at, o.raw), "observation %d", i)
			}
			assert.Equal(t, tc.hours, h.Hours)
			assert.Len(t, h.Days, tc.days)
		})
	}
}

func TestFloorHistoryJSON(t *testing.T) {
	day := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	h := &FloorHistory{Days: []FloorBucket{{Start: day.Add(24 * time.Hour).Unix(), Open: "1000000000000000000", High: "2000000000000000000", Low: "500000000000000000", Close: "1500000000000000000"}}}
	var got struct {
		Data struct {
			Interval string `json:"interval"`
			From     string `json:"from"`
			To       string `json:"to"`
			Points   []struct {
				Start                  string
				Open, High, Low, Close *readmodel.Price
			} `json:"points"`
		}
	}
	b := FloorHistoryJSON("c1", readmodel.Ethereum, h, FloorDay, day.Add(time.Hour), day.Add(50*time.Hour))
	require.NoError(t, json.Unmarshal(append(append([]byte(`{"data":`), b...), '}'), &got))
	assert.Equal(t, "1d", got.Data.Interval)
	assert.Equal(t, "2026-11-20T00:00:00Z", got.Data.From)
	assert.Equal(t, "2026-11-22T00:00:00Z", got.Data.To)
	require.Len(t, got.Data.Points, 3)
	assert.Nil(t, got.Data.Points[0].Open, "no observation that day")
	p := got.Data.Points[1]
	require.NotNil(t, p.Open)
	assert.Equal(t, []float64{1, 2, 0.5, 1.5}, []float64{p.Open.Decimal, p.High.Decimal, p.Low.Decimal, p.Close.Decimal})
	assert.Nil(t, p.Close.USD)
	assert.Nil(t, got.Data.Points[2].High)
}

func TestFloorHistoryRecord(t *testing.T) {
	at := time.Date(2026, 11, 22, 10, 5, 0, 0, time.UTC)
	steady, moving := &FloorHistory{}, &FloorHistory{}
	for i := 0; i < FloorHoursKept; i++ {
		steady.Observe(at.Add(time.Duration(i)*time.Hour), "1250000000000000000")
		moving.Observe(at.Add(time.Duration(i)*time.Hour), "1250000000000000000")
		moving.Observe(at.Add(time.Duration(i)*time.Hour+time.Minute), "1300000000000000000")
	}
	tests := []struct {
		name string
		h    *FloorHistory
		max  int // bytes the record may take (the store adds its 8-byte version)
	}{
		{name: "empty", h: &FloorHistory{}, max: 4},
		{name: "a week of a steady floor: about 3 bytes an interval", h: steady, max: 20 + 3*(FloorHoursKept+8) + 8},
		{name: "a week of a floor that moves every hour", h: moving, max: 40 + 6*(FloorHoursKept+8) + 8},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := FloorHistoryView.Encode(tc.h)
			assert.LessOrEqual(t, len(b), tc.max)
			rec, _, err := FloorHistoryView.Decode(b)
			require.NoError(t, err)
			got := rec.(*FloorHistory)
			assert.Equal(t, len(tc.h.Hours), len(got.Hours))
			if len(tc.h.Hours) > 0 {
				assert.Equal(t, tc.h.Hours, got.Hours)
				assert.Equal(t, tc.h.Days, got.Days)
			}
			for cut := 0; cut < len(b); cut++ {
				_, _, err := FloorHistoryView.Decode(b[:cut])
				assert.Error(t, err, "cut at %d", cut)
			}
		})
	}
}

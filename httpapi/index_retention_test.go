package httpapi

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel"
)

// TestCollectionsIndexRetention: /v1/collections follows the listings rule.
// While the collection index fails, its last good summaries are served
// for RowRetention after its last success, then 502 upstream_error.
func TestCollectionsIndexRetention(t *testing.T) {
	const retention = 10 * time.Minute
	good := t0.Add(-retention) // the clock is t0
	tests := []struct {
		name   string
		status *readmodel.PollStatus
		err    error
		target string
		want   int
	}{
		{"no status applied yet", nil, nil, "/v1/collections", 200},
		{"healthy", &readmodel.PollStatus{OK: true, LastGoodAt: t0.Add(-time.Hour)}, nil, "/v1/collections", 200},
		{"failing within retention", &readmodel.PollStatus{LastGoodAt: good.Add(time.Second), FailingSince: good.Add(time.Minute)}, nil, "/v1/collections", 200},
		{"failing exactly retention", &readmodel.PollStatus{LastGoodAt: good, FailingSince: good.Add(time.Minute)}, nil, "/v1/collections", 502},
		{"failing past retention", &readmodel.PollStatus{LastGoodAt: good.Add(-time.Hour), FailingSince: good}, nil, "/v1/collections?chain=ethereum&sort=floor", 502},
		{"failing, never good", &readmodel.PollStatus{FailingSince: t0.Add(-time.Second)}, nil, "/v1/collections", 502},
		{"status unreadable", nil, assert.AnError, "/v1/collections", 502},
		{"bad parameters still 400", &readmodel.PollStatus{FailingSince: t0}, nil, "/v1/collections?limit=0", 400},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := MustHarness(t, func(c *Config) { c.RowRetention = retention })
			h.r.index = tc.status
			if tc.err != nil {
				h.r.setErr("CollectionIndexStatus", tc.err)
			}
			res := h.get(tc.target)
			require.Equal(t, tc.want, res.status, "%s", res.body)
			switch tc.want {
			case 502:
				assert.Equal(t, "upstream_error", res.errorCode(t))
				assert.Equal(t, "no-store", res.header.Get("Cache-Control"))
				assert.Zero(t, h.r.count("Browse"), "no page read for a stale index")
			case 200:
				assert.Len(t, res.json(t)["data"], 7)
			}
		})
	}
	t.Run("the other routes do not ask", func(t *testing.T) {
		h := MustHarness(t, nil)
		h.r.index = &readmodel.PollStatus{FailingSince: t0}
		assert.Equal(t, 200, h.get("/v1/collections/"+testID).status)
		assert.Equal(t, 200, h.get("/v1/collections/"+testID+"/listings").status)
		assert.Zero(t, h.r.count("CollectionIndexStatus"))
	})
}

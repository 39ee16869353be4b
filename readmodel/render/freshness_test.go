package render

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel"
)

func TestFreshnessResolve(t *testing.T) {
	ob, mi := string(readmodel.SourceOrderBook), string(readmodel.SourceIndexerMirror)
	at := func(m int64) time.Time { return time.UnixMilli(m) }
	var pt PollTimes
	pt[readmodel.PollIndex(ob)] = 5000
	pt[readmodel.PollIndex(mi)] = 7000
	cases := []struct {
		name string
		add  func(f *Freshness)
		want int64
	}{
		{"no source: unknown", func(f *Freshness) {}, 0},
		{"healthy sources: the older poll", func(f *Freshness) { f.Add(ob, nil); f.Add(mi, &readmodel.PollStatus{OK: true, LastGoodAt: at(9000)}) }, 5000},
		{"a failing source: its last success", func(f *Freshness) {
			f.Add(ob, &readmodel.PollStatus{OK: false, LastGoodAt: at(3000)})
			f.Add(mi, nil)
		}, 3000},
		{"failing, never succeeded: unknown", func(f *Freshness) { f.Add(ob, &readmodel.PollStatus{OK: false}) }, 0},
		{"healthy, never polled: unknown", func(f *Freshness) { f.Add(string(readmodel.SourceAnalytics), nil) }, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var f Freshness
			tc.add(&f)
			assert.Equal(t, tc.want, f.Resolve(&pt))
		})
	}
}

func TestSpliceAsOf(t *testing.T) {
	cases := []struct {
		name    string
		body    string
		maxTail int
		want    string // body with asOf 1000 ms spliced; "" when no slot
	}{
		{"last field", `{"a":1,"asOf":null}`, 1, `{"a":1,"asOf":"1970-01-01T00:00:01.000Z"}`},
		{"inside stats", `{"stats":{"asOf":null},"stale":false}`, 16, `{"stats":{"asOf":"1970-01-01T00:00:01.000Z"},"stale":false}`},
		{"too far from the end", `{"asOf":null,"b":"xxxxxxxxxxxxxxxxxxxx"}`, 1, ""},
		{"none", `{"a":1}`, 1, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := []byte(tc.body)
			at, ok := SpliceAsOf(b, tc.maxTail)
			if tc.want == "" {
				assert.False(t, ok)
				return
			}
			require.True(t, ok)
			out := append(AppendAsOf(append([]byte(nil), b[:at]...), 1000), b[at+4:]...)
			assert.Equal(t, tc.want, string(out))
		})
	}
}

package main

import (
	"encoding/xml"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSlope(t *testing.T) {
	tests := []struct {
		name   string
		xs, ys []float64
		from   float64
		want   float64
		ok     bool
	}{
		{"flat", []float64{0, 1, 2, 3}, []float64{5, 5, 5, 5}, 0, 0, true},
		{"rising", []float64{0, 1, 2, 3}, []float64{1, 3, 5, 7}, 0, 2, true},
		{"warm-up left out", []float64{0, 1, 2, 3, 4}, []float64{0, 100, 100, 100, 100}, 1, 0, true},
		{"too few points", []float64{0, 1, 2}, []float64{1, 2, 3}, 1, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := slope(tc.xs, tc.ys, tc.from)
			require.Equal(t, tc.ok, ok)
			assert.InDelta(t, tc.want, got, 1e-9)
		})
	}
}

func TestParseWrk(t *testing.T) {
	out := `Running 3m test @ http://127.0.0.1:1
  2 threads and 300 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency    21.50ms   10.00ms 500.00ms   90.00%
  1234567 requests in 3.00m, 10.00GB read
  Socket errors: connect 0, read 2, write 0, timeout 3
  Non-2xx or 3xx responses: 7
Requests/sec:   6858.71
`
	w := parseWrk(out)
	assert.Equal(t, int64(1234567), w.requests)
	assert.Equal(t, int64(7), w.non2xx)
	assert.Equal(t, int64(5), w.sockErrs)
	assert.InDelta(t, 6858.71, w.rps, 1e-9)
}

// TestReportVerdict: the soak fails on any non-2xx, a growing RSS or a
// digest that differs from the replay's, and its SVG is well-formed XML.
func TestReportVerdict(t *testing.T) {
	mk := func(grow float64) *report {
		r := &report{opts: options{duration: 3 * time.Minute, warmup: time.Minute, maxSlope: 5, collections: 10, connections: 1},
			wrk: wrkResult{requests: 100}, digestLive: "d", digestReplay: "d"}
		for i := 0; i <= 18; i++ {
			at := time.Duration(i) * 10 * time.Second
			r.samples = append(r.samples, sample{at: at, rssMB: 500 + grow*at.Minutes(), heapMB: 200, goroutines: 40})
		}
		return r
	}
	assert.NoError(t, mk(0).verdict())
	assert.ErrorContains(t, mk(20).verdict(), "RSS grows")
	withSales := func(grow, sales float64) *report {
		r := mk(grow)
		for i := range r.samples {
			r.samples[i].salesMB = sales * r.samples[i].at.Minutes()
		}
		return r
	}
	assert.NoError(t, withSales(9, 6).verdict(), "the sales history the store must keep is growth by design")
	assert.ErrorContains(t, withSales(20, 6).verdict(), "beyond the sales history")
	r := mk(0)
	r.wrk.non2xx = 1
	assert.ErrorContains(t, r.verdict(), "non-2xx")
	r = mk(0)
	r.digestReplay = "e"
	assert.ErrorContains(t, r.verdict(), "digest")
	var doc struct{ XMLName xml.Name }
	require.NoError(t, xml.Unmarshal([]byte(mk(3).svg()), &doc))
	assert.Equal(t, "svg", doc.XMLName.Local)
}

func TestParseSmaps(t *testing.T) {
	smaps := `00400000-00c00000 r-xp 00000000 08:01 123 /usr/bin/marketd
Size:               8192 kB
Rss:                4096 kB
7f0000000000-7f0010000000 rw-s 00000000 08:01 456 /d/badger/000001.vlog
Size:             262144 kB
Rss:               10240 kB
Pss:               10240 kB
7f0010000000-7f0010800000 r--s 00000000 08:01 457 /d/badger/000002.sst
Rss:                2048 kB
7f0020000000-7f0020800000 r--s 00000000 08:01 458 /d/badger/000003.sst
Rss:                1024 kB
7f0030000000-7f0034000000 rw-s 00000000 08:01 459 /d/badger/00004.mem
Rss:                 512 kB
7f0040000000-7f0050000000 rw-p 00000000 00:00 0
Rss:              100000 kB
VmFlags: rd wr mr mw me ac sd
`
	vlog, sst, mem, err := parseSmaps(strings.NewReader(smaps))
	require.NoError(t, err)
	assert.InDelta(t, 10, vlog, 1e-9)
	assert.InDelta(t, 3, sst, 1e-9)
	assert.InDelta(t, 0.5, mem, 1e-9)
}

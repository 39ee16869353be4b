package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/marketd/marketd/ingest/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const wrkOut = `Running 10s test @ http://127.0.0.1:8080/v1/collections
  1 threads and 64 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     2.07ms  315.21us  10.12ms   91.23%
    Req/Sec    31.05k     1.62k   33.60k    79.00%
  Latency Distribution
     50%  843.00us
     75%    2.12ms
     90%    2.29ms
     99%    3.09ms
  309020 requests in 10.00s, 1.88GB read
  Non-2xx or 3xx responses: 12
  Socket errors: connect 0, read 1, write 0, timeout 5
Requests/sec:  30900.25
Transfer/sec:    192.31MB
`

func TestParseWrk(t *testing.T) {
	tests := []struct {
		name    string
		out     string
		want    Stat
		wantErr bool
	}{
		{
			name: "full output with errors",
			out:  wrkOut,
			want: Stat{RPS: 30900.25, P50: 843 * time.Microsecond, P99: 3090 * time.Microsecond, Requests: 309020, Non2xx: 12, SockErrs: 6},
		},
		{
			name: "clean run in seconds",
			out:  "  Latency Distribution\n     50%    1.00s\n     99%    2.50s\n  10 requests in 2.00s, 1KB read\nRequests/sec:      5.00\n",
			want: Stat{RPS: 5, P50: time.Second, P99: 2500 * time.Millisecond, Requests: 10},
		},
		{name: "no latency distribution", out: "Requests/sec: 10\n", wantErr: true},
		{name: "no requests/sec", out: "     50%  1ms\n     99%  2ms\n", wantErr: true},
		{name: "bad unit", out: "     50%  1xs\n     99%  2ms\nRequests/sec: 1\n", wantErr: true},
		{name: "connection refused", out: "unable to connect to 127.0.0.1:1 Connection refused\n", wantErr: true},
		{name: "empty", out: "", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseWrk(tc.out)
			if tc.wantErr {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestMeasuredMedians(t *testing.T) {
	var m Measured
	m.Add(Stat{RPS: 100, P50: 3 * time.Millisecond, P99: 9 * time.Millisecond, Requests: 1000})
	m.Add(Stat{RPS: 300, P50: 1 * time.Millisecond, P99: 7 * time.Millisecond, Requests: 3000})
	m.Add(Stat{RPS: 200, P50: 2 * time.Millisecond, P99: 20 * time.Millisecond, Requests: 2000})
	assert.Equal(t, 200.0, m.Median.RPS)
	assert.Equal(t, 2*time.Millisecond, m.Median.P50)
	assert.Equal(t, 9*time.Millisecond, m.Median.P99, "each figure's median on its own")
	assert.True(t, m.OK())
	m.Add(Stat{RPS: 1, Requests: 1, Non2xx: 1})
	assert.False(t, m.OK(), "a run with a failed response taints the target")
	assert.Equal(t, 150.0, m.Median.RPS, "even count: mean of the middle two")
	var empty *Measured
	assert.False(t, empty.OK())
}

func TestQuietStep(t *testing.T) {
	for _, tc := range []struct {
		name      string
		quiet     int
		cpu, wall time.Duration
		want      int
	}{
		{"idle second counts", 0, 10 * time.Millisecond, time.Second, 1},
		{"idle seconds accumulate", 2, 0, time.Second, 3},
		{"just below the threshold", 1, 149 * time.Millisecond, time.Second, 2},
		{"at the threshold resets", 2, 150 * time.Millisecond, time.Second, 0},
		{"busy resets", 2, 1900 * time.Millisecond, time.Second, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, quietStep(tc.quiet, tc.cpu, tc.wall))
		})
	}
}

func TestSettle(t *testing.T) {
	start := func(t *testing.T, script string) int {
		cmd := exec.Command("sh", "-c", script)
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd.Process.Pid
	}
	t.Run("an idle process settles", func(t *testing.T) {
		_, ok := settle(context.Background(), start(t, "sleep 60"), time.Minute)
		assert.True(t, ok)
	})
	t.Run("a busy process does not within the bound", func(t *testing.T) {
		_, ok := settle(context.Background(), start(t, "while :; do :; done"), 2*time.Second)
		assert.False(t, ok)
	})
	t.Run("a gone process does not", func(t *testing.T) {
		_, ok := settle(context.Background(), 1<<30, time.Minute)
		assert.False(t, ok)
	})
}

func TestParseProc(t *testing.T) {
	status := "Name:\tmarketd\nVmPeak:\t 2000 kB\nVmHWM:\t  524288 kB\nVmRSS:\t  262144 kB\nRssAnon:\t  200000 kB\nRssFile:\t   62144 kB\nThreads:\t9\n"
	m, err := parseStatus(status)
	require.NoError(t, err)
	assert.Equal(t, Mem{RSS: 256 << 20, HWM: 512 << 20, Anon: 200000 << 10, File: 62144 << 10}, m)
	_, err = parseStatus("Name:\tx\nVmRSS:\t1 kB\n")
	assert.Error(t, err, "VmHWM missing")
	_, err = parseStatus("VmRSS:\tlots kB\nVmHWM:\t1 kB\n")
	assert.Error(t, err)

	stat := "4242 (mark etd) (x) S 1 4242 4242 0 -1 4194560 100 0 0 0 1500 250 0 0 20 0 9 0 100 0 0"
	ticks, err := parseStatTicks(stat)
	require.NoError(t, err)
	assert.Equal(t, int64(1750), ticks, "utime + stime, command name with spaces and parentheses")
	_, err = parseStatTicks("4242 (x) S 1 2")
	assert.Error(t, err)
	_, err = parseStatTicks("garbage")
	assert.Error(t, err)
}

func TestSummaryPublishTime(t *testing.T) {
	at := time.Date(2026, 11, 22, 19, 0, 0, 123456789, time.UTC)
	tests := []struct {
		name string
		body string
		ok   bool
	}{
		{"publishedAt", `{"publishedAt":"2026-11-22T19:00:00.123456789Z","rows":3}`, true},
		{"case-insensitive finished", `{"FinishedAt":"2026-11-22T19:00:00.123456789Z"}`, true},
		{"not a time", `{"publishedAt":42}`, false},
		{"no key", `{"position":{"state":3}}`, false},
		{"not JSON", `nope`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := summaryPublishTime([]byte(tc.body))
			assert.Equal(t, tc.ok, ok)
			if tc.ok {
				assert.True(t, at.Equal(got))
			}
		})
	}
}

func TestPercentile(t *testing.T) {
	ds := []time.Duration{5, 1, 4, 2, 3, 10, 9, 8, 7, 6}
	assert.Equal(t, time.Duration(5), percentile(ds, 50))
	assert.Equal(t, time.Duration(10), percentile(ds, 99))
	assert.Equal(t, time.Duration(1), percentile(ds, 0))
	assert.Equal(t, time.Duration(0), percentile(nil, 50))
	assert.Equal(t, time.Duration(5), ds[0], "input not reordered")
}

func TestTokenPath(t *testing.T) {
	s := func(v string) *string { return &v }
	tests := []struct {
		name    string
		c       collectionItem
		it      marketItem
		want    string
		wantErr bool
	}{
		{"evm", collectionItem{ID: "ethereum_0xab"}, marketItem{Chain: "ethereum", ContractAddress: s("0xab"), TokenID: s("17")}, "/v1/tokens/ethereum/0xab/17", false},
		{"solana uses collection mint and asset mint", collectionItem{ID: "solana_abc", ContractAddress: s("AbCmint")}, marketItem{Chain: "solana", Mint: s("AssetMint")}, "/v1/tokens/solana/AbCmint/AssetMint", false},
		{"solana without collection mint", collectionItem{ID: "solana_abc"}, marketItem{Chain: "solana", Mint: s("AssetMint")}, "", true},
		{"evm without token id", collectionItem{ID: "base_0x1"}, marketItem{Chain: "base", ContractAddress: s("0x1")}, "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tokenPath(tc.c, tc.it)
			if tc.wantErr {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestParseOptions(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		check   func(t *testing.T, o Options)
		wantErr bool
	}{
		{name: "defaults are the full run's", check: func(t *testing.T, o Options) {
			assert.Equal(t, 10*time.Second, o.Wrk.Duration)
			assert.Equal(t, 64, o.Wrk.Connections)
			assert.Equal(t, 3, o.Runs)
			assert.Equal(t, 100_000, o.BigSize)
			assert.Equal(t, 20, o.FreshReps)
			assert.Equal(t, "0", o.ServerCore)
			assert.Equal(t, "1", o.Wrk.Core)
		}},
		{name: "quick from env", env: map[string]string{"BENCH_QUICK": "1"}, check: func(t *testing.T, o Options) {
			assert.True(t, o.Quick)
			assert.Equal(t, 2*time.Second, o.Wrk.Duration)
			assert.Equal(t, 1, o.Runs)
		}},
		{name: "flag beats env", args: []string{"--runs", "5"}, env: map[string]string{"BENCH_RUNS": "2", "BENCH_BIG": "0"}, check: func(t *testing.T, o Options) {
			assert.Equal(t, 5, o.Runs)
			assert.Equal(t, 0, o.BigSize)
		}},
		{name: "the full run fits its budget and runs the large node in 3 GiB", check: func(t *testing.T, o Options) {
			assert.Equal(t, 45*time.Minute, o.Budget)
			assert.Equal(t, int64(3<<30), o.MemCap)
			assert.True(t, o.GoBench)
			assert.False(t, o.Medium)
		}},
		{name: "medium from env: the size to iterate on", env: map[string]string{"BENCH_MEDIUM": "1"}, check: func(t *testing.T, o Options) {
			assert.True(t, o.Medium)
			assert.Equal(t, 10_000, o.BigSize)
			assert.Equal(t, 5*time.Second, o.Wrk.Duration)
			assert.Equal(t, 1, o.Runs)
			assert.False(t, o.GoBench, "no go test -bench when iterating")
			assert.Equal(t, int64(3<<30), o.MemCap)
		}},
		{name: "medium flag, a setting still overrides it", args: []string{"--medium", "--big", "20000"}, check: func(t *testing.T, o Options) {
			assert.True(t, o.Medium)
			assert.Equal(t, 20_000, o.BigSize)
		}},
		{name: "memcap off", env: map[string]string{"BENCH_MEMCAP": "0"}, check: func(t *testing.T, o Options) {
			assert.Zero(t, o.MemCap)
		}},
		{name: "memcap flag", args: []string{"--memcap", "8G"}, check: func(t *testing.T, o Options) {
			assert.Equal(t, int64(8<<30), o.MemCap)
		}},
		{name: "bad memcap", env: map[string]string{"BENCH_MEMCAP": "lots"}, wantErr: true},
		{name: "quick and medium", env: map[string]string{"BENCH_QUICK": "1", "BENCH_MEDIUM": "1"}, wantErr: true},
		{name: "zero runs", args: []string{"--runs", "0"}, wantErr: true},
		{name: "sub-second duration", args: []string{"--duration", "100ms"}, wantErr: true},
		{name: "negative big", env: map[string]string{"BENCH_BIG": "-1"}, wantErr: true},
		{name: "unknown flag", args: []string{"--nope"}, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, err := parseOptions(tc.args, env(tc.env), io.Discard)
			if tc.wantErr {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			tc.check(t, o)
		})
	}
}

// fakeMarket is a stand-in marketd: API, admin and simulator on one
// handler. A tick followed by an ingest changes the listings body.
type fakeMarket struct {
	ticks, applied atomic.Int64
}

func (f *fakeMarket) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/_sim/tick":
		f.ticks.Add(1)
	case r.Method == http.MethodPost && r.URL.Path == "/admin/ingest":
		f.applied.Store(f.ticks.Load())
		w.Write([]byte(`{"publishedAt":"` + time.Now().UTC().Format(time.RFC3339Nano) + `"}`))
	case r.URL.Path == "/v1/collections":
		w.Write([]byte(`{"data":[{"id":"ethereum_0xa","chain":"ethereum","contractAddress":"0xa"},{"id":"solana_m","chain":"solana","contractAddress":"MiNt"}]}`))
	case r.URL.Path == "/v1/collections/ethereum_0xa/listings":
		w.Write([]byte(`{"data":[{"chain":"ethereum","contractAddress":"0xa","tokenId":"1","mint":null}],"v":` + jsonInt(f.applied.Load()) + `}`))
	case r.URL.Path == "/v1/collections/solana_m/listings":
		items := strings.Repeat(`{"chain":"solana","contractAddress":null,"tokenId":null,"mint":"AsSet"},`, 3)
		w.Write([]byte(`{"data":[` + strings.TrimSuffix(items, ",") + `]}`))
	case strings.HasSuffix(r.URL.Path, "/floor"):
		w.Write([]byte(`{"data":{"updatedAt":"` + time.Now().Format(time.RFC3339Nano) + `"}}`))
	case strings.HasSuffix(r.URL.Path, "/sales"):
		w.Write([]byte(`{"data":[]}`))
	default:
		http.NotFound(w, r)
	}
}

func jsonInt(n int64) string { b, _ := json.Marshal(n); return string(b) }

func TestPickIDsPrefersFullestListings(t *testing.T) {
	srv := httptest.NewServer(&fakeMarket{})
	t.Cleanup(srv.Close)
	p, err := pickIDs(context.Background(), srv.URL, 10)
	require.NoError(t, err)
	assert.Equal(t, "solana_m", p.Collection.ID)
	assert.Equal(t, 3, p.Listings)
	assert.Equal(t, "/v1/tokens/solana/MiNt/AsSet", p.TokenPath)
	assert.Equal(t, []string{"ethereum_0xa", "solana_m"}, p.Candidates)
	eps := endpoints(p)
	require.Len(t, eps, 10, "no feed on this market: no events pages")
	assert.Equal(t, "/v1/collections/solana_m/listings?limit=100", eps[4].Path)
	assert.Equal(t, "/v1/collections/solana_m/sweep?count=50", eps[7].Path)
	assert.Equal(t, "/v1/collections/solana_m/floor/history?interval=1h", eps[8].Path)
	assert.Equal(t, "/v1/tokens?ids=solana/MiNt/AsSet,solana/MiNt/AsSet,solana/MiNt/AsSet", eps[9].Path)
}

func TestFreshOnceSeesTheChange(t *testing.T) {
	f := &fakeMarket{}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	ctx := context.Background()
	paths := []string{"/v1/collections/ethereum_0xa/listings?limit=100", "/v1/collections/ethereum_0xa/floor", "/v1/collections"}
	base := stableBaseline(ctx, srv.URL, paths)
	assert.NotContains(t, base, paths[1], "a body that embeds the request time is not watched")
	require.Contains(t, base, paths[0])

	s, summary, err := freshOnce(ctx, srv.URL, srv.URL, srv.URL, base, 2, 10*time.Second, 2*time.Second)
	require.NoError(t, err)
	assert.True(t, s.Observed)
	assert.Equal(t, paths[0], s.URL)
	assert.Equal(t, 1, s.Changed)
	assert.Equal(t, 2, s.Watched, "the collections page and the listings page")
	assert.GreaterOrEqual(t, s.LastServed, s.Served)
	assert.True(t, s.HasPublish)
	assert.Contains(t, string(summary), "publishedAt")
	assert.Equal(t, int64(1), f.ticks.Load())

	// Nothing changes when the ingest applies no tick: not observed, no hang.
	base = stableBaseline(ctx, srv.URL, paths)
	f.ticks.Store(f.applied.Load() - 1) // the next tick brings ticks back to applied
	s, _, err = freshOnce(ctx, srv.URL, srv.URL, srv.URL, base, 2, 10*time.Second, 50*time.Millisecond)
	require.NoError(t, err)
	assert.False(t, s.Observed)
}

func TestCaptureWritesBenchrefInputs(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("ETag", `W/"ab"`)
		w.Header().Set("Access-Control-Allow-Origin", "*")
		if r.URL.Path == "/missing" {
			w.WriteHeader(404)
		}
		w.Write([]byte(`{"data":1}`))
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	c, err := capture(context.Background(), srv.URL, "/ok", dir, "ok")
	require.NoError(t, err)
	assert.Equal(t, 10, c.BodyBytes)
	body, err := readFile(c.BodyFile)
	require.NoError(t, err)
	assert.Equal(t, `{"data":1}`, body)
	dump, err := readFile(c.HeaderFile)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(dump, "HTTP/1.1 200 OK\r\n"))
	assert.Contains(t, dump, "Etag: W/\"ab\"\r\n")
	assert.Contains(t, dump, "Access-Control-Allow-Origin: *\r\n")

	_, err = capture(context.Background(), srv.URL, "/missing", dir, "missing")
	assert.Error(t, err, "a non-200 capture is not benchmarked")
}

func readFile(p string) (string, error) {
	b, err := os.ReadFile(p)
	return string(b), err
}

func TestReplayProgress(t *testing.T) {
	tests := []struct {
		name string
		out  string
		want int
		ok   bool
	}{
		{"last progress line wins", "replay: 10 messages, 5 msgs/s, 9 rows/s, 90 messages left\nreplay: 20 messages, 5 msgs/s, 9 rows/s, 80 messages left\n", 20, true},
		{"log lines after progress", "replay: 7 messages, 1 msgs/s\n{\"level\":\"info\",\"message\":\"replay: stopped\"}\n", 7, true},
		{"no progress", "starting\n", 0, false},
		{"garbage count", "replay: many messages\n", 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := replayProgress(tc.out)
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestFindFlag(t *testing.T) {
	tests := []struct{ name, help, want string }{
		{"go flag package style", "  -sim-seed value\n  -sim-tokens-per-collection value\n    tokens", "--sim-tokens-per-collection"},
		{"double dash with =", "--sim-tokens=N  tokens per collection", "--sim-tokens"},
		{"absent", "  -sim-collections value\n  simulator tokens are varied", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, findFlag(tc.help, "sim-tokens"))
		})
	}
}

// TestFreshnessIgnoresCursorRollover: a cursor carries its expiry rounded
// to the minute, so a page's body changes at each minute boundary with no
// change upstream. The watch must not count that as the tick's change,
// while a change of the items still counts.
func TestFreshnessIgnoresCursorRollover(t *testing.T) {
	tests := []struct {
		name       string
		itemsMove  bool // the tick changes the page's items
		wantChange bool
	}{
		{"only the cursor changes", false, false},
		{"the items change too", true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var reads, ticks atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch {
				case r.Method == http.MethodPost && r.URL.Path == "/_sim/tick":
					ticks.Add(1)
				case r.Method == http.MethodPost && r.URL.Path == "/admin/ingest":
					fmt.Fprintf(w, `{"end":%q}`, time.Now().UTC().Format(time.RFC3339Nano))
				default:
					item := 0
					if tt.itemsMove {
						item = int(ticks.Load())
					}
					// A new cursor on every read, as if a minute passed each time.
					fmt.Fprintf(w, `{"data":[%d],"pagination":{"nextCursor":"c%d","hasMore":true}}`, item, reads.Add(1))
				}
			}))
			t.Cleanup(srv.Close)
			ctx := context.Background()
			paths := []string{"/v1/collections/ethereum_0xa/sales?limit=100"}
			base := stableBaseline(ctx, srv.URL, paths)
			require.Contains(t, base, paths[0], "a page differing only in its cursor is watched")
			s, _, err := freshOnce(ctx, srv.URL, srv.URL, srv.URL, base, 1, 10*time.Second, 100*time.Millisecond)
			require.NoError(t, err)
			assert.Equal(t, tt.wantChange, s.Observed)
		})
	}
}

// TestOnlyExpired: a listings page that changed only because items expired
// during the watch is the clock's change, not the tick's.
func TestOnlyExpired(t *testing.T) {
	at := time.Date(2026, 11, 23, 2, 0, 0, 0, time.UTC)
	item := func(id string, exp time.Duration) string {
		e := "null"
		if exp != 0 {
			e = `"` + at.Add(exp).Format(time.RFC3339Nano) + `"`
		}
		return `{"orderId":"` + id + `","expiresAt":` + e + `}`
	}
	page := func(meta string, items ...string) []byte {
		b := `{"data":[` + strings.Join(items, ",") + `],"pagination":{"nextCursor":"","hasMore":true}`
		if meta != "" {
			b += `,"meta":` + meta
		}
		return []byte(b + "}")
	}
	gone, stays := item("a", -time.Millisecond), item("b", time.Hour)
	tests := []struct {
		name     string
		was, now []byte
		want     bool
	}{
		{"the cheapest expired, the next page's first moved up", page("", gone, stays, item("c", 0)), page("", stays, item("c", 0), item("d", 0)), true},
		{"an expired item dropped at the end of the data", page("", stays, gone), page("", stays), true},
		{"an item that had not expired vanished", page("", stays, item("c", 0)), page("", item("c", 0)), false},
		{"an expiry and a new cheaper listing", page("", gone, stays), page("", item("new", 0), stays), false},
		{"nothing expired, an item was replaced", page("", stays, item("c", 0)), page("", stays, item("x", 0)), false},
		{"an expiry while a source went stale", page("", gone, stays), page(`{"stale":true}`, stays), false},
		{"not a listings page", []byte(`{"id":"x"}`), []byte(`{"id":"y"}`), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, onlyExpired(tt.was, tt.now, at))
		})
	}
}

// TestFreshnessIgnoresExpiry: a listing expiring during the watch changes
// the page without any upstream change; only the tick's change counts.
func TestFreshnessIgnoresExpiry(t *testing.T) {
	tests := []struct {
		name       string
		itemsMove  bool // the tick adds a listing
		wantChange bool
	}{
		{"only a listing expires", false, false},
		{"a listing expires and the tick adds one", true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ticked atomic.Bool
			// "a" expires during the watch: after the baseline, before the
			// grace after the ingest answer ends.
			expires := time.Now().Add(100 * time.Millisecond)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch {
				case r.Method == http.MethodPost && r.URL.Path == "/_sim/tick":
					ticked.Store(true)
				case r.Method == http.MethodPost && r.URL.Path == "/admin/ingest":
					fmt.Fprintf(w, `{"end":%q}`, time.Now().UTC().Format(time.RFC3339Nano))
				default:
					exp := expires
					var items []string
					if tt.itemsMove && ticked.Load() {
						items = append(items, `{"orderId":"new","expiresAt":null}`)
					}
					if time.Now().Before(exp) {
						items = append(items, `{"orderId":"a","expiresAt":"`+exp.UTC().Format(time.RFC3339Nano)+`"}`)
					}
					items = append(items, `{"orderId":"b","expiresAt":null}`)
					fmt.Fprintf(w, `{"data":[%s],"pagination":{"nextCursor":null,"hasMore":false}}`, strings.Join(items, ","))
				}
			}))
			t.Cleanup(srv.Close)
			ctx := context.Background()
			paths := []string{"/v1/collections/ethereum_0xa/listings?limit=100"}
			base := stableBaseline(ctx, srv.URL, paths)
			require.Contains(t, base, paths[0])
			s, _, err := freshOnce(ctx, srv.URL, srv.URL, srv.URL, base, 1, 10*time.Second, 300*time.Millisecond)
			require.NoError(t, err)
			if !tt.wantChange {
				require.True(t, time.Now().After(expires), "the listing expired within the watch")
			}
			assert.Equal(t, tt.wantChange, s.Observed)
		})
	}
}

func TestBackgroundNote(t *testing.T) {
	tests := []struct {
		name string
		bg   *Background
		want []string
	}{
		{"not measured", nil, nil},
		{"sweep unknown", &Background{Reads: 3 * time.Minute, Sweep: -1, Cores: 0.5, Window: 10 * time.Second},
			[]string{"reads took 180.00s", "sweep's time is unknown", "0.50 of its core"}},
		{"sweep measured", &Background{Reads: 90 * time.Second, Sweep: 1500 * time.Millisecond, Cores: 0.42, Window: 10 * time.Second},
			[]string{"reads took 90.00s", "sweep ran for 1.50s of them", "in the 10.00s after them", "0.42 of its core"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := backgroundNote(tt.bg)
			if tt.want == nil {
				assert.Empty(t, got)
			}
			for _, w := range tt.want {
				assert.Contains(t, got, w)
			}
		})
	}
}

func TestTickToWall(t *testing.T) {
	now := time.Date(2026, 11, 24, 2, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		anchor time.Time // the market's clock at tick 0
		ticks  int
		lag    time.Duration
	}{
		{name: "25 minutes behind: ticks to within a step", anchor: now.Add(-25 * time.Minute), ticks: 12, lag: 25 * time.Minute},
		{name: "exactly a step behind: one tick", anchor: now.Add(-simStep), ticks: 1, lag: simStep},
		{name: "level: still one tick", anchor: now, ticks: 1},
		{name: "ahead: one tick", anchor: now.Add(10 * time.Minute), ticks: 1, lag: -10 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := sim.New(sim.Options{Collections: 3, Anchor: tc.anchor})
			srv := httptest.NewServer(s.Handler())
			t.Cleanup(srv.Close)
			ticks, lag, err := tickToWall(context.Background(), srv.URL, func() time.Time { return now })
			require.NoError(t, err)
			assert.Equal(t, tc.ticks, ticks)
			assert.Equal(t, tc.lag, lag)
			assert.Equal(t, tc.ticks, s.Ticks(), "the simulator moved as many steps")
			assert.Less(t, now.Sub(s.Now()), simStep, "its clock ends less than a step behind")
		})
	}
}

func TestTickToWallReportsAFailingSimulator(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    http.HandlerFunc
		want string
	}{
		{name: "error status", h: func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusInternalServerError) },
			want: "sim tick: status 500"},
		{name: "no market time", h: func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, `{"tick":1}`) },
			want: "no market time"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.h)
			t.Cleanup(srv.Close)
			_, _, err := tickToWall(context.Background(), srv.URL, time.Now)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestFeedPaths: the full page is the second (the first after a cursor),
// the head page the first that is not full.
func TestFeedPaths(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Query().Get("cursor") {
		case "":
			w.Write([]byte(`{"data":[],"pagination":{"nextCursor":"a b","hasMore":true}}`))
		case "a b":
			w.Write([]byte(`{"data":[],"pagination":{"nextCursor":"c","hasMore":true}}`))
		default:
			w.Write([]byte(`{"data":[],"pagination":{"nextCursor":"c","hasMore":false}}`))
		}
	}))
	t.Cleanup(srv.Close)
	full, head := feedPaths(context.Background(), srv.URL, "x")
	assert.Equal(t, "/v1/collections/x/events?limit=25&cursor=a+b", full)
	assert.Equal(t, "/v1/collections/x/events?limit=25&cursor=c", head)
	full, head = marketFeedPaths(context.Background(), srv.URL)
	assert.Equal(t, "/v1/events?limit=25&cursor=a+b", full)
	assert.Equal(t, "/v1/events?limit=100&cursor=c", head)
	p := endpoints(Picked{MarketFull: full, MarketHead: head})
	assert.Equal(t, Endpoint{"market events page (full)", full}, p[len(p)-2])
	assert.Equal(t, Endpoint{"market events page (head)", head}, p[len(p)-1])
}

package httpapi

import (
	"net"
	"net/netip"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valyala/fasthttp"
)

func TestRateLimits(t *testing.T) {
	list := []string{"/v1/collections", "/v1/collections/" + testID + "/listings", "/v1/collections/" + testID + "/sales"}
	item := []string{"/v1", "/v1/openapi.json", "/v1/collections/" + testID, "/v1/collections/" + testID + "/floor", "/v1/tokens/ethereum/" + testContract + "/1"}
	mk := func(t *testing.T) *harness {
		h := MustHarness(t, func(c *Config) { c.RateList, c.RateItem = 3, 5 })
		h.r.tokens["ethereum|"+testContract+"|1"] = tokenView(1)
		return h
	}
	client := func(ip string) []string { return []string{"X-Forwarded-For", ip} }

	t.Run("list bucket is shared by its endpoints and independent of item", func(t *testing.T) {
		h := mk(t)
		for i := 0; i < 3; i++ {
			assert.Equal(t, 200, h.get(list[i], client("1.1.1.1")...).status)
		}
		for _, p := range list {
			res := h.get(p, client("1.1.1.1")...)
			require.Equal(t, 429, res.status, p)
			assert.Equal(t, "rate_limited", res.errorCode(t))
			assert.Equal(t, "3", res.header.Get("X-RateLimit-Limit"))
		}
		for _, p := range item {
			assert.Equal(t, 200, h.get(p, client("1.1.1.1")...).status, "item bucket untouched: %s", p)
		}
		res := h.get(item[0], client("1.1.1.1")...)
		require.Equal(t, 429, res.status)
		assert.Equal(t, "5", res.header.Get("X-RateLimit-Limit"))
	})
	t.Run("429 headers, aligned window, reset", func(t *testing.T) {
		h := mk(t)
		h.clock.Set(time.Date(2026, 11, 22, 12, 0, 45, 500e6, time.UTC))
		for i := 0; i < 3; i++ {
			res := h.get(list[0], client("2.2.2.2")...)
			require.Equal(t, 200, res.status)
			assert.Empty(t, res.header.Get("X-RateLimit-Remaining"))
		}
		res := h.get(list[0], client("2.2.2.2")...)
		require.Equal(t, 429, res.status)
		assert.Equal(t, "0", res.header.Get("X-RateLimit-Remaining"))
		assert.Equal(t, "2026-11-22T12:01:00.000Z", res.header.Get("X-RateLimit-Reset"))
		reset, err := time.Parse(time.RFC3339, res.header.Get("X-RateLimit-Reset"))
		require.NoError(t, err, "ISO 8601, not epoch seconds")
		assert.Equal(t, int64(0), reset.Unix()%60)
		assert.Equal(t, "15", res.header.Get("Retry-After"))
		assert.Equal(t, "no-store", res.header.Get("Cache-Control"))

		h.clock.Set(time.Date(2026, 11, 22, 12, 0, 59, 999e6, time.UTC))
		assert.Equal(t, "1", h.get(list[0], client("2.2.2.2")...).header.Get("Retry-After"))
		h.clock.Set(time.Date(2026, 11, 22, 12, 1, 0, 0, time.UTC))
		assert.Equal(t, 200, h.get(list[0], client("2.2.2.2")...).status, "a new window")
	})
	t.Run("per client IP", func(t *testing.T) {
		h := mk(t)
		for i := 0; i < 3; i++ {
			h.get(list[0], client("3.3.3.3")...)
		}
		assert.Equal(t, 429, h.get(list[0], client("3.3.3.3")...).status)
		assert.Equal(t, 200, h.get(list[0], client("4.4.4.4")...).status)
		assert.Equal(t, 200, h.get(list[0], client("2001:db8::1")...).status)
	})
	t.Run("errors and 304s count", func(t *testing.T) {
		h := mk(t)
		res := h.get(item[2], client("5.5.5.5")...)
		tag := res.header.Get("ETag")
		require.NotEmpty(t, tag)
		assert.Equal(t, 304, h.get(item[2], append(client("5.5.5.5"), "If-None-Match", tag)...).status)
		assert.Equal(t, 404, h.get("/v1/collections/nope", client("5.5.5.5")...).status)
		assert.Equal(t, 304, h.get(item[2], append(client("5.5.5.5"), "If-None-Match", tag)...).status)
		assert.Equal(t, 200, h.get(item[0], client("5.5.5.5")...).status)
		assert.Equal(t, 429, h.get(item[0], client("5.5.5.5")...).status)
	})
	t.Run("preflight does not count", func(t *testing.T) {
		h := mk(t)
		for i := 0; i < 10; i++ {
			assert.Equal(t, 204, h.do("OPTIONS", list[0], client("6.6.6.6")...).status)
		}
		assert.Equal(t, 200, h.get(list[0], client("6.6.6.6")...).status)
	})
	t.Run("without a trusted proxy the peer is the client", func(t *testing.T) {
		h := MustHarness(t, func(c *Config) { c.RateList, c.TrustedProxies = 2, nil })
		h.get(list[0], client("7.7.7.7")...)
		h.get(list[0], client("8.8.8.8")...)
		assert.Equal(t, 429, h.get(list[0], client("9.9.9.9")...).status, "X-Forwarded-For from an untrusted peer is ignored")
	})
}

func TestClientIP(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("0.0.0.0/32"), netip.MustParsePrefix("10.0.0.0/8")}
	tests := []struct {
		name    string
		trusted []netip.Prefix
		xff     []string
		want    string
	}{
		{"no proxy trust: peer", nil, []string{"1.2.3.4"}, "0.0.0.0"},
		{"no header: peer", trusted, nil, "0.0.0.0"},
		{"one hop", trusted, []string{"1.2.3.4"}, "1.2.3.4"},
		{"spoofed leftmost ignored", trusted, []string{"6.6.6.6, 1.2.3.4"}, "1.2.3.4"},
		{"walk past trusted hops", trusted, []string{"6.6.6.6, 1.2.3.4, 10.1.1.1, 10.2.2.2"}, "1.2.3.4"},
		{"multiple headers in order", trusted, []string{"6.6.6.6", "1.2.3.4, 10.0.0.1"}, "1.2.3.4"},
		{"all trusted: leftmost", trusted, []string{"10.0.0.9, 10.0.0.1"}, "10.0.0.9"},
		{"garbage hop stops at the last trusted", trusted, []string{"1.2.3.4, garbage, 10.0.0.1"}, "10.0.0.1"},
		{"garbage only", trusted, []string{"garbage"}, "0.0.0.0"},
		{"ipv6 and port forms", trusted, []string{"[2001:db8::5]:443"}, "2001:db8::5"},
		{"ipv4-mapped", trusted, []string{"::ffff:1.2.3.4"}, "1.2.3.4"},
		{"with port", trusted, []string{"1.2.3.4:5678"}, "1.2.3.4"},
		{"empty elements", trusted, []string{" , 1.2.3.4 , "}, "1.2.3.4"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := MustHarness(t, func(c *Config) { c.TrustedProxies = tc.trusted })
			var req fasthttp.Request
			req.SetRequestURI("/v1")
			for _, v := range tc.xff {
				req.Header.Add("X-Forwarded-For", v)
			}
			var fctx fasthttp.RequestCtx
			fctx.Init(&req, &net.TCPAddr{IP: net.IPv4zero}, nil)
			c := h.srv.App().AcquireCtx(&fctx)
			defer h.srv.App().ReleaseCtx(c)
			got := h.srv.clientIP(c)
			assert.Equal(t, tc.want, got.String())
		})
	}
}

// floodAddr is the i-th address of a flood: distinct IPv4 addresses.
func floodAddr(i int) netip.Addr {
	return netip.AddrFrom4([4]byte{10 + byte(i>>24), byte(i >> 16), byte(i >> 8), byte(i)})
}

// tableEntries is how many exact counters l holds, and how many sketches.
func tableEntries(l *limiter) (entries, sketches int) {
	for i := range l.shards {
		entries += len(l.shards[i].clients)
		if l.shards[i].sketch != nil {
			sketches++
		}
	}
	return entries, sketches
}

// TestLimiterFlood: 300,000 distinct addresses in one window (more than
// the table holds) cannot push anyone else into 429: a client seen before
// the flood keeps its exact counter, a fresh innocent client arriving after
// it still gets its whole budget, a flooding address is held to its own
// limit, and memory stays within the table's bound plus one sketch per
// shard. (Keys are fixed so the sketch's placement is reproducible; with
// random keys an innocent newcomer loses a request only when all four of its
// counters collide with flooders: p ≈ 3·10⁻⁴ at this flood.)
func TestLimiterFlood(t *testing.T) {
	const limit = 120
	l := newLimiterKeyed(limit, 300, defaultMaxClients, DefaultIPv6Prefix, 0x0123456789abcdef, 0xfedcba9876543210)
	now := t0
	established := netip.MustParseAddr("198.51.100.7")
	ok, _, _, _ := l.take(established, bucketList, now)
	require.True(t, ok)

	for i := 0; i < 300_000; i++ {
		ok, _, _, _ := l.take(floodAddr(i), bucketList, now)
		require.True(t, ok, "flood address %d: its own first request", i)
	}
	entries, sketches := tableEntries(l)
	assert.LessOrEqual(t, entries, defaultMaxClients, "exact counters are bounded")
	assert.Positive(t, sketches, "the flood overflowed the table into sketches")
	assert.LessOrEqual(t, sketches, limiterShards)

	for name, ip := range map[string]netip.Addr{
		"established client":   established,
		"innocent newcomer":    netip.MustParseAddr("203.0.113.9"),
		"innocent v6 newcomer": netip.MustParseAddr("2001:db8:77::1"),
	} {
		t.Run(name, func(t *testing.T) {
			used := 0
			if ip == established {
				used = 1
			}
			for i := used; i < limit; i++ {
				ok, _, remaining, _ := l.take(ip, bucketList, now)
				require.True(t, ok, "request %d of %d refused", i+1, limit)
				assert.Equal(t, uint32(limit-i-1), remaining)
			}
			ok, _, _, _ := l.take(ip, bucketList, now)
			assert.False(t, ok, "the limit still holds")
		})
	}

	t.Run("a flooding address is held to its own limit", func(t *testing.T) {
		allowed := 0
		for i := 0; i < 3*limit; i++ {
			if ok, _, _, _ := l.take(floodAddr(299_999), bucketList, now); ok {
				allowed++
			}
		}
		assert.LessOrEqual(t, allowed, limit-1, "one request was spent in the flood")
	})

	t.Run("established clients keep their counters across windows", func(t *testing.T) {
		next := now.Add(time.Minute)
		ok, _, remaining, _ := l.take(established, bucketList, next)
		assert.True(t, ok)
		assert.Equal(t, uint32(limit-1), remaining, "a fresh window")
		// Two windows without the flood: its entries are gone.
		later := now.Add(3 * time.Minute)
		for i := 0; i < 5000; i++ { // touches every shard
			l.take(netip.AddrFrom4([4]byte{172, 16, byte(i >> 8), byte(i)}), bucketItem, later)
		}
		entries, sketches := tableEntries(l)
		assert.Equal(t, 5000, entries, "the flood's entries were released")
		assert.Zero(t, sketches)
	})
}

// TestLimiterIPv6Prefix: IPv6 clients are counted per prefix (a /64 by
// default), IPv4 per address.
func TestLimiterIPv6Prefix(t *testing.T) {
	tests := []struct {
		name   string
		bits   int
		a, b   string
		shared bool
	}{
		{"same /64", 64, "2001:db8:1:2::1", "2001:db8:1:2:ffff:ffff:ffff:fffe", true},
		{"other /64", 64, "2001:db8:1:2::1", "2001:db8:1:3::1", false},
		{"/56 joins /64s", 56, "2001:db8:1:2::1", "2001:db8:1:3::1", true},
		{"/128 separates addresses", 128, "2001:db8:1:2::1", "2001:db8:1:2::2", false},
		{"/48", 48, "2001:db8:1:ffff::1", "2001:db8:1::1", true},
		{"IPv4 per address", 64, "192.0.2.1", "192.0.2.2", false},
		{"IPv4 not folded into ::/64", 64, "192.0.2.1", "::1", false},
		{"odd prefix", 63, "2001:db8:1:2::1", "2001:db8:1:3::1", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := newLimiter(2, 2, 1<<10, tc.bits)
			a, b := netip.MustParseAddr(tc.a), netip.MustParseAddr(tc.b)
			l.take(a, bucketList, t0)
			l.take(a, bucketList, t0)
			ok, _, _, _ := l.take(b, bucketList, t0)
			assert.Equal(t, !tc.shared, ok)
		})
	}
	t.Run("through the API", func(t *testing.T) {
		h := MustHarness(t, func(c *Config) { c.RateList = 2 })
		client := func(ip string) []string { return []string{"X-Forwarded-For", ip} }
		assert.Equal(t, 200, h.get("/v1/collections", client("2001:db8:5:6::1")...).status)
		assert.Equal(t, 200, h.get("/v1/collections", client("2001:db8:5:6::2")...).status)
		assert.Equal(t, 429, h.get("/v1/collections", client("2001:db8:5:6:7:8:9:a")...).status, "one /64, one budget")
		assert.Equal(t, 200, h.get("/v1/collections", client("2001:db8:5:7::1")...).status)
	})
	t.Run("invalid prefix", func(t *testing.T) {
		_, err := New(Config{RateIPv6Prefix: 129}, newFakeReader(), zerolog.Nop())
		assert.Error(t, err)
	})
}

func TestLimiterConcurrent(t *testing.T) {
	l := newLimiter(1000, 1000, 1<<10, DefaultIPv6Prefix)
	done := make(chan int)
	for g := 0; g < 8; g++ {
		go func() {
			n := 0
			for i := 0; i < 500; i++ {
				if ok, _, _, _ := l.take(netip.MustParseAddr("192.0.2."+strconv.Itoa(i%2)), bucketList, t0); ok {
					n++
				}
			}
			done <- n
		}()
	}
	total := 0
	for g := 0; g < 8; g++ {
		total += <-done
	}
	assert.Equal(t, 2000, total, "two clients × limit 1000, exactly")
}

// BenchmarkLimiterTake is the limiter's per-request cost: one hot client,
// and clients spread over a full table.
func BenchmarkLimiterTake(b *testing.B) {
	b.Run("one client", func(b *testing.B) {
		l := newLimiter(1<<30, 1<<30, defaultMaxClients, DefaultIPv6Prefix)
		ip := netip.MustParseAddr("192.0.2.10")
		b.ReportAllocs()
		for b.Loop() {
			l.take(ip, bucketItem, t0)
		}
	})
	b.Run("100k clients", func(b *testing.B) {
		l := newLimiter(1<<30, 1<<30, defaultMaxClients, DefaultIPv6Prefix)
		ips := make([]netip.Addr, 100_000)
		for i := range ips {
			ips[i] = floodAddr(i)
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			l.take(ips[i%len(ips)], bucketItem, t0)
			i++
		}
	})
}

// BenchmarkLimiterFlood measures the limiter's memory after a flood of
// one million distinct addresses in one window (heap in use after a GC,
// reported as MiB/limiter): the bound of the table plus the sketches.
func BenchmarkLimiterFlood(b *testing.B) {
	var used uint64
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		l := newLimiter(120, 300, defaultMaxClients, DefaultIPv6Prefix)
		for i := 0; i < 1_000_000; i++ {
			l.take(floodAddr(i), bucketList, t0)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		used = max(used, after.HeapInuse-min(before.HeapInuse, after.HeapInuse))
		runtime.KeepAlive(l)
	}
	b.ReportMetric(float64(used)/(1<<20), "MiB/limiter")
}

package httpapi

import (
	"net"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valyala/fasthttp"

	"github.com/marketd/marketd/readmodel"
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

// TestLimiterBounded: a flood of distinct addresses keeps at most the
// configured number of entries; newcomers beyond it share an overflow
// budget, and a new window frees everything.
func TestLimiterBounded(t *testing.T) {
	l := newLimiter(2, 2, 128)
	now := t0
	allowed := 0
	for i := 0; i < 10000; i++ {
		ip := netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
		if ok, _, _, _ := l.take(ip, bucketList, now); ok {
			allowed++
		}
	}
	entries := 0
	for i := range l.shards {
		entries += len(l.shards[i].clients)
	}
	assert.LessOrEqual(t, entries, 128)
	assert.LessOrEqual(t, allowed, 128*2+limiterShards*2, "overflow newcomers share one budget per shard")
	ok, limit, remaining, reset := l.take(netip.MustParseAddr("192.0.2.1"), bucketItem, now.Add(time.Minute))
	assert.True(t, ok)
	assert.Equal(t, uint32(2), limit)
	assert.Equal(t, uint32(1), remaining)
	assert.Equal(t, "2026-11-22T12:02:00.000Z", readmodel.FormatTime(reset))
	entries = 0
	for i := range l.shards {
		if l.shards[i].window == now.Add(time.Minute).Unix()/60 {
			entries += len(l.shards[i].clients)
		}
	}
	assert.Equal(t, 1, entries)
}

func TestLimiterConcurrent(t *testing.T) {
	l := newLimiter(1000, 1000, 1<<10)
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

package httpapi

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"math/bits"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/marketd/marketd/readmodel"
)

// rateWindow is SPEC §8's fixed window. Windows are aligned to the wall-clock
// minute, so X-RateLimit-Reset is the same instant for every client.
const rateWindow = 60 * time.Second

const (
	limiterShards = 64
	// defaultMaxClients bounds the clients the limiter keeps an exact
	// counter of.
	defaultMaxClients = 1 << 18
	// DefaultIPv6Prefix is how many leading bits of an IPv6 address name
	// one client: a /64 is one subscriber's network (SPEC §5's "client IP"
	// for IPv6), and anyone holding one holds 2^64 addresses.
	DefaultIPv6Prefix = 64
	// sketchDepth and sketchWidth size a shard's count-min sketch: 4 rows
	// of 4096 counter pairs, 128 KiB, allocated only in a window in which
	// the shard's table is full.
	sketchDepth = 4
	sketchWidth = 1 << 12
)

// counts is one client's use of both buckets in the current window.
type counts [2]uint32

// limiter counts requests per client in fixed 60 s windows, two
// independent buckets. A client is an IPv4 address or an IPv6 prefix
// (DefaultIPv6Prefix bits by default). It is safe for concurrent use.
//
// Memory is bounded: each shard keeps an exact counter for at most
// perShard clients, and a client seen in the current or the previous
// window keeps its entry, so established clients count exactly whatever
// else happens. A newcomer that finds its shard's table full (a flood of
// fresh addresses) is counted in the shard's count-min sketch, against
// the same per-client limit: the sketch's estimate of a client is at
// least its own use, and exceeds it only by what sketch neighbours
// (sharing all of its sketchDepth counters) spent, so a flood costs the
// flooders their own budgets and leaves an innocent newcomer, with high
// probability, its whole budget (TestLimiterFlood). The bound is
// maxClients table entries plus one sketch per shard: 24 MiB measured
// after a flood of a million addresses (BenchmarkLimiterFlood), of which
// 8 MiB are the sketches.
type limiter struct {
	limits   [2]uint32 // indexed by bucket
	perShard int
	v6bits   int
	k0, k1   uint64 // hash keys
	shards   [limiterShards]limiterShard
}

type limiterShard struct {
	mu      sync.Mutex
	window  int64 // unix minute the counts belong to
	clients map[uint64]clientEntry
	sketch  *sketch  // nil unless the table filled up in this window
	_       [40]byte // keep shards on separate cache lines
}

// clientEntry is a client's counts and the window they belong to.
type clientEntry struct {
	window int64
	c      counts
}

// sketch is a count-min sketch of counts with conservative update.
type sketch [sketchDepth][sketchWidth]counts

func newLimiter(list, item, maxClients, v6bits int) *limiter {
	var k [16]byte
	_, _ = rand.Read(k[:])
	return newLimiterKeyed(list, item, maxClients, v6bits, binary.LittleEndian.Uint64(k[:8]), binary.LittleEndian.Uint64(k[8:]))
}

// newLimiterKeyed is newLimiter with given hash keys (tests: a
// reproducible placement of clients in shards and sketch counters).
func newLimiterKeyed(list, item, maxClients, v6bits int, k0, k1 uint64) *limiter {
	l := &limiter{k0: k0 | 1, k1: k1 | 1, v6bits: v6bits}
	l.limits[bucketList] = uint32(list)
	l.limits[bucketItem] = uint32(item)
	l.perShard = max(maxClients/limiterShards, 1)
	for i := range l.shards {
		l.shards[i].clients = make(map[uint64]clientEntry)
	}
	return l
}

// key returns the 64-bit identity of ip's client: a keyed hash of the
// IPv4 address, or of the IPv6 address cut to its prefix. The keys are
// random per process, so nobody can aim addresses at one counter.
func (l *limiter) key(ip netip.Addr) uint64 {
	b := ip.As16()
	hi, lo := binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])
	if ip.Is6() {
		switch n := l.v6bits; {
		case n <= 0:
			hi, lo = 0, 0
		case n < 64:
			hi &= ^uint64(0) << (64 - n)
			lo = 0
		case n < 128:
			lo &= ^uint64(0) << (128 - n)
		}
	}
	return mix(mix(hi^l.k0, lo^l.k1), l.k0^0x9e3779b97f4a7c15)
}

// mix folds the 128-bit product of a and b (wyhash's mixing step).
func mix(a, b uint64) uint64 {
	h, lo := bits.Mul64(a, b)
	return h ^ lo
}

// take counts one request of ip against bucket b at now. It returns whether
// the request is allowed, the bucket's limit, what remains, and when the
// window resets.
func (l *limiter) take(ip netip.Addr, b bucket, now time.Time) (ok bool, limit, remaining uint32, reset time.Time) {
	win := now.Unix() / 60
	if now.Unix() < 0 && now.Unix()%60 != 0 {
		win-- // floor for pre-1970 clocks
	}
	k := l.key(ip)
	limit = l.limits[b]
	sh := &l.shards[k>>58] // the top 6 bits pick the shard, the rest the counters
	sh.mu.Lock()
	if sh.window != win {
		sh.roll(win)
	}
	var used uint32
	if e, found := sh.clients[k]; found || len(sh.clients) < l.perShard {
		if e.window != win {
			e = clientEntry{window: win}
		}
		if e.c[b] < limit {
			e.c[b]++
			ok = true
		}
		used = e.c[b]
		sh.clients[k] = e
	} else {
		if sh.sketch == nil {
			sh.sketch = new(sketch)
		}
		ok, used = sh.sketch.take(k, b, limit)
	}
	sh.mu.Unlock()
	return ok, limit, limit - min(used, limit), time.Unix((win+1)*60, 0)
}

// roll starts window win: clients not seen in the window before it lose
// their entry (their place goes to newcomers), the others keep theirs,
// and the sketch is dropped.
func (sh *limiterShard) roll(win int64) {
	if sh.window != win-1 {
		clear(sh.clients) // nobody was seen in the previous window
	} else {
		for k, e := range sh.clients {
			if e.window < win-1 {
				delete(sh.clients, k)
			}
		}
	}
	sh.window = win
	sh.sketch = nil
}

// take estimates k's use of bucket b (the least of its counters) and, if
// it is below limit, counts one more: conservative update raises only the
// counters below the new estimate, which keeps neighbours' estimates as low
// as the sketch allows.
func (s *sketch) take(k uint64, b bucket, limit uint32) (ok bool, used uint32) {
	var idx [sketchDepth]uint32
	est := ^uint32(0)
	for i := range idx {
		idx[i] = uint32(k>>(i*12)) & (sketchWidth - 1)
		est = min(est, s[i][idx[i]][b])
	}
	if est >= limit {
		return false, est
	}
	est++
	for i, j := range idx {
		if c := &s[i][j][b]; *c < est {
			*c = est
		}
	}
	return true, est
}

var errRateLimited = readmodel.Errorf(readmodel.RateLimited, "rate limit exceeded; retry after the window resets")

// limit counts the request against rt's bucket. Over the limit it sets
// SPEC §7's four rate-limit headers and returns a RateLimited error; within
// it, it sets none.
func (s *Server) limit(c *fiber.Ctx, rt *route, now time.Time) error {
	ok, limit, remaining, reset := s.limiter.take(s.clientIP(c), rt.bucket, now)
	if ok {
		return nil
	}
	h := &c.Response().Header
	var b [40]byte
	h.SetBytesV("X-RateLimit-Limit", strconv.AppendUint(b[:0], uint64(limit), 10))
	h.SetBytesV("X-RateLimit-Remaining", strconv.AppendUint(b[:0], uint64(remaining), 10))
	h.SetBytesV("X-RateLimit-Reset", reset.UTC().AppendFormat(b[:0], readmodel.TimeFormat))
	retry := int64((reset.Sub(now) + time.Second - 1) / time.Second)
	h.SetBytesV(fiber.HeaderRetryAfter, strconv.AppendInt(b[:0], max(retry, 1), 10))
	s.metrics.rateLimited.WithLabelValues(rt.bucket.String()).Inc()
	return errRateLimited
}

// clientIP is the rate-limit identity of the request: the socket peer,
// unless the peer is a trusted proxy; then X-Forwarded-For is walked from
// the right past trusted hops and the first untrusted hop is the client.
// (Fiber's c.IP() with a proxy header trusts the client-controlled
// left-most value; it is not used.) An unparsable hop ends the walk at the
// last trusted hop, which is then the client.
func (s *Server) clientIP(c *fiber.Ctx) netip.Addr {
	peer, _ := netip.AddrFromSlice(c.Context().RemoteIP())
	peer = peer.Unmap()
	if !s.isTrusted(peer) {
		return peer
	}
	client := peer
	hdrs := c.Request().Header.PeekAll(fiber.HeaderXForwardedFor)
	for i := len(hdrs) - 1; i >= 0; i-- {
		v := hdrs[i]
		for len(v) > 0 {
			var hop []byte
			if j := bytes.LastIndexByte(v, ','); j >= 0 {
				hop, v = v[j+1:], v[:j]
			} else {
				hop, v = v, nil
			}
			hop = bytes.TrimSpace(hop)
			if len(hop) == 0 {
				continue
			}
			a, err := parseHop(hop)
			if err != nil {
				return client
			}
			client = a
			if !s.isTrusted(a) {
				return a
			}
		}
	}
	return client
}

// parseHop parses one X-Forwarded-For entry: an address, optionally
// bracketed IPv6 or with a port.
func parseHop(b []byte) (netip.Addr, error) {
	s := string(b)
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap(), nil
	}
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		return netip.Addr{}, err
	}
	return ap.Addr().Unmap(), nil
}

func (s *Server) isTrusted(a netip.Addr) bool {
	for _, p := range s.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

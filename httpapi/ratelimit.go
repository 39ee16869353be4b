package httpapi

import (
	"bytes"
	"hash/maphash"
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
	// defaultMaxClients bounds the clients counted per window. Beyond it
	// (a flood of distinct addresses) the newcomers of a shard share one
	// overflow counter, so memory stays bounded and the flood is limited
	// as a whole.
	defaultMaxClients = 1 << 18
)

// counts is one client's use of both buckets in the current window.
type counts [2]uint32

// limiter counts requests per client IP in fixed 60 s windows, two
// independent buckets. It is safe for concurrent use; memory is bounded by
// maxClients entries plus one overflow counter per shard.
type limiter struct {
	limits   [2]uint32 // indexed by bucket
	perShard int
	seed     maphash.Seed
	shards   [limiterShards]limiterShard
}

type limiterShard struct {
	mu       sync.Mutex
	window   int64 // unix minute the counts belong to
	clients  map[netip.Addr]counts
	overflow counts
	_        [32]byte // keep shards on separate cache lines
}

func newLimiter(list, item, maxClients int) *limiter {
	l := &limiter{seed: maphash.MakeSeed()}
	l.limits[bucketList] = uint32(list)
	l.limits[bucketItem] = uint32(item)
	l.perShard = max(maxClients/limiterShards, 1)
	for i := range l.shards {
		l.shards[i].clients = make(map[netip.Addr]counts)
	}
	return l
}

// take counts one request of ip against bucket b at now. It returns whether
// the request is allowed, the bucket's limit, what remains, and when the
// window resets.
func (l *limiter) take(ip netip.Addr, b bucket, now time.Time) (ok bool, limit, remaining uint32, reset time.Time) {
	win := now.Unix() / 60
	if now.Unix() < 0 && now.Unix()%60 != 0 {
		win-- // floor for pre-1970 clocks
	}
	sh := &l.shards[maphash.Comparable(l.seed, ip)%limiterShards]
	sh.mu.Lock()
	if sh.window != win {
		sh.window = win
		sh.clients = make(map[netip.Addr]counts)
		sh.overflow = counts{}
	}
	c, found := sh.clients[ip]
	full := !found && len(sh.clients) >= l.perShard
	if full {
		c = sh.overflow
	}
	limit = l.limits[b]
	if c[b] < limit {
		c[b]++
		ok = true
	}
	if full {
		sh.overflow = c
	} else {
		sh.clients[ip] = c
	}
	sh.mu.Unlock()
	return ok, limit, limit - min(c[b], limit), time.Unix((win+1)*60, 0)
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

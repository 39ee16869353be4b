package httpapi

import (
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
)

// memoResponse is the response memo's key kind.
const memoResponse cursorKind = 'R'

// request is what serve hands a route's handler besides the Fiber
// context.
type request struct {
	now time.Time // the request's clock: Config.Now, else its start
	// memo is set when the response memo was consulted for this request
	// and missed: a handler that builds a success offers it with keep,
	// under ver, the views' version read before any view was (a body
	// built from views newer than ver is only ever served while ver
	// holds, which it no longer does).
	memo      bool
	ver, hash uint64
}

// responseKey is the response memo's key of a request target at views
// version ver: the raw request-target (path and query, as sent), so two
// spellings of one resource are two entries, never one entry for two.
func responseKey(buf []byte, ver uint64, c *fiber.Ctx) memoKey {
	k := newMemoKey(buf, memoResponse).num(ver)
	return append(k, c.Context().RequestURI()...)
}

// servePrepared answers rq from the response memo when it holds a success
// for this request target at the views' current version that is still
// good by the clock: the same status, body and headers the handler would
// write (a 304 when If-None-Match matches its ETag), with the request's
// own time in the body's time slot. It reports whether it answered; when
// it did not, rq says how the handler may keep what it builds.
func (s *Server) servePrepared(c *fiber.Ctx, rq *request) bool {
	if s.resp == nil {
		return false
	}
	ver, ok := s.r.ViewsVersion()
	if !ok {
		return false
	}
	var kb [1024]byte
	e, h := s.resp.lookup(responseKey(kb[:0], ver, c), rq.now.UnixNano())
	if e == nil {
		rq.memo, rq.ver, rq.hash = true, ver, h
		return false
	}
	setJSON(c)
	if writeCacheHeaders(c, e.cacheControl, e.cdnCtl, etag{h: e.tag, valid: true}) {
		return true
	}
	resp := c.Response()
	if len(e.timeAt) == 0 {
		resp.SetBodyRaw(e.body)
		return true
	}
	// The requests of one millisecond share one stamped body.
	ms := rq.now.UnixMilli()
	if sb := e.stamped.Load(); sb != nil && sb.ms == ms {
		resp.SetBodyRaw(sb.body)
		return true
	}
	t, from := s.timeText(rq.now), 0
	body := make([]byte, 0, len(e.body)+len(e.timeAt)*len(t))
	for _, at := range e.timeAt {
		body = append(append(body, e.body[from:at]...), t...)
		from = at
	}
	body = append(body, e.body[from:]...)
	e.stamped.Store(&stampedBody{ms: ms, body: body})
	resp.SetBodyRaw(body)
	return true
}

// keep offers the success the handler has just written (status 200, its
// body complete, the cache headers cc and cdn) to the response memo, when
// rq consulted it, with the ETag of its identity id, good until id's bound
// by the clock. The response must be a function of the request target,
// the views' version rq.ver and the clock only up to that bound (a
// listing or cursor that expires, a view's Until, a fallback that takes
// over). timeAt are the body offsets, ascending, where appendTime wrote
// the request's time (none: the body embeds it nowhere); the memo keeps
// the body without them and writes each answer's own. An untagged
// response is not kept.
func (s *Server) keep(c *fiber.Ctx, rq request, id identity, timeAt []int, cc, cdn []byte) {
	if !rq.memo {
		return
	}
	s.keepTagged(c, rq, s.tagOf(id), id.until, timeAt, cc, cdn)
}

// keepTagged is keep of a response answered from a page memo entry
// without declaring its identity again (the batch's, found before any
// token was read): its tag and bound are the entry's.
func (s *Server) keepTagged(c *fiber.Ctx, rq request, tag etag, until int64, timeAt []int, cc, cdn []byte) {
	if !rq.memo || !tag.valid || c.Response().StatusCode() != fiber.StatusOK {
		return
	}
	if until != 0 && rq.now.UnixNano() >= until {
		return
	}
	body := c.Response().Body()
	var slots []int
	if len(timeAt) > 0 {
		t := s.timeText(rq.now)
		kept := make([]byte, 0, len(body)-len(timeAt)*len(t)) // a fresh slice: body stays as written
		slots = make([]int, 0, len(timeAt))
		from := 0
		for _, at := range timeAt {
			if at < from || at+len(t) > len(body) || string(body[at:at+len(t)]) != string(t) {
				return // not where the handler said: keep nothing rather than a wrong body
			}
			kept = append(kept, body[from:at]...)
			slots = append(slots, len(kept))
			from = at + len(t)
		}
		body = append(kept, body[from:]...)
	}
	e := memoEntry{body: body, tag: tag.h, expires: until, timeAt: slots, cacheControl: cc, cdnCtl: cdn}
	if len(slots) > 0 {
		e.stamped = new(atomic.Pointer[stampedBody])
	}
	var kb [1024]byte
	s.resp.keep(responseKey(kb[:0], rq.ver, c), rq.hash, e)
}

// earliest returns the earlier of two bounds in unix nanoseconds, where 0
// means none.
func earliest(a, b int64) int64 {
	if a == 0 || (b != 0 && b < a) {
		return b
	}
	return a
}

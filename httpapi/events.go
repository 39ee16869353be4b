package httpapi

import (
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/render"
)

var errEventTypes = readmodel.Errorf(readmodel.BadRequest, "types must be a comma-separated list of %s", strings.Join(render.EventTypes[:], ", "))

// A full page of the feed never changes: it is cached as long as a cache
// will keep it.
var (
	immutableCacheControl    = []byte("public, s-maxage=31536000, max-age=31536000, immutable")
	immutableCDNCacheControl = []byte("max-age=31536000, immutable")
)

// getEvents serves GET /v1/collections/{id}/events (beyond SPEC): the
// collection's change feed, oldest first, from a cursor that resumes it.
// Every page carries a nextCursor, also the head page (the feed has no
// end: poll it again later); hasMore says the page was full, so more may
// be read at once. A full page after a cursor never changes (its events
// and next cursor are fixed; feed cursors do not expire): it is served
// immutable, from the page memo when hot. The head page, and the first
// page (it starts at the oldest event kept, which moves), are cached for
// the route's short s-maxage; a hot head page after a cursor is answered
// from the page memo until the feed moves. Errors: 400
// (cursor, limit, types), 404 (unresolved id), 502 (node failure).
func (s *Server) getEvents(c *fiber.Ctx, rt *route, rq request) error {
	now := rq.now
	cv, err := s.resolve(c)
	if err != nil {
		return err
	}
	limit, err := queryLimit(c)
	if err != nil {
		return err
	}
	types, err := queryTypes(c)
	if err != nil {
		return err
	}
	after, afterID, cursorUntil, err := s.feedCursor(c, cursorEvents, cv.ID, now)
	if err != nil {
		return err
	}
	// What the page is: the collection, the types and size asked and the
	// position it starts after (feedPage adds, for a page that can still
	// change, the feed's newest event it reaches).
	var kb [192]byte
	id := newIdentity(kb[:0], cursorEvents).str(cv.ID).num(uint64(types)).num(after).str(afterID).num(uint64(limit)).expires(cursorUntil)
	return s.feedPage(c, rt, rq, id, cursor{kind: cursorEvents, bind: cv.ID}, after, func() (render.EventPage, error) {
		return s.r.Events(c.UserContext(), cv.ID, after, afterID, limit, types)
	})
}

// queryTypes parses a feed's types parameter: the bits
// (render.EventTypeBit) of the comma-separated types it names; 0 when
// absent (every type).
func queryTypes(c *fiber.Ctx) (uint8, error) {
	var types uint8
	if args := c.Context().QueryArgs(); args.Has("types") {
		for _, t := range strings.Split(string(args.Peek("types")), ",") {
			bit := render.EventTypeBit(t)
			if bit == 0 {
				return 0, errEventTypes
			}
			types |= bit
		}
	}
	return types, nil
}

// feedPage answers a page of a change feed (a collection's or the
// market's) of identity id, which names what the request asks (the
// position it starts after, after, the filters and size): read reads it,
// and its nextCursor is next at the page's Last. A full page after a
// cursor is immutable: what the request names is all it depends on, so
// its body is remembered (page memo) by that and served without a read.
func (s *Server) feedPage(c *fiber.Ctx, rt *route, rq request, id identity, next cursor, after uint64, read func() (render.EventPage, error)) error {
	full := *rt
	full.cacheControl, full.cdnCacheControl = immutableCacheControl, immutableCDNCacheControl
	var h uint64
	if after != 0 && s.answerFromPage(c, rq, &full, id, &h) {
		return nil
	}
	page, err := read()
	if err != nil {
		return err
	}
	// The first page (no cursor) starts at the oldest event kept, which
	// moves as old events are dropped: only a page after a cursor is fixed.
	immutable := page.Full && after != 0
	cached := rt
	if immutable {
		cached = &full
	} else {
		id = id.num(page.Last).str(page.LastID)
	}
	// The head page after a cursor holds the events from the cursor to the
	// feed's newest (Last): fixed once Last is, so it is remembered by it
	// and built again only when the feed moves.
	memoHead := !immutable && after != 0
	if memoHead && s.answerFromPage(c, rq, cached, id, &h) {
		return nil
	}
	setJSON(c)
	if writeCache(c, cached, s.tagOf(id)) {
		return nil
	}
	resp := c.Response()
	resp.AppendBodyString(`{"data":`)
	appendItems(resp, page.Items)
	var nb []byte
	if page.Last != 0 {
		var b [512]byte
		next.pos, next.offset = page.LastID, page.Last
		nb = s.cursors.appendCursorUntil(b[:0], next, neverExpires)
	}
	appendPagination(resp, nb, page.Full)
	resp.AppendBodyString("}")
	if immutable || memoHead {
		s.rememberPage(c, id.key, h, id, nil, rq.now)
	}
	s.keep(c, rq, id, nil, cached.cacheControl, cached.cdnCacheControl)
	return nil
}

// answerFromPage answers a feed page of identity id from the page memo
// when it holds one (a 304 when If-None-Match matches), with rt's cache
// headers, and reports whether it did; else *h is the hash to remember the
// page built under.
func (s *Server) answerFromPage(c *fiber.Ctx, rq request, rt *route, id identity, h *uint64) bool {
	if s.memo == nil {
		return false
	}
	e, hash := s.memo.lookup(id.key, rq.now.UnixNano())
	*h = hash
	if e == nil {
		return false
	}
	setJSON(c)
	if !writeCache(c, rt, s.tagOf(id)) {
		c.Response().SetBodyRaw(e.body)
		s.keep(c, rq, id, nil, rt.cacheControl, rt.cdnCacheControl)
	}
	return true
}

// feedCursor reads a feed's cursor parameter, of kind bound to bind: the
// position it resumes after (0 and "" without one) and its expiry (feed
// cursors have none). A cursor that does not verify, or names no
// position, is BadRequest.
func (s *Server) feedCursor(c *fiber.Ctx, kind cursorKind, bind string, now time.Time) (after uint64, afterID string, until int64, err error) {
	text, ok := queryCursor(c)
	if !ok {
		return 0, "", 0, nil
	}
	k, err := s.cursors.parse(text, kind, bind, now)
	if err != nil {
		return 0, "", 0, err
	}
	if k.offset == 0 || k.pos == "" {
		return 0, "", 0, errCursorBad
	}
	return k.offset, k.pos, k.expiresAt(), nil
}

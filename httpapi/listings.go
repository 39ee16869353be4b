package httpapi

import (
	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/marketd/marketd/readmodel"
)

var (
	errNoChain      = readmodel.Errorf(readmodel.NotFound, "collection has no recognised chain")
	errPastCeiling  = readmodel.Errorf(readmodel.BadRequest, "cursor offset is beyond the listings snapshot ceiling")
	errAllListFeeds = readmodel.Errorf(readmodel.UpstreamError, "every listing source is unavailable; listings are unknown, not empty")
)

// getListings serves GET /v1/collections/{id}/listings: the active,
// unexpired listings of a collection, cheapest first, paged through the
// ≤250-item snapshot by offset cursors (SPEC §4 listings rules 1–11).
//
// Beyond SPEC, a cursor pins the snapshot version it was minted from: while
// the node still holds that version a walk is a consistent read; after that
// it falls back to the offset in the current snapshot. Items that expired
// after projection are skipped at request time. meta is present only when
// a source is stale; 502 only when every source failed and nothing is
// known. Errors: 400, 404, 502.
func (s *Server) getListings(c *fiber.Ctx, rt *route, rq request) error {
	now := rq.now
	cv, err := s.resolve(c)
	if err != nil {
		return err
	}
	if cv.Chain == "" {
		return errNoChain
	}
	limit, err := queryLimit(c)
	if err != nil {
		return err
	}
	var offset, version uint64
	var until int64 // when the clock changes this answer; 0: never
	if text, ok := queryCursor(c); ok {
		k, err := s.cursors.parse(text, cursorListings, cv.ID, now)
		if err != nil {
			return err
		}
		if k.offset > readmodel.ListingsCeiling {
			return errPastCeiling
		}
		offset, version = k.offset, k.version
		until = k.expiresAt() // then the same request is a 400
	}
	lv, err := s.r.Listings(c.UserContext(), cv.ID, version)
	if err != nil {
		return err
	}

	// Staleness is the view's: the projector already names the failing
	// listing sources, including order-book for a collection without a
	// contract/mint (rule 9), and whether every source failed.
	stale := lv.StaleSources

	// One pass over the snapshot: live items, the page, what lies after it.
	start := int(min(offset, uint64(len(lv.Items))))
	w, err := walkSnapshot(&lv, now.UnixMilli(), start, until)
	if err != nil {
		return err
	}
	items, until, listed, truncated, expired := w.items, w.until, w.listed, w.truncated, w.expired
	start = min(start, len(items))
	hasMore := w.fromStart > uint64(limit) // a live item lies after the page
	asOf := lv.AsOf.Resolve(s.pollTimes(c.UserContext()))

	// What the page is: the collection and its view's version, the
	// position and size asked, the snapshot's version and USD quote, how
	// many of its items have expired (which fixes the live ones), how
	// many are live beyond the ceiling and the resolved asOf. The clock
	// changes it when the cursor asked with or a live listing expires,
	// and a next cursor is minted by the minute.
	var kb [160]byte
	id := newIdentity(kb[:0], cursorListings).str(cv.ID).version(cv.Version).num(offset).num(uint64(limit)).
		version(lv.Version).num(lv.USD).num(expired).num(listed).num(uint64(asOf)).expires(until)
	if hasMore {
		id = s.mintsCursor(id, now)
	}
	setJSON(c)
	if writeCache(c, rt, s.tagOf(id)) {
		return nil
	}
	h, hit := s.pageFromMemo(c, id.key, now)
	if hit {
		s.keep(c, rq, id, nil, rt.cacheControl, rt.cdnCacheControl)
		return nil
	}
	resp := c.Response()
	resp.AppendBodyString(`{"data":[`)
	n, i := 0, start
	for ; i < len(items) && n < limit; i++ {
		if !w.live(i) {
			continue
		}
		if n > 0 {
			resp.AppendBodyString(",")
		}
		resp.AppendBody(items[i])
		n++
	}
	resp.AppendBodyString("]")
	var next []byte
	if hasMore {
		var b [512]byte
		next = s.cursors.appendCursor(b[:0], cursor{kind: cursorListings, bind: cv.ID, offset: uint64(i), version: lv.Version}, now)
	}
	appendPagination(resp, next, hasMore)
	appendSnapshot(resp, asOf, listed, truncated)
	appendMeta(resp, stale)
	resp.AppendBodyString("}")
	s.rememberPage(c, id.key, h, id, nil, now)
	s.keep(c, rq, id, nil, rt.cacheControl, rt.cdnCacheControl)
	return nil
}

// appendMeta appends a listings snapshot's `,"meta":{…}` naming the stale
// sources; nothing when none is (SPEC: meta only when a source degraded).
func appendMeta(resp *fasthttp.Response, stale []readmodel.Source) {
	if len(stale) == 0 {
		return
	}
	resp.AppendBodyString(`,"meta":{"stale":true,"staleSources":[`)
	for j, src := range stale {
		if j > 0 {
			resp.AppendBodyString(",")
		}
		resp.AppendBodyString(`"`)
		resp.AppendBodyString(string(src))
		resp.AppendBodyString(`"`)
	}
	resp.AppendBodyString("]}")
}

package httpapi

import (
	"time"

	"github.com/gofiber/fiber/v2"

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
	var until int64 // when the clock changes this answer (keep); 0: never
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
	stale, allFailed := lv.StaleSources, lv.AllFailed

	// One pass over the snapshot: live items, the page, what lies after it.
	nowMs := now.UnixMilli()
	items := lv.Items
	if len(items) > readmodel.ListingsCeiling {
		items = items[:readmodel.ListingsCeiling]
	}
	live := func(i int) bool {
		return i >= len(lv.ExpiresAt) || lv.ExpiresAt[i] == 0 || lv.ExpiresAt[i] > nowMs
	}
	var liveTotal, expired uint64
	for i := range items {
		if live(i) {
			liveTotal++
			if i < len(lv.ExpiresAt) && lv.ExpiresAt[i] != 0 {
				until = earliest(until, lv.ExpiresAt[i]*int64(time.Millisecond))
			}
		} else {
			expired++
		}
	}
	if allFailed && liveTotal == 0 {
		return errAllListFeeds
	}

	listed, truncated := liveCount(&lv, liveTotal, nowMs)
	if next := nextExpiry(lv.BeyondExpires, nowMs); next != 0 {
		until = earliest(until, next*int64(time.Millisecond)) // listedCount moves then
	}
	asOf := lv.AsOf.Resolve(s.pollTimes(c.UserContext()))

	setJSON(c)
	tag := s.newETag("listings").str(cv.ID).version(cv.Version).version(lv.Version).num(lv.USD).num(expired).num(offset).num(uint64(limit)).num(listed).num(uint64(asOf))
	if writeCache(c, rt, tag) {
		return nil
	}
	// The body is a function of what the tag covers (the live items of a
	// snapshot version are fixed by how many have expired) and the
	// cursor's minute.
	var kb [160]byte
	key, h, hit := s.pageFromMemo(c, newMemoKey(kb[:0], cursorListings).str(cv.ID).num(cv.Version).num(lv.Version).num(lv.USD).num(expired).num(offset).num(uint64(limit)).num(listed).num(uint64(asOf)), now)
	if hit {
		// The remembered body's cursor, if any, was minted this minute.
		s.keep(c, rq, tag, earliest(until, s.cursors.mintedUntil(now)), nil, rt.cacheControl, rt.cdnCacheControl)
		return nil
	}
	resp := c.Response()
	resp.AppendBodyString(`{"data":[`)
	n, i := 0, int(min(offset, uint64(len(items))))
	for ; i < len(items) && n < limit; i++ {
		if !live(i) {
			continue
		}
		if n > 0 {
			resp.AppendBodyString(",")
		}
		resp.AppendBody(items[i])
		n++
	}
	resp.AppendBodyString("]")
	hasMore := false
	for j := i; j < len(items); j++ {
		if live(j) {
			hasMore = true
			break
		}
	}
	var next []byte
	if hasMore {
		var b [512]byte
		next = s.cursors.appendCursor(b[:0], cursor{kind: cursorListings, bind: cv.ID, offset: uint64(i), version: lv.Version}, now)
		until = earliest(until, s.cursors.mintedUntil(now))
	}
	appendPagination(resp, next, hasMore)
	appendSnapshot(resp, asOf, listed, truncated)
	if len(stale) > 0 {
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
	resp.AppendBodyString("}")
	s.rememberPage(c, key, h)
	s.keep(c, rq, tag, until, nil, rt.cacheControl, rt.cdnCacheControl)
	return nil
}

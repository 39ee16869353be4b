package httpapi

import (
	"github.com/gofiber/fiber/v2"

	"github.com/marketd/marketd/readmodel"
)

var errNoContract = readmodel.Errorf(readmodel.NotFound, "collection has no stored contract address")

// getSales serves GET /v1/collections/{id}/sales: completed sales, newest
// first, to the start of history. The cursor carries a keyset position of
// the store, so new sales never shift a walk; an unresolvable position is
// 400 (from Reader). Pages may hold fewer than limit items, even none,
// while hasMore is true (SPEC sales rule 2). Errors: 400, 404 (unresolved,
// or no contractAddress), 502.
func (s *Server) getSales(c *fiber.Ctx, rt *route, rq request) error {
	now := rq.now
	cv, err := s.resolve(c)
	if err != nil {
		return err
	}
	if !cv.HasContract {
		return errNoContract
	}
	limit, err := queryLimit(c)
	if err != nil {
		return err
	}
	var after string
	var cursorUntil int64 // the given cursor's expiry: then the same request is a 400
	if text, ok := queryCursor(c); ok {
		k, err := s.cursors.parse(text, cursorSales, cv.ID, now)
		if err != nil {
			return err
		}
		if k.pos == "" {
			return errCursorBad
		}
		after, cursorUntil = k.pos, k.expiresAt()
	}
	page, err := s.r.Sales(c.UserContext(), cv.ID, after, limit)
	if err != nil {
		return err
	}
	// What the page is: the collection, the position and size asked, the
	// sales view's version and its USD quote; a next cursor is minted by
	// the minute.
	var kb [160]byte
	id := newIdentity(kb[:0], cursorSales).str(cv.ID).str(after).num(uint64(limit)).version(page.Version).num(page.USD).expires(cursorUntil)
	if mints(page) {
		id = s.mintsCursor(id, now)
	}
	setJSON(c)
	if writeCache(c, rt, s.tagOf(id)) {
		return nil
	}
	h, hit := s.pageFromMemo(c, id.key, now)
	if !hit {
		s.writePage(c, page, cursorSales, cv.ID, now)
		s.rememberPage(c, id.key, h, id, nil, now)
	}
	s.keep(c, rq, id, nil, rt.cacheControl, rt.cdnCacheControl)
	return nil
}

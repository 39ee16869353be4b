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
	// The clock's part (keep): the next cursor's expiry, minted by the
	// minute, and the given cursor's own.
	until := s.cursors.mintedUntil(now)
	if text, ok := queryCursor(c); ok {
		k, err := s.cursors.parse(text, cursorSales, cv.ID, now)
		if err != nil {
			return err
		}
		if k.pos == "" {
			return errCursorBad
		}
		after = k.pos
		until = earliest(until, k.expiresAt())
	}
	page, err := s.r.Sales(c.UserContext(), cv.ID, after, limit)
	if err != nil {
		return err
	}
	setJSON(c)
	tag := s.newETag("sales").str(cv.ID).str(after).num(uint64(limit)).version(page.Version).num(page.USD)
	if writeCache(c, rt, tag) {
		return nil
	}
	var kb [160]byte
	key, h, hit := s.pageFromMemo(c, newMemoKey(kb[:0], cursorSales).str(cv.ID).str(after).num(page.Version).num(page.USD).num(uint64(limit)), now)
	if !hit {
		s.writePage(c, page, cursorSales, cv.ID, now)
		s.rememberPage(c, key, h)
	}
	s.keep(c, rq, tag, until, nil, rt.cacheControl, rt.cdnCacheControl)
	return nil
}

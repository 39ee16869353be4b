package httpapi

import (
	"github.com/gofiber/fiber/v2"
)

// getFloor serves GET /v1/collections/{id}/floor: the FloorResponse with
// updatedAt set to now. When the view's last-good buyerFloor has aged out
// (now ≥ FallbackAfter) the prepared fallback is served instead. Errors:
// 404 (unresolved id, or no usable chain). Never 502: a total failure is
// null floors with 200 (prepared by the projector); a node read failure
// answers 404 (see status).
func (s *Server) getFloor(c *fiber.Ctx, rt *route, rq request) error {
	now := rq.now
	cv, err := s.resolve(c)
	if err != nil {
		return err
	}
	if cv.Chain == "" {
		return errNoChain
	}
	fv, err := s.r.Floor(c.UserContext(), cv.ID)
	if err != nil {
		return err
	}
	body, fallback := fv.Body, false
	if !fv.FallbackAfter.IsZero() && !now.Before(fv.FallbackAfter) {
		body, fallback = fv.Fallback, true
	}
	if len(body.Head) == 0 {
		return errCollection
	}
	setJSON(c)
	asOf := fv.AsOf.Resolve(s.pollTimes(c.UserContext()))
	tag := s.newETag("floor").str(cv.ID).version(cv.Version).version(fv.Version).num(fv.USD).num(uint64(asOf))
	if fallback {
		tag = tag.str("fallback")
	}
	if writeCache(c, rt, tag) {
		return nil
	}
	resp := c.Response()
	resp.AppendBodyString(`{"data":`)
	var timeAt []int
	if body.Timed {
		timeAt = []int{len(resp.Body()) + len(body.Head)} // appendTimedAsOf writes the time after Head
	}
	s.appendTimedAsOf(resp, body, now, asOf, false)
	resp.AppendBodyString("}")
	// The clock's part: updatedAt (the time slot), and the fallback that
	// takes over at FallbackAfter.
	var until int64
	if !fallback && !fv.FallbackAfter.IsZero() {
		until = fv.FallbackAfter.UnixNano()
	}
	s.keep(c, rq, tag, until, timeAt, rt.cacheControl, rt.cdnCacheControl)
	return nil
}

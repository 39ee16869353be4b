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
	// What the floor is: the collection, its view's and the floor view's
	// versions, the USD quote, the resolved asOf and which of the two
	// bodies is served; the prepared fallback takes over at FallbackAfter.
	// updatedAt is the request's time (the time slot), in no identity.
	var kb [128]byte
	id := newIdentity(kb[:0], identFloor).str(cv.ID).version(cv.Version).version(fv.Version).num(fv.USD).num(uint64(asOf)).flag(fallback)
	if !fallback && !fv.FallbackAfter.IsZero() {
		id = id.expires(fv.FallbackAfter.UnixNano())
	}
	if writeCache(c, rt, s.tagOf(id)) {
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
	s.keep(c, rq, id, timeAt, rt.cacheControl, rt.cdnCacheControl)
	return nil
}

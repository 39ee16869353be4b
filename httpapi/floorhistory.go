package httpapi

import (
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/render"
)

var (
	errInterval   = readmodel.Errorf(readmodel.BadRequest, "interval must be 1h or 1d")
	errFromTo     = readmodel.Errorf(readmodel.BadRequest, "from and to must be RFC 3339 date-times, from not after to")
	errRangeHours = readmodel.Errorf(readmodel.BadRequest, "with interval 1h, from and to may span at most %d hours (the hours kept)", render.FloorHoursKept)
	errRangeDays  = readmodel.Errorf(readmodel.BadRequest, "with interval 1d, from and to may span at most %d days (the days kept)", render.FloorDaysKept)
)

// identFloorHistory names the floor history route's identities.
const identFloorHistory cursorKind = 'H'

// getFloorHistory serves GET /v1/collections/{id}/floor/history: the
// seller-ask floor as this node observed it, open, high, low and close per
// interval (1h, the default, or 1d) from the interval holding from to the
// one holding to, nulls where it observed none. to defaults to now, from
// to the oldest interval kept before to; the range may span at most the
// intervals kept (FloorHoursKept hours, FloorDaysKept days). Errors: 400
// (interval, from, to, range), 404 (unresolved id, or no usable chain).
func (s *Server) getFloorHistory(c *fiber.Ctx, rt *route, rq request) error {
	args := c.Context().QueryArgs()
	interval := render.FloorHour
	if args.Has("interval") {
		switch v := render.FloorInterval(args.Peek("interval")); v {
		case render.FloorHour, render.FloorDay:
			interval = v
		default:
			return errInterval
		}
	}
	width := interval.Width()
	to, toGiven := rq.now, args.Has("to")
	if toGiven {
		t, err := time.Parse(time.RFC3339, string(args.Peek("to")))
		if err != nil {
			return errFromTo
		}
		to = t
	}
	to = to.UTC().Truncate(width)
	from := to.Add(-time.Duration(interval.Kept()-1) * width)
	if args.Has("from") {
		t, err := time.Parse(time.RFC3339, string(args.Peek("from")))
		if err != nil {
			return errFromTo
		}
		from = t.UTC().Truncate(width)
	}
	if from.After(to) {
		return errFromTo
	}
	if to.Sub(from)/width >= time.Duration(interval.Kept()) {
		if interval == render.FloorDay {
			return errRangeDays
		}
		return errRangeHours
	}
	cv, err := s.resolve(c)
	if err != nil {
		return err
	}
	if cv.Chain == "" {
		return errNoChain
	}
	hv, err := s.r.View(c.UserContext(), render.FloorHistoryView.Name(), cv.ID)
	if err != nil {
		return err
	}
	// What the history is: the collection, its history's version (0, and
	// no ETag, before anything was observed), the interval and the range;
	// a range that defaulted to now moves at the next interval.
	var kb [96]byte
	id := newIdentity(kb[:0], identFloorHistory).str(cv.ID).version(hv.Version).str(string(interval)).num(uint64(from.Unix())).num(uint64(to.Unix()))
	if !toGiven {
		id = id.expires(to.Add(width).UnixNano())
	}
	setJSON(c)
	if writeCache(c, rt, s.tagOf(id)) {
		return nil
	}
	resp := c.Response()
	resp.AppendBodyString(`{"data":`)
	resp.AppendBody(render.FloorHistoryJSON(cv.ID, cv.Chain, render.FloorHistoryView.Record(hv), interval, from, to))
	resp.AppendBodyString("}")
	s.keep(c, rq, id, nil, rt.cacheControl, rt.cdnCacheControl)
	return nil
}

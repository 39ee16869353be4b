package httpapi

import (
	"encoding/json"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/render"
)

var errSweepCount = readmodel.Errorf(readmodel.BadRequest, "count must be an integer from 1 to %d", readmodel.MaxSweepCount)

// identSweep is the identity kind of GET /v1/collections/{id}/sweep.
const identSweep cursorKind = 'W'

// getSweep serves GET /v1/collections/{id}/sweep?count=N (beyond SPEC): a
// quote for buying the N cheapest listings (1 to 50, default 10) of the
// collection's current listings snapshot, the one page one of the
// listings feed is cut from: the same rows (deduplicated per asset, native
// wins, active, unexpired at request time, cheapest first), each with its
// fees and buyerPrice, and their totals (render.SweepTotals: a total is
// null when a fee in it is unknown). It carries the listings page's
// snapshot object and, when a listing source is stale, its meta.
//
// Its identity is the listings page's with count for limit and no
// position: the snapshot version, USD quote, expired count, listed count
// and asOf; the page memo keeps each rendered body under it. Errors: 400
// for count, 404 for an unknown collection or one without a chain, 502
// when every listing source failed and nothing is known.
func (s *Server) getSweep(c *fiber.Ctx, rt *route, rq request) error {
	now := rq.now
	cv, err := s.resolve(c)
	if err != nil {
		return err
	}
	if cv.Chain == "" {
		return errNoChain
	}
	count, err := queryBounded(c, "count", readmodel.DefaultSweepCount, readmodel.MaxSweepCount, errSweepCount)
	if err != nil {
		return err
	}
	lv, err := s.r.Listings(c.UserContext(), cv.ID, 0)
	if err != nil {
		return err
	}

	w, err := walkSnapshot(&lv, now.UnixMilli(), 0, 0)
	if err != nil {
		return err
	}
	items, until, listed, truncated, expired := w.items, w.until, w.listed, w.truncated, w.expired
	asOf := lv.AsOf.Resolve(s.pollTimes(c.UserContext()))

	// What the quote is: the listings page's identity (less the cursor's
	// position), with count for its limit.
	var kb [160]byte
	id := newIdentity(kb[:0], identSweep).str(cv.ID).version(cv.Version).num(uint64(count)).
		version(lv.Version).num(lv.USD).num(expired).num(listed).num(uint64(asOf)).expires(until)
	setJSON(c)
	if writeCache(c, rt, s.tagOf(id)) {
		return nil
	}
	h, hit := s.pageFromMemo(c, id.key, now)
	if hit {
		s.keep(c, rq, id, nil, rt.cacheControl, rt.cdnCacheControl)
		return nil
	}
	picked := make([][]byte, 0, count)
	for i := 0; i < len(items) && len(picked) < count; i++ {
		if w.live(i) {
			picked = append(picked, items[i])
		}
	}
	totals, err := render.SweepTotals(cv.Chain, picked)
	if err != nil {
		return err
	}
	tb, err := json.Marshal(totals)
	if err != nil {
		return readmodel.Errorf(readmodel.Internal, "sweep totals: %v", err)
	}
	ib, err := json.Marshal(cv.ID)
	if err != nil {
		return readmodel.Errorf(readmodel.Internal, "sweep collection id: %v", err)
	}
	resp := c.Response()
	resp.AppendBodyString(`{"data":{"collectionId":`)
	resp.AppendBody(ib)
	var nb [8]byte
	resp.AppendBodyString(`,"count":`)
	resp.AppendBody(strconv.AppendInt(nb[:0], int64(count), 10))
	resp.AppendBodyString(`,"items":[`)
	for i, it := range picked {
		if i > 0 {
			resp.AppendBodyString(",")
		}
		resp.AppendBody(it)
	}
	resp.AppendBodyString(`],"totals":`)
	resp.AppendBody(tb)
	resp.AppendBodyString("}")
	appendSnapshot(resp, asOf, listed, truncated)
	appendMeta(resp, lv.StaleSources)
	resp.AppendBodyString("}")
	s.rememberPage(c, id.key, h, id, nil, now)
	s.keep(c, rq, id, nil, rt.cacheControl, rt.cdnCacheControl)
	return nil
}

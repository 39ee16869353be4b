package httpapi

import (
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/marketd/marketd/readmodel"
)

var (
	errSort  = readmodel.Errorf(readmodel.BadRequest, "sort must be one of volume, floor, recent")
	errChain = readmodel.Errorf(readmodel.BadRequest, "chain must be one of solana, ethereum, polygon, base, ink, apechain, abstract, robinhood")
)

// getCollections serves GET /v1/collections: a cursor-paginated browse of
// collection summaries, native-launched first, then by sort (volume, floor,
// recent), optionally restricted to one chain. The cursor is bound to the
// sort and chain. Errors: 400 (parameters, cursor), 502 (index unreadable,
// or never read: an unfiltered first page with no collection at all).
var errIndexUnknown = readmodel.Errorf(readmodel.UpstreamError, "the collection index has not been read yet; collections are unknown, not empty")

var errIndexDown = readmodel.Errorf(readmodel.UpstreamError, "the collection index is unreachable and its last good copy is too old to serve")

// indexUsable returns an UpstreamError when the collection index has
// failed for longer than the retention after its last success (or has
// never succeeded while failing).
func (s *Server) indexUsable(c *fiber.Ctx, now time.Time) error {
	st, ok, err := s.r.CollectionIndexStatus(c.UserContext())
	if err != nil {
		return err
	}
	if !ok || st.OK {
		return nil
	}
	if st.LastGoodAt.IsZero() || !now.Before(st.LastGoodAt.Add(s.rowRetention)) {
		return errIndexDown
	}
	return nil
}

func (s *Server) getCollections(c *fiber.Ctx, rt *route, rq request) error {
	now := rq.now
	args := c.Context().QueryArgs()
	sort := readmodel.SortVolume
	if args.Has("sort") {
		v, ok := readmodel.ParseSort(string(args.Peek("sort")))
		if !ok {
			return errSort
		}
		sort = v
	}
	var chain readmodel.Chain
	if args.Has("chain") {
		v, ok := readmodel.ParseChain(string(args.Peek("chain")))
		if !ok {
			return errChain
		}
		chain = v
	}
	limit, err := queryLimit(c)
	if err != nil {
		return err
	}
	bind := string(sort) + "|" + string(chain)
	var after string
	var cursorUntil int64 // the given cursor's expiry: then the same request is a 400
	if text, ok := queryCursor(c); ok {
		k, err := s.cursors.parse(text, cursorCollections, bind, now)
		if err != nil {
			return err
		}
		if k.pos == "" {
			return errCursorBad
		}
		after, cursorUntil = k.pos, k.expiresAt()
	}
	if err := s.indexUsable(c, now); err != nil {
		return err
	}
	page, err := s.r.Browse(c.UserContext(), sort, chain, after, limit)
	if err != nil {
		return err
	}
	if len(page.Items) == 0 && after == "" && chain == "" {
		// No collection is known at all: the collection index has never
		// been read. That is unknown, not an empty market (SPEC §7: 502).
		return errIndexUnknown
	}
	// What the page is: the query (sort, chain, position, size), the
	// browse view's version and its USD quote; a next cursor is minted by
	// the minute.
	var kb [160]byte
	id := newIdentity(kb[:0], cursorCollections).str(bind).str(after).num(uint64(limit)).version(page.Version).num(page.USD).expires(cursorUntil)
	if mints(page) {
		id = s.mintsCursor(id, now)
	}
	setJSON(c)
	if writeCache(c, rt, s.tagOf(id)) {
		return nil
	}
	h, hit := s.pageFromMemo(c, id.key, now)
	if hit {
		return nil
	}
	s.writePage(c, page, cursorCollections, bind, now)
	s.rememberPage(c, id.key, h, id, nil, now)
	return nil
}

// getCollection serves GET /v1/collections/{id}: the collection detail.
// Errors: 404 (unresolved id). Never 502: degraded indexer data is already
// null fields / stale in the prepared detail; a node read failure answers
// 404 (see status).
func (s *Server) getCollection(c *fiber.Ctx, rt *route, rq request) error {
	cv, err := s.resolve(c)
	if err != nil {
		return err
	}
	if len(cv.Detail) == 0 {
		return errCollection
	}
	setJSON(c)
	asOf := cv.AsOf.Resolve(s.pollTimes(c.UserContext()))
	// What the detail is: the collection, its view's version and USD
	// quote, and its resolved asOf. A pure function of the views: no
	// bound by the clock.
	var kb [128]byte
	id := newIdentity(kb[:0], identDetail).str(cv.ID).version(cv.Version).num(cv.USD).num(uint64(asOf))
	if writeCache(c, rt, s.tagOf(id)) {
		return nil
	}
	resp := c.Response()
	resp.AppendBodyString(`{"data":`)
	appendWithAsOf(resp, cv.Detail, len(`},"stale":false}`), asOf, false) // stats.asOf
	resp.AppendBodyString("}")
	s.keep(c, rq, id, nil, rt.cacheControl, rt.cdnCacheControl)
	return nil
}

package httpapi

import (
	"slices"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/render"
)

// maxFeedCollections is how many collection ids the market's feed filters
// on at once (collections=).
const maxFeedCollections = 20

var errFeedCollections = readmodel.Errorf(readmodel.BadRequest, "collections must be a comma-separated list of 1 to %d collection ids", maxFeedCollections)

// getMarketEvents serves GET /v1/events (beyond SPEC): every collection's
// change-feed events in one order, the order this node applied them,
// oldest first, from a cursor that resumes it; the events, ids and types
// of the collections' feeds. Filters: types (as a collection's feed),
// chain (one of SPEC's chains), collections (up to maxFeedCollections
// ids in any {id} form, each resolved as the collection routes resolve
// {id}). A page reads at most store.MarketScan events after its cursor: a
// filter that matches few may end a page there, with fewer events than
// the limit, hasMore true and a cursor past what it read. Paging and
// caching are the collection feed's (feedPage): full pages after a
// cursor are immutable, the head and first pages short-lived. Errors: 400
// (cursor, limit, types, chain, the collections list's shape), 404 (a
// collection id that does not resolve, named), 502 (node failure).
func (s *Server) getMarketEvents(c *fiber.Ctx, rt *route, rq request) error {
	limit, err := queryLimit(c)
	if err != nil {
		return err
	}
	types, err := queryTypes(c)
	if err != nil {
		return err
	}
	args := c.Context().QueryArgs()
	var chain readmodel.Chain
	if args.Has("chain") {
		v, ok := readmodel.ParseChain(string(args.Peek("chain")))
		if !ok {
			return errChain
		}
		chain = v
	}
	var colls []string
	if args.Has("collections") {
		if colls, err = s.feedCollections(c, string(args.Peek("collections"))); err != nil {
			return err
		}
	}
	after, afterID, cursorUntil, err := s.feedCursor(c, cursorMarket, "", rq.now)
	if err != nil {
		return err
	}
	var kb [192]byte
	id := newIdentity(kb[:0], cursorMarket).num(uint64(types)).str(string(chain)).num(uint64(len(colls)))
	for _, cid := range colls {
		id = id.str(cid)
	}
	id = id.num(after).str(afterID).num(uint64(limit)).expires(cursorUntil)
	return s.feedPage(c, rt, rq, id, cursor{kind: cursorMarket}, after, func() (render.EventPage, error) {
		return s.r.MarketEvents(c.UserContext(), after, afterID, limit, types, chain, colls)
	})
}

// feedCollections resolves the market feed's collections parameter v to
// canonical ids, sorted, each once: 1 to maxFeedCollections ids, none
// empty (else BadRequest), each resolving as {id} does (else NotFound,
// naming it; one longer than readmodel.MaxIDLen is not looked up).
func (s *Server) feedCollections(c *fiber.Ctx, v string) ([]string, error) {
	ids := strings.Split(v, ",")
	if len(ids) > maxFeedCollections {
		return nil, errFeedCollections
	}
	out := make([]string, 0, len(ids))
	for _, raw := range ids {
		if raw == "" {
			return nil, errFeedCollections
		}
		if len(raw) > readmodel.MaxIDLen {
			return nil, readmodel.Errorf(readmodel.NotFound, "collection %q not found", raw[:readmodel.MaxIDLen]+"...")
		}
		canon, err := s.r.ResolveCollection(c.UserContext(), raw)
		if readmodel.ErrorCode(err) == readmodel.NotFound {
			return nil, readmodel.Errorf(readmodel.NotFound, "collection %q not found", raw)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, canon)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

package httpapi

import (
	"strconv"

	"github.com/gofiber/fiber/v2"
)

// bucket is a rate-limit counter (SPEC §8).
type bucket uint8

const (
	bucketList bucket = iota
	bucketItem
)

func (b bucket) String() string {
	if b == bucketList {
		return "list"
	}
	return "item"
}

// route is one public endpoint: its pattern (also the metrics label), its
// rate bucket, its edge cache lifetime and its place in SPEC §7's table.
type route struct {
	pattern string
	summary string
	bucket  bucket
	maxAge  int // s-maxage in seconds; stale-while-revalidate is twice it
	// immutable marks a versioned static asset: cached by browsers and
	// edges for a year as immutable, as full pages of the change feed are
	// (maxAge is not used).
	immutable bool
	// never502 marks endpoints that SPEC §7 says never answer 502 (detail,
	// floor, token, index, openapi): a node failure there answers 404.
	never502 bool
	// prepared marks routes whose successes the response memo keeps
	// (prepared.go): their handlers call keep with every time bound of
	// what they wrote.
	prepared bool
	handle   func(s *Server, c *fiber.Ctx, rt *route, rq request) error

	cacheControl    []byte // precomputed Cache-Control on success
	cdnCacheControl []byte // precomputed CDN-Cache-Control on success
	obs             *routeObservers
}

// routeTable is the whole public surface, in one place (SPEC §4, §8),
// then the routes of the view modules served as they are (views.go).
func routeTable() []*route {
	return append([]*route{
		{pattern: "/v1", summary: "API index", bucket: bucketItem, maxAge: 3600, never502: true, handle: (*Server).getIndex},
		{pattern: "/v1/openapi.json", summary: "OpenAPI 3.1 description", bucket: bucketItem, maxAge: 3600, never502: true, handle: (*Server).getOpenAPI},
		{pattern: "/v1/docs", summary: "API reference (HTML)", bucket: bucketItem, maxAge: 300, never502: true, handle: (*Server).getDocs},
		{pattern: docsScriptPath, summary: "Script of the API reference page", bucket: bucketItem, immutable: true, never502: true, handle: (*Server).getDocsScript},
		{pattern: "/v1/collections", summary: "Browse collections", bucket: bucketList, maxAge: 60, handle: (*Server).getCollections},
		{pattern: "/v1/collections/:id", summary: "Collection detail", bucket: bucketItem, maxAge: 30, never502: true, prepared: true, handle: (*Server).getCollection},
		{pattern: "/v1/collections/:id/floor", summary: "Collection floor", bucket: bucketItem, maxAge: 10, never502: true, prepared: true, handle: (*Server).getFloor},
		{pattern: "/v1/collections/:id/floor/history", summary: "Floor history", bucket: bucketList, maxAge: 60, prepared: true, handle: (*Server).getFloorHistory},
		{pattern: "/v1/collections/:id/listings", summary: "Active listings", bucket: bucketList, maxAge: 15, prepared: true, handle: (*Server).getListings},
		{pattern: "/v1/collections/:id/sales", summary: "Completed sales", bucket: bucketList, maxAge: 30, prepared: true, handle: (*Server).getSales},
		{pattern: "/v1/collections/:id/events", summary: "Change feed", bucket: bucketList, maxAge: 5, prepared: true, handle: (*Server).getEvents},
		// A sweep quote is in the list bucket: it is the first rows of the
		// listings feed (count 50 is a listings page of 50) with their sum,
		// and the item bucket would read that page at 2.5 times the rate.
		{pattern: "/v1/collections/:id/sweep", summary: "Sweep quote", bucket: bucketList, maxAge: 15, prepared: true, handle: (*Server).getSweep},
		{pattern: "/v1/events", summary: "Market change feed", bucket: bucketList, maxAge: 5, prepared: true, handle: (*Server).getMarketEvents},
		{pattern: "/v1/status", summary: "Sources' and node's status", bucket: bucketItem, maxAge: 10, handle: (*Server).getStatus},
		{pattern: "/v1/tokens", summary: "Several tokens' detail", bucket: bucketItem, maxAge: 30, never502: true, prepared: true, handle: (*Server).getTokens},
		{pattern: "/v1/tokens/:chain/:address/:tokenId", summary: "Token detail", bucket: bucketItem, maxAge: 30, never502: true, prepared: true, handle: (*Server).getToken},
	}, viewRoutes()...)
}

// corsMethods is Access-Control-Allow-Methods (SPEC §5: GET, OPTIONS).
const corsMethods = "GET, OPTIONS"

// allowedMethods is the Allow header of every route: SPEC §1's GET and
// OPTIONS, plus HEAD, which HTTP requires of a general-purpose server
// (RFC 9110 §9.1) and which is answered as GET without a body.
const allowedMethods = "GET, HEAD, OPTIONS"

// register mounts every route: GET and HEAD (rate limited in the same
// bucket, measured), OPTIONS preflight (204), any other method 405, and a
// final catch-all 404.
func (s *Server) register() {
	s.routes = routeTable()
	for _, rt := range s.routes {
		rt.cacheControl = []byte("public, s-maxage=" + strconv.Itoa(rt.maxAge) + ", stale-while-revalidate=" + strconv.Itoa(2*rt.maxAge))
		rt.cdnCacheControl = []byte("max-age=" + strconv.Itoa(rt.maxAge) + ", stale-while-revalidate=" + strconv.Itoa(2*rt.maxAge))
		if rt.immutable {
			rt.cacheControl, rt.cdnCacheControl = immutableCacheControl, immutableCDNCacheControl
		}
		rt.obs = s.metrics.route(rt.pattern)
		s.app.Add(fiber.MethodGet, rt.pattern, s.serve(rt))
		s.app.Add(fiber.MethodHead, rt.pattern, s.serve(rt)) // fasthttp sends no body for HEAD
		s.app.Add(fiber.MethodOptions, rt.pattern, s.preflight(rt))
		s.app.All(rt.pattern, s.methodNotAllowed(rt))
	}
	s.index = buildIndex(s.routes)
	s.indexTag = newETag("index").str(string(s.index))
	s.app.Use(func(c *fiber.Ctx) error {
		start := s.clock()
		s.writeError(c, nil, errNoRoute)
		s.unmatched.observe(c.Response().StatusCode(), start)
		return nil
	})
}

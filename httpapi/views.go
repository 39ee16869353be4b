package httpapi

import (
	"github.com/gofiber/fiber/v2"

	"github.com/marketd/marketd/readmodel/render"
)

// identView names the identities of the view modules served as they are.
const identView cursorKind = 'V'

// viewRoutes are the routes of the registered view modules that declare a
// path (render.ViewSpec's Path), in their order of registration: the
// item rate bucket, their s-maxage, prepared (the response memo keeps
// them). A module with parameters has a handler and a route line of its
// own instead.
func viewRoutes() []*route {
	var out []*route
	for _, m := range render.Views() {
		if m.Path() == "" {
			continue
		}
		out = append(out, &route{pattern: m.Path(), summary: m.Summary(), bucket: bucketItem, maxAge: m.MaxAge(), prepared: true, handle: viewHandler(m)})
	}
	return out
}

// viewHandler serves module m at its route: {"data": its Body} of the
// collection {id} resolves to, from the record the views hold. Its
// identity is the module, the collection and the record's version (0,
// and no ETag, before anything was derived). Errors: 404 (unresolved id,
// or no usable chain).
func viewHandler(m render.ViewModule) func(s *Server, c *fiber.Ctx, rt *route, rq request) error {
	return func(s *Server, c *fiber.Ctx, rt *route, rq request) error {
		cv, err := s.resolve(c)
		if err != nil {
			return err
		}
		if cv.Chain == "" {
			return errNoChain
		}
		v, err := s.r.View(c.UserContext(), m.Name(), cv.ID)
		if err != nil {
			return err
		}
		var kb [96]byte
		id := newIdentity(kb[:0], identView).str(m.Name()).str(cv.ID).version(v.Version)
		setJSON(c)
		if writeCache(c, rt, s.tagOf(id)) {
			return nil
		}
		resp := c.Response()
		resp.AppendBodyString(`{"data":`)
		resp.AppendBody(m.Body(cv.ID, cv.Chain, v.Record))
		resp.AppendBodyString("}")
		s.keep(c, rq, id, nil, rt.cacheControl, rt.cdnCacheControl)
		return nil
	}
}

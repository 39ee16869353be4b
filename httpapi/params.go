package httpapi

import (
	"net/url"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/render"
)

var (
	errLimit      = readmodel.Errorf(readmodel.BadRequest, "limit must be an integer from 1 to %d", readmodel.MaxPageLimit)
	errCollection = readmodel.Errorf(readmodel.NotFound, "collection not found")
)

// queryLimit parses the shared limit parameter: absent → DefaultPageLimit;
// present, it must be a decimal integer from 1 to MaxPageLimit (out of range is rejected, not
// clamped).
func queryLimit(c *fiber.Ctx) (int, error) {
	return queryBounded(c, "limit", readmodel.DefaultPageLimit, readmodel.MaxPageLimit, errLimit)
}

// queryBounded parses query parameter name: absent → def; present, it
// must be a decimal integer from 1 to max, else err.
func queryBounded(c *fiber.Ctx, name string, def, max int, err error) (int, error) {
	args := c.Context().QueryArgs()
	if !args.Has(name) {
		return def, nil
	}
	v := args.Peek(name)
	if len(v) == 0 || len(v) > 4 {
		return 0, err
	}
	n := 0
	for _, ch := range v {
		if ch < '0' || ch > '9' {
			return 0, err
		}
		n = n*10 + int(ch-'0')
	}
	if n < 1 || n > max {
		return 0, err
	}
	return n, nil
}

// queryCursor returns the cursor parameter and whether it was present. A
// present but empty value is returned as "" with present true (the codec
// rejects it).
func queryCursor(c *fiber.Ctx) (text string, present bool) {
	args := c.Context().QueryArgs()
	if !args.Has("cursor") {
		return "", false
	}
	return string(args.Peek("cursor")), true
}

// pathParam returns a path parameter as an owned, unescaped string (Fiber's
// own is a view into the request buffer). ok is false when the escape is
// malformed.
func pathParam(c *fiber.Ctx, name string) (string, bool) {
	v, escaped, ok := pathParamView(c, name)
	if ok && !escaped {
		v = strings.Clone(v)
	}
	return v, ok
}

// pathParamView is pathParam without the copy: unless the parameter was
// escaped (then it is a new string), the result is a view into the
// request buffer, valid only until the handler returns. For handlers
// that keep nothing of it: getToken saves a copy of each of its three.
func pathParamView(c *fiber.Ctx, name string) (v string, escaped, ok bool) {
	v = c.Params(name)
	if strings.IndexByte(v, '%') >= 0 {
		u, err := url.PathUnescape(v)
		return u, true, err == nil
	}
	return v, false, true
}

// resolve resolves the {id} path parameter to a canonical id and its
// collection view. An id over readmodel.MaxIDLen characters is not found without a
// lookup.
func (s *Server) resolve(c *fiber.Ctx) (render.CollectionView, error) {
	raw := c.Params("id")
	if len(raw) > 3*readmodel.MaxIDLen {
		return render.CollectionView{}, errCollection
	}
	id, ok := pathParam(c, "id")
	if !ok || id == "" || len(id) > readmodel.MaxIDLen {
		return render.CollectionView{}, errCollection
	}
	ctx := c.UserContext()
	canon, err := s.r.ResolveCollection(ctx, id)
	if err != nil {
		return render.CollectionView{}, err
	}
	cv, err := s.r.Collection(ctx, canon)
	if err != nil {
		return render.CollectionView{}, err
	}
	if cv.ID == "" {
		cv.ID = canon
	}
	return cv, nil
}

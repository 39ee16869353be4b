package httpapi

import (
	"encoding/json"
	"errors"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/marketd/marketd/readmodel"
)

var (
	errNoRoute = readmodel.Errorf(readmodel.NotFound, "no such endpoint")
	errMethod  = &methodError{}
)

// methodError is a request with a method other than GET or OPTIONS.
type methodError struct{}

func (*methodError) Error() string { return "method not allowed" }

// status maps an error to SPEC §7's HTTP status and code on route rt (nil
// outside the public routes). It is the one place that decides:
//   - BadRequest → 400 bad_request, NotFound → 404 not_found,
//     RateLimited → 429 rate_limited;
//   - UpstreamError and Internal (a failure of the node, any foreign error)
//     → 502 upstream_error with a generic message, except on the routes SPEC
//     says never answer 502 (detail, floor, token, index, openapi): there the
//     collection or token is answered as not found (404 not_found, no-store,
//     so nothing caches it), the only code §7 permits them besides 429;
//   - a method other than GET/OPTIONS (any method: unknown and lower-case
//     ones too, see knownMethod) → 405 with code bad_request;
//   - whatever else the HTTP stack rejects before a route runs (request
//     line or headers over ReadBufferSize, a body over BodyLimit, a
//     request that does not parse or arrive in time) → 400 bad_request.
func status(rt *route, err error) (int, readmodel.Code, string) {
	var me *methodError
	if errors.As(err, &me) {
		return fiber.StatusMethodNotAllowed, readmodel.BadRequest, "method not allowed; use GET"
	}
	var fe *fiber.Error
	if errors.As(err, &fe) {
		// A *fiber.Error comes only from the HTTP stack itself (routing,
		// or fasthttp failing to read or parse the request), never from a
		// Reader: it is the client's request that is at fault.
		switch fe.Code {
		case fiber.StatusNotFound:
			return fiber.StatusNotFound, readmodel.NotFound, "no such endpoint"
		case fiber.StatusMethodNotAllowed:
			return fiber.StatusMethodNotAllowed, readmodel.BadRequest, "method not allowed; use GET"
		case fiber.StatusRequestHeaderFieldsTooLarge:
			return fiber.StatusBadRequest, readmodel.BadRequest, "request line and headers must fit in 8 KiB"
		case fiber.StatusRequestEntityTooLarge:
			return fiber.StatusBadRequest, readmodel.BadRequest, "request body too large; requests have no body"
		case fiber.StatusRequestTimeout:
			return fiber.StatusBadRequest, readmodel.BadRequest, "request not received in time"
		default:
			return fiber.StatusBadRequest, readmodel.BadRequest, "malformed request"
		}
	}
	switch code := readmodel.ErrorCode(err); code {
	case readmodel.BadRequest:
		return fiber.StatusBadRequest, code, readmodel.ErrorMessage(err)
	case readmodel.NotFound:
		return fiber.StatusNotFound, code, readmodel.ErrorMessage(err)
	case readmodel.RateLimited:
		return fiber.StatusTooManyRequests, code, readmodel.ErrorMessage(err)
	default: // UpstreamError, Internal, foreign
		if rt != nil && rt.never502 {
			return fiber.StatusNotFound, readmodel.NotFound, "not available on this node right now"
		}
		msg := "a data source is unavailable"
		if code == readmodel.UpstreamError {
			msg = readmodel.ErrorMessage(err)
		}
		return fiber.StatusBadGateway, readmodel.UpstreamError, msg
	}
}

// writeError answers err as SPEC §7's error body {error:{code,message}}
// with Cache-Control: no-store and the CORS headers. Node failures are
// logged here (the top of the request); client errors are not, and the
// start-up state (errIndexUnknown) only once.
func (s *Server) writeError(c *fiber.Ctx, rt *route, err error) {
	st, code, msg := status(rt, err)
	if errors.Is(err, errIndexUnknown) {
		// A node that has not read the collection index yet is starting,
		// not failing: said once, at info.
		if s.startingSaid.CompareAndSwap(false, true) {
			s.log.Info().Int("status", st).Msg("no collection index read yet: GET /v1/collections answers 502 until the first cycle brings it")
		}
	} else if c := readmodel.ErrorCode(err); c == readmodel.Internal || c == readmodel.UpstreamError {
		var fe *fiber.Error
		var me *methodError
		if !errors.As(err, &fe) && !errors.As(err, &me) {
			ev := s.log.Error().Err(err).Int("status", st)
			if rt != nil {
				ev = ev.Str("route", rt.pattern)
			}
			ev.Msg("request failed")
		}
	}
	setCORS(c)
	h := &c.Response().Header
	h.Del(fiber.HeaderETag)
	h.Del(headerCDNCacheControl)
	h.Set(fiber.HeaderCacheControl, "no-store")
	if st == fiber.StatusMethodNotAllowed {
		h.Set(fiber.HeaderAllow, allowedMethods)
	}
	body, _ := json.Marshal(errorBody{Error: errorObject{Code: string(code), Message: msg}})
	c.Status(st)
	h.SetContentType(fiber.MIMEApplicationJSON)
	c.Response().SetBody(body)
}

type errorBody struct {
	Error errorObject `json:"error"`
}

type errorObject struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// fiberErrorHandler handles errors that reach Fiber outside the route
// wrappers: router-level failures, and every request fasthttp could not
// read or parse (Fiber's server error handler maps those to *fiber.Error
// and calls this). It uses the same mapping, so they too answer SPEC §7's
// body with CORS and no-store.
func (s *Server) fiberErrorHandler(c *fiber.Ctx, err error) error {
	start := s.clock()
	s.writeError(c, nil, err)
	s.unmatched.observe(c.Response().StatusCode(), start)
	return nil
}

// knownMethod reports whether Fiber routes method m. Fiber answers any
// other method (an extension method, or a lower-case "get": methods are
// case-sensitive) itself, before any route or error handler, with a
// text/plain 400; guardMethods answers those instead.
func knownMethod(m []byte) bool {
	switch string(m) {
	case fiber.MethodGet, fiber.MethodHead, fiber.MethodPost, fiber.MethodPut, fiber.MethodDelete,
		fiber.MethodConnect, fiber.MethodOptions, fiber.MethodTrace, fiber.MethodPatch:
		return true
	}
	return false
}

// guardMethods wraps the fasthttp handler of the app so that a method
// Fiber does not know is answered like any other method but GET and
// OPTIONS: 405, bad_request, Allow, CORS and no-store.
func (s *Server) guardMethods(next fasthttp.RequestHandler) fasthttp.RequestHandler {
	return func(fctx *fasthttp.RequestCtx) {
		if knownMethod(fctx.Request.Header.Method()) {
			next(fctx)
			return
		}
		start := s.clock()
		c := s.app.AcquireCtx(fctx)
		s.writeError(c, nil, errMethod)
		s.app.ReleaseCtx(c)
		s.unmatched.observe(fctx.Response.StatusCode(), start)
	}
}

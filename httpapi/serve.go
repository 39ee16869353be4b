package httpapi

import (
	"fmt"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/marketd/marketd/readmodel"
)

// clock is the wall clock for latency measurement only (the injected
// Config.Now drives everything observable).
func (s *Server) clock() time.Time { return time.Now() }

// serve wraps a route's GET handler: CORS headers, the rate bucket, the
// response memo of a prepared route, the handler, the one error mapping,
// metrics. A panic in a handler is answered as a node failure, never a
// dropped connection. The request reads the clock once: its start is the
// rate window's, the cursors' and the time slots' now, unless Config.Now
// injects another clock.
func (s *Server) serve(rt *route) fiber.Handler {
	return func(c *fiber.Ctx) error {
		start := s.clock()
		rq := request{now: start}
		if s.injectedNow {
			rq.now = s.now()
		}
		setCORS(c)
		err := s.limit(c, rt, rq.now)
		if err == nil && !(rt.prepared && s.servePrepared(c, &rq)) {
			err = s.call(rt, c, rq)
		}
		if err != nil {
			s.writeError(c, rt, err)
		}
		rt.obs.observe(c.Response().StatusCode(), start)
		return nil
	}
}

func (s *Server) call(rt *route, c *fiber.Ctx, rq request) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = readmodel.Wrap(readmodel.Internal, fmt.Errorf("panic: %v", p), "handler panic")
		}
	}()
	return rt.handle(s, c, rt, rq)
}

// preflight answers OPTIONS on a route: 204 with the CORS headers, not
// rate limited (browsers cache it for Access-Control-Max-Age).
func (s *Server) preflight(rt *route) fiber.Handler {
	return func(c *fiber.Ctx) error {
		start := s.clock()
		setCORS(c)
		c.Response().Header.Set(fiber.HeaderAllow, allowedMethods)
		c.Status(fiber.StatusNoContent)
		c.Response().ResetBody()
		rt.obs.observe(fiber.StatusNoContent, start)
		return nil
	}
}

// methodNotAllowed answers every method but GET and OPTIONS on a route: 405
// with the error body (code bad_request) and an Allow header.
func (s *Server) methodNotAllowed(rt *route) fiber.Handler {
	return func(c *fiber.Ctx) error {
		start := s.clock()
		s.writeError(c, rt, errMethod)
		rt.obs.observe(c.Response().StatusCode(), start)
		return nil
	}
}

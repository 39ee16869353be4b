// Package httpapi is marketd's HTTP layer: the public, read-only JSON API of
// SPEC §4–§9 (a Fiber app) and the admin listener (health, readiness,
// Prometheus metrics, ingest trigger, source status).
//
// Handlers are thin: they validate parameters, resolve the collection, read
// one prepared view through Reader and append its bytes into the response
// envelope. Every rule about status codes, errors, CORS, cache headers,
// cursors and rate limits that the HTTP layer owns lives here.
package httpapi

import (
	"context"
	"crypto/rand"
	"errors"
	"hash/maphash"
	"net"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/valyala/fasthttp"
)

// Config configures the public API. The zero value of every field has a
// usable default (see New).
type Config struct {
	RateList, RateItem int // requests per IP per 60 s window; 0 → 120 and 300
	// RateIPv6Prefix is how many leading bits of an IPv6 client address
	// are its rate-limit identity (1–128); 0 → DefaultIPv6Prefix (64).
	RateIPv6Prefix int
	// TrustedProxies are the peers whose X-Forwarded-For is believed: the
	// client IP is the right-most hop that is not in this list.
	TrustedProxies []netip.Prefix
	// CursorKey is the HMAC key of cursors; if empty, New generates a random
	// one (then cursors do not verify on other nodes or after a restart; the
	// caller should warn).
	CursorKey []byte
	CursorTTL time.Duration // cursor lifetime; 0 → 1h
	// RowRetention is how long after its last success a failing
	// collection index's last good summaries are still served (the
	// listings rule, --row-retention); 0 → 10 minutes.
	RowRetention time.Duration
	Now          func() time.Time // clock for rate windows, cursor expiry and time slots; nil → time.Now
	// Registry receives the API's metrics; nil → a private registry.
	Registry *prometheus.Registry
	// OnRequest, when set, is called as each request arrives, before it is
	// routed. It must be cheap: cmd/marketd passes a pace.Gate's Request,
	// which tells the node's background work that reads are arriving.
	OnRequest func()
	// Status answers GET /v1/status; nil: that route answers 502.
	Status StatusReader
}

// DefaultCursorTTL is the cursor lifetime when Config.CursorTTL is zero.
const DefaultCursorTTL = time.Hour

// Server is the public API. Create it with New, serve with Listen, stop with
// Shutdown. It is safe for concurrent use.
type Server struct {
	app *fiber.App
	r   Reader
	st  StatusReader // nil: GET /v1/status is 502
	log zerolog.Logger
	now func() time.Time
	// injectedNow: Config.Now set a clock; else a request's start is its now.
	injectedNow  bool
	cursors      *cursorCodec
	rowRetention time.Duration
	limiter      *limiter
	trusted      []netip.Prefix
	metrics      *httpMetrics
	routes       []*route
	unmatched    *routeObservers // requests no route answered (no route, unknown method, unparsable)
	index        []byte          // the GET /v1 body
	etagSeed     maphash.Seed    // per-process seed of view ETags (tagOf)
	indexTag     etag
	memo         *pageMemo             // bodies of hot pages; nil: every page is built
	resp         *pageMemo             // whole responses of prepared routes (prepared.go)
	stamp        atomic.Pointer[stamp] // the last time slot written
	// startingSaid: the start-up state (no collection index read yet)
	// was logged; it is logged once, not per request.
	startingSaid atomic.Bool
}

// New builds the public API over r. It fails when a rate is negative, the
// cursor key cannot be generated, or the metrics cannot be registered (a
// second Server on the same Registry).
func New(cfg Config, r Reader, log zerolog.Logger) (*Server, error) {
	if r == nil {
		return nil, errors.New("httpapi: nil Reader")
	}
	if cfg.RateList < 0 || cfg.RateItem < 0 {
		return nil, errors.New("httpapi: negative rate limit")
	}
	if cfg.RateIPv6Prefix < 0 || cfg.RateIPv6Prefix > 128 {
		return nil, errors.New("httpapi: IPv6 rate prefix must be 1 to 128 bits")
	}
	if cfg.RateIPv6Prefix == 0 {
		cfg.RateIPv6Prefix = DefaultIPv6Prefix
	}
	if cfg.RateList == 0 {
		cfg.RateList = 120
	}
	if cfg.RateItem == 0 {
		cfg.RateItem = 300
	}
	if cfg.CursorTTL <= 0 {
		cfg.CursorTTL = DefaultCursorTTL
	}
	if cfg.RowRetention <= 0 {
		cfg.RowRetention = 10 * time.Minute
	}
	injectedNow := cfg.Now != nil
	if !injectedNow {
		cfg.Now = time.Now
	}
	key := cfg.CursorKey
	if len(key) == 0 {
		key = make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, err
		}
	}
	reg := cfg.Registry
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m, err := newHTTPMetrics(reg)
	if err != nil {
		return nil, err
	}
	memo, err := newPageMemo(reg)
	if err != nil {
		return nil, err
	}
	resp, err := newMemo(reg, "marketd_http_response_memo_total",
		"Requests of prepared routes answered from a remembered response (hit) or built (miss).")
	if err != nil {
		return nil, err
	}
	s := &Server{
		r:            r,
		st:           cfg.Status,
		log:          log.With().Str("component", "httpapi").Logger(),
		now:          cfg.Now,
		injectedNow:  injectedNow,
		cursors:      newCursorCodec(key, cfg.CursorTTL),
		limiter:      newLimiter(cfg.RateList, cfg.RateItem, defaultMaxClients, cfg.RateIPv6Prefix),
		trusted:      cfg.TrustedProxies,
		metrics:      m,
		etagSeed:     maphash.MakeSeed(),
		memo:         memo,
		resp:         resp,
		rowRetention: cfg.RowRetention,
	}
	s.app = fiber.New(fiber.Config{
		AppName:               "marketd",
		CaseSensitive:         true, // Solana mints are case-sensitive
		StrictRouting:         false,
		DisableStartupMessage: true,
		ErrorHandler:          s.fiberErrorHandler,
		ReadTimeout:           10 * time.Second,
		WriteTimeout:          10 * time.Second,
		IdleTimeout:           75 * time.Second,
		BodyLimit:             MaxRequestBody,
		// ReadBufferSize bounds the request line plus all headers
		// (fasthttp reads them into this buffer); larger answers 400.
		ReadBufferSize:  MaxRequestHead,
		WriteBufferSize: writeBufferSize,
	})
	s.unmatched = s.metrics.route("unmatched")
	srv := s.app.Server() // built by fiber.New; Listen and Test serve through it
	srv.Handler = s.guardMethods(srv.Handler)
	if cfg.OnRequest != nil {
		next, note := srv.Handler, cfg.OnRequest
		srv.Handler = func(fctx *fasthttp.RequestCtx) {
			note()
			next(fctx)
		}
	}
	s.register()
	return s, nil
}

// App returns the Fiber app (for tests with app.Test).
func (s *Server) App() *fiber.App { return s.app }

// Listen serves the API on ln until Shutdown; it returns nil after a clean
// shutdown. The caller learns the bound address from ln.Addr().
func (s *Server) Listen(ln net.Listener) error { return s.app.Listener(ln) }

// Shutdown stops accepting connections and waits for in-flight requests
// until ctx is done.
func (s *Server) Shutdown(ctx context.Context) error { return s.app.ShutdownWithContext(ctx) }

// MaxRequestHead is the most bytes of request line plus headers a request
// may have, and MaxRequestBody the largest body it may carry (a GET needs
// none); a request over either is answered 400 bad_request (docs/api.md,
// Limits).
const (
	MaxRequestHead = 8 << 10
	MaxRequestBody = 16 << 10
)

// writeBufferSize is each connection's response write buffer. Fiber's
// default, 4 KiB, sends the headers and any larger body in two writes, and
// the syscalls are most of a request's cost; 32 KiB sends every page of up
// to 25 items (13–16 KB) with its headers in one. fasthttp keeps the buffer
// for a keep-alive connection's lifetime: 32 KiB per open connection (its
// ReduceMemoryUsage would release it between requests, at the price of an
// extra read syscall per request).
const writeBufferSize = 32 << 10

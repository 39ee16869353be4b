// Package client is a Go client of the marketd public API (SPEC §4–§9):
// typed calls for every endpoint, iterators that walk cursors and apply
// SPEC's deduplication (listings by orderId, sales by tx plus orderId,
// change-feed events by eventId), 429
// answered by waiting Retry-After (bounded), and 502 surfaced as ErrUnknown,
// never as an empty result.
//
// Its response types are readmodel/wire's, the ones the server renders
// its bodies from, so every field the server writes is decoded. It
// imports only the standard library, marketd's readmodel vocabulary
// (Chain, Price, MarketItem, ...) and readmodel/wire, so importing it
// pulls in no server code.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/marketd/marketd/readmodel"
)

// Client calls one marketd API. The zero value is not usable; use New. A
// Client is safe for concurrent use.
type Client struct {
	base       string
	hc         *http.Client
	maxRetries int
	maxWait    time.Duration
	userAgent  string
	strict     bool
	sleep      func(ctx context.Context, d time.Duration) error // tests replace it
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient sets the HTTP client (default: one with a 30 s timeout).
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.hc = hc } }

// WithRetries sets how many times a 429 is retried after its Retry-After
// (default 3; 0 returns the first 429 as an error).
func WithRetries(n int) Option { return func(c *Client) { c.maxRetries = max(n, 0) } }

// WithMaxRetryWait bounds one wait for Retry-After (default 61 s, a whole
// rate window). A 429 asking for longer is returned as an error at once.
func WithMaxRetryWait(d time.Duration) Option { return func(c *Client) { c.maxWait = d } }

// WithStrictDecoding makes a call fail when an answer holds a field the
// client's types do not: for a consumer's tests against a newer server.
// By default such fields are ignored.
func WithStrictDecoding() Option { return func(c *Client) { c.strict = true } }

// WithUserAgent sets the User-Agent header.
func WithUserAgent(ua string) Option { return func(c *Client) { c.userAgent = ua } }

// New returns a client of the API at baseURL, the service host root (for
// example "https://api.example.com"; paths begin with /v1).
func New(baseURL string, opts ...Option) *Client {
	c := &Client{
		base:       strings.TrimRight(baseURL, "/"),
		hc:         &http.Client{Timeout: 30 * time.Second},
		maxRetries: 3,
		maxWait:    61 * time.Second,
		userAgent:  "marketd-go-client",
		sleep:      sleepCtx,
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Errors a call can be tested against with errors.Is. Every error the API
// answered is an *Error, which matches exactly one of them.
var (
	// ErrUnknown is a 502 upstream_error: the data is unknown right now
	// (for listings: every source failed). It is never "empty": retry later.
	ErrUnknown     = errors.New("marketd: upstream unavailable; the answer is unknown, not empty")
	ErrBadRequest  = errors.New("marketd: bad request")
	ErrNotFound    = errors.New("marketd: not found")
	ErrRateLimited = errors.New("marketd: rate limited")
)

// Error is an error answer of the API (SPEC §7).
type Error struct {
	Status  int            // HTTP status
	Code    readmodel.Code // bad_request, not_found, rate_limited, upstream_error
	Message string         // human-readable; may change: branch on Code
	// RetryAfter, Limit, Remaining and Reset are set on 429.
	RetryAfter time.Duration
	Limit      int
	Remaining  int
	Reset      time.Time
}

func (e *Error) Error() string {
	return fmt.Sprintf("marketd: %d %s: %s", e.Status, e.Code, e.Message)
}

// Is matches the sentinel of e's status.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrUnknown:
		return e.Status == http.StatusBadGateway
	case ErrBadRequest:
		return e.Status == http.StatusBadRequest
	case ErrNotFound:
		return e.Status == http.StatusNotFound
	case ErrRateLimited:
		return e.Status == http.StatusTooManyRequests
	}
	return false
}

// get fetches path (with query q) and decodes a 200 body into out. A 429
// is retried after Retry-After, at most maxRetries times, each wait at most
// maxWait.
func (c *Client) get(ctx context.Context, path string, q url.Values, out any) error {
	u := c.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	for attempt := 0; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return err
		}
		req.Header.Set("Accept", "application/json")
		if c.userAgent != "" {
			req.Header.Set("User-Agent", c.userAgent)
		}
		resp, err := c.hc.Do(req)
		if err != nil {
			return err
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
		resp.Body.Close()
		if err != nil {
			return err
		}
		if resp.StatusCode == http.StatusOK {
			if err := c.decode(body, out); err != nil {
				return fmt.Errorf("marketd: decode %s: %w", path, err)
			}
			return nil
		}
		apiErr := decodeError(resp, body)
		if apiErr.Status == http.StatusTooManyRequests && attempt < c.maxRetries &&
			apiErr.RetryAfter > 0 && apiErr.RetryAfter <= c.maxWait {
			if err := c.sleep(ctx, apiErr.RetryAfter); err != nil {
				return err
			}
			continue
		}
		return apiErr
	}
}

// decode decodes a 200 body into out; strictly (no unknown field) when
// the client was made WithStrictDecoding.
func (c *Client) decode(body []byte, out any) error {
	if !c.strict {
		return json.Unmarshal(body, out)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	return dec.Decode(out)
}

func decodeError(resp *http.Response, body []byte) *Error {
	e := &Error{Status: resp.StatusCode}
	var b struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &b) == nil && b.Error.Code != "" {
		e.Code, e.Message = readmodel.Code(b.Error.Code), b.Error.Message
	} else {
		e.Message = http.StatusText(resp.StatusCode)
		switch resp.StatusCode {
		case http.StatusBadRequest:
			e.Code = readmodel.BadRequest
		case http.StatusNotFound:
			e.Code = readmodel.NotFound
		case http.StatusTooManyRequests:
			e.Code = readmodel.RateLimited
		case http.StatusBadGateway:
			e.Code = readmodel.UpstreamError
		}
	}
	if resp.StatusCode == http.StatusTooManyRequests {
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s >= 0 {
			e.RetryAfter = time.Duration(s) * time.Second
		}
		e.Limit, _ = strconv.Atoi(resp.Header.Get("X-RateLimit-Limit"))
		e.Remaining, _ = strconv.Atoi(resp.Header.Get("X-RateLimit-Remaining"))
		e.Reset, _ = time.Parse(time.RFC3339, resp.Header.Get("X-RateLimit-Reset"))
	}
	return e
}

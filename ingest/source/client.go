package source

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/marketd/marketd/readmodel"
)

// Error classes of a failed poll; they become readmodel.PollStatus.ErrorClass.
const (
	ClassTimeout    = "timeout"     // no answer within the timeout
	ClassHTTP5xx    = "http_5xx"    // the upstream answered 5xx
	ClassHTTPStatus = "http_status" // any other non-200 status
	ClassBadPayload = "bad_payload" // invalid JSON, wrong shape, too large
	ClassTransport  = "transport"   // connection refused, reset, DNS
)

type classError struct {
	class string
	err   error
}

func (e *classError) Error() string { return e.class + ": " + e.err.Error() }
func (e *classError) Unwrap() error { return e.err }

func classed(class string, err error) error { return &classError{class: class, err: err} }

// ErrorClass returns the class of a poll error returned by this package
// (ClassTimeout, ClassHTTP5xx, ...), ClassTransport for any other non-nil
// error and "" for nil.
func ErrorClass(err error) string {
	if err == nil {
		return ""
	}
	var ce *classError
	if errors.As(err, &ce) {
		return ce.class
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return ClassTimeout
	}
	return ClassTransport
}

// Client reads one upstream. It is safe for concurrent use.
type Client struct {
	src     readmodel.Source
	base    string
	timeout time.Duration
	maxBody int64
	hc      *http.Client
}

// NewClient returns a client for src at base (no trailing slash needed).
// timeout bounds each request (every page of a walk separately); 0 means 30 s.
// hc may be nil for a default client.
func NewClient(src readmodel.Source, base string, timeout time.Duration, hc *http.Client) *Client {
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	if hc == nil {
		hc = &http.Client{Transport: &http.Transport{
			Proxy:               http.ProxyFromEnvironment,
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
			MaxIdleConnsPerHost: 8,
			IdleConnTimeout:     90 * time.Second,
		}}
	}
	return &Client{src: src, base: strings.TrimRight(base, "/"), timeout: timeout, maxBody: MaxBody, hc: hc}
}

// WithMaxBody returns a copy of c whose answers may be at most n bytes.
func (c *Client) WithMaxBody(n int64) *Client {
	cp := *c
	cp.maxBody = n
	return &cp
}

// Source is the upstream this client reads.
func (c *Client) Source() readmodel.Source { return c.src }

// get fetches base+path?q and returns the body of a 200 answer. Errors
// are *readmodel.Error with code upstream_error wrapping a classed cause.
func (c *Client) get(ctx context.Context, path string, q url.Values) ([]byte, error) {
	return c.getInto(ctx, path, q, nil)
}

// getInto is get reading the body into buf (a new buffer when nil); the
// returned body is buf's bytes.
func (c *Client) getInto(ctx context.Context, path string, q url.Values, buf *bytes.Buffer) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	u := c.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, c.fail(classed(ClassTransport, err))
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, c.fail(classed(ClassTimeout, err))
		}
		return nil, c.fail(classed(ClassTransport, err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		class := ClassHTTPStatus
		if resp.StatusCode >= 500 {
			class = ClassHTTP5xx
		}
		return nil, c.fail(classed(class, fmt.Errorf("status %d", resp.StatusCode)))
	}
	if buf == nil {
		buf = new(bytes.Buffer)
	}
	body, err := readBodyInto(buf, resp.Body, c.maxBody, resp.ContentLength)
	if err != nil {
		if ctx.Err() != nil {
			return nil, c.fail(classed(ClassTimeout, err))
		}
		return nil, c.fail(err)
	}
	return body, nil
}

// getJSON is get plus a strict decode into v.
func (c *Client) getJSON(ctx context.Context, path string, q url.Values, v any) error {
	body, err := c.get(ctx, path, q)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(body, v); err != nil {
		return c.fail(classed(ClassBadPayload, err))
	}
	return nil
}

func (c *Client) fail(err error) error {
	return readmodel.Wrap(readmodel.UpstreamError, err, fmt.Sprintf("%s: poll failed (%s)", c.src, ErrorClass(err)))
}

// bodyPool holds page bodies' buffers for walk: a cycle at 100,000
// collections reads about 3 GB of pages, which allocating each afresh
// made a sixteenth of the cycle's allocated bytes.
var bodyPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// releaseBody gives a page's body buffer back to bodyPool (a variable so
// that a test can see when walk does it).
var releaseBody = func(buf *bytes.Buffer) { bodyPool.Put(buf) }

// walk fetches every page of a paged endpoint, decoding each with decode
// and calling fn per page in order. While fn handles a page the next one
// is already being fetched and decoded, so the two overlap. A decoded page
// may alias its body (DecodeLazyGrouped's raw rows): the body's buffer
// serves another page only once fn has returned, so fn must not keep what
// it was given. It stops at the first error (from the upstream or from
// fn) and returns only when no fetch is in flight.
func walk[P any](ctx context.Context, c *Client, path string, q url.Values, limit int,
	decode func([]byte) (P, string, error), fn func(P) error) error {
	if q == nil {
		q = url.Values{}
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		p    P
		next string
		err  error
		buf  *bytes.Buffer // the body's, back to bodyPool once the page is handled
	}
	fetch := func(q url.Values) chan result {
		ch := make(chan result, 1)
		go func() {
			r := result{buf: bodyPool.Get().(*bytes.Buffer)}
			body, err := c.getInto(ctx, path, q, r.buf)
			if err != nil {
				r.err = err
			} else if r.p, r.next, err = decode(body); err != nil {
				r.err = c.fail(err)
			}
			ch <- r
		}()
		return ch
	}
	cur := fetch(q)
	for pages := 0; ; pages++ {
		r := <-cur
		if r.err != nil {
			releaseBody(r.buf)
			return r.err
		}
		var next chan result
		if nc := r.next; nc != "" && nc != q.Get("cursor") {
			if pages > 1_000_000 {
				return c.fail(classed(ClassBadPayload, errors.New("cursor never ends")))
			}
			q2 := url.Values{}
			for k, v := range q {
				q2[k] = v
			}
			q2.Set("cursor", nc)
			q = q2
			next = fetch(q2)
		}
		err := fn(r.p)
		releaseBody(r.buf)
		if err != nil {
			if next != nil {
				cancel()
				releaseBody((<-next).buf)
			}
			return err
		}
		if next == nil {
			return nil
		}
		cur = next
	}
}

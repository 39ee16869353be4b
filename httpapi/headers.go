package httpapi

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"

	"github.com/gofiber/fiber/v2"
)

// exposedHeaders are the response headers a page on another origin may
// read beyond the CORS-safelisted ones (Cache-Control, Content-Type, ...):
// the validator it revalidates with and the wait SPEC §7 tells a
// rate-limited client to honour. Without them a browser hides the headers.
const exposedHeaders = "ETag, Retry-After, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset"

// corsHeaders are SPEC §5's four CORS headers plus the exposed response
// headers, names in canonical form.
var corsHeaders = [5][2][]byte{
	{[]byte(fiber.HeaderAccessControlAllowOrigin), []byte("*")},
	{[]byte(fiber.HeaderAccessControlAllowMethods), []byte(corsMethods)},
	{[]byte(fiber.HeaderAccessControlAllowHeaders), []byte("Content-Type, Accept")},
	{[]byte(fiber.HeaderAccessControlMaxAge), []byte("86400")},
	{[]byte(fiber.HeaderAccessControlExposeHeaders), []byte(exposedHeaders)},
}

// setCORS writes SPEC §5's four CORS headers and Access-Control-Expose-Headers.
// They go on every response, with or without an Origin request header.
// (SetCanonical: the names need no normalizing, which Set would do on every
// request.)
func setCORS(c *fiber.Ctx) {
	h := &c.Response().Header
	for _, kv := range corsHeaders {
		h.SetCanonical(kv[0], kv[1])
	}
}

const headerCDNCacheControl = "CDN-Cache-Control"

var (
	headerCacheControlBytes    = []byte(fiber.HeaderCacheControl)
	headerCDNCacheControlBytes = []byte(headerCDNCacheControl)
)

// etag is a weak entity tag computed from what a body was built from (a
// response's identity, Server.tagOf; the static documents' text), never by
// hashing the body. A zero etag means "none": a view without a version
// gets no ETag and no 304.
type etag struct {
	h     uint64
	valid bool
}

// newETag starts an entity tag for route kind k of static content.
func newETag(k string) etag {
	return etag{h: fnvOffset, valid: true}.str(k)
}

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func (e etag) str(s string) etag {
	h := e.h
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime
	}
	h ^= 0xff // separator
	h *= fnvPrime
	e.h = h
	return e
}

// appendTo appends W/"<16 hex>".
func (e etag) appendTo(dst []byte) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], e.h)
	dst = append(dst, 'W', '/', '"')
	dst = hex.AppendEncode(dst, b[:])
	return append(dst, '"')
}

// writeCache sets the success cache headers of rt and, when tag is valid,
// the ETag. It reports whether the request's If-None-Match matches, in
// which case it has already turned the response into a 304 and the caller
// writes no body.
func writeCache(c *fiber.Ctx, rt *route, tag etag) (notModified bool) {
	return writeCacheHeaders(c, rt.cacheControl, rt.cdnCacheControl, tag)
}

// writeCacheHeaders is writeCache with the Cache-Control and
// CDN-Cache-Control values given.
func writeCacheHeaders(c *fiber.Ctx, cc, cdn []byte, tag etag) (notModified bool) {
	h := &c.Response().Header
	h.SetCanonical(headerCacheControlBytes, cc)
	h.SetCanonical(headerCDNCacheControlBytes, cdn)
	if !tag.valid {
		return false
	}
	var buf [32]byte
	t := tag.appendTo(buf[:0])
	h.SetBytesV(fiber.HeaderETag, t)
	inm := c.Request().Header.Peek(fiber.HeaderIfNoneMatch)
	if len(inm) == 0 || !etagMatches(inm, t) {
		return false
	}
	c.Status(fiber.StatusNotModified)
	c.Response().ResetBody()
	return true
}

// etagMatches applies If-None-Match's weak comparison: any listed tag
// equal to tag after dropping W/ prefixes, or "*".
func etagMatches(header, tag []byte) bool {
	tag = bytes.TrimPrefix(tag, []byte("W/"))
	for len(header) > 0 {
		var item []byte
		if i := bytes.IndexByte(header, ','); i >= 0 {
			item, header = header[:i], header[i+1:]
		} else {
			item, header = header, nil
		}
		item = bytes.TrimSpace(item)
		if len(item) == 1 && item[0] == '*' {
			return true
		}
		item = bytes.TrimPrefix(item, []byte("W/"))
		if bytes.Equal(item, tag) {
			return true
		}
	}
	return false
}

// setJSON marks the response as JSON with status 200 and an empty body.
func setJSON(c *fiber.Ctx) {
	c.Status(fiber.StatusOK)
	c.Response().Header.SetContentType(fiber.MIMEApplicationJSON)
	c.Response().ResetBody()
}

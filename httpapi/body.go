package httpapi

import (
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/marketd/marketd/readmodel"
)

// Responses are built by appending prepared bytes straight into fasthttp's
// pooled response body buffer: no item is marshalled per request.

func appendTime(resp *fasthttp.Response, now time.Time) {
	var b [40]byte
	resp.AppendBody(now.UTC().AppendFormat(b[:0], readmodel.TimeFormat))
}

// appendUSD appends prepared bytes b with their USD slots filled from q
// (readmodel.TemplateUSD): the only per-request work on a prepared body,
// a multiplication and a float format per price.
func appendUSD(resp *fasthttp.Response, b []byte, q *readmodel.USDQuote) {
	for {
		i := readmodel.NextUSDSlot(b)
		if i < 0 || len(b)-i < readmodel.USDSlotLen {
			resp.AppendBody(b)
			return
		}
		resp.AppendBody(b[:i])
		var num [32]byte
		resp.AppendBody(q.AppendSlot(num[:0], b[i:i+readmodel.USDSlotLen]))
		b = b[i+readmodel.USDSlotLen:]
	}
}

// appendTimed appends a TimedBody with now in its slot and its USD slots
// filled from q.
func appendTimed(resp *fasthttp.Response, tb readmodel.TimedBody, now time.Time, q *readmodel.USDQuote) {
	appendUSD(resp, tb.Head, q)
	if tb.Timed {
		appendTime(resp, now)
		appendUSD(resp, tb.Tail, q)
	}
}

// appendItems appends `[item,item,...]` with USD slots filled from q.
func appendItems(resp *fasthttp.Response, items [][]byte, q *readmodel.USDQuote) {
	resp.AppendBodyString("[")
	for i, it := range items {
		if i > 0 {
			resp.AppendBodyString(",")
		}
		appendUSD(resp, it, q)
	}
	resp.AppendBodyString("]")
}

// appendPagination appends `,"pagination":{...}` with next as the cursor
// text (nil → null).
func appendPagination(resp *fasthttp.Response, next []byte, hasMore bool) {
	resp.AppendBodyString(`,"pagination":{"nextCursor":`)
	if next == nil {
		resp.AppendBodyString("null")
	} else {
		resp.AppendBodyString(`"`)
		resp.AppendBody(next) // base64url: nothing to escape
		resp.AppendBodyString(`"`)
	}
	if hasMore {
		resp.AppendBodyString(`,"hasMore":true}`)
	} else {
		resp.AppendBodyString(`,"hasMore":false}`)
	}
}

// writePage writes the envelope of a keyset-paged list (collections,
// sales): the items, then pagination with a cursor of kind bound to bind
// that resumes after page.Next. A page with HasMore but no position ends
// the walk rather than minting a cursor that would restart it.
func (s *Server) writePage(c *fiber.Ctx, page readmodel.Page, kind cursorKind, bind string, now time.Time, q *readmodel.USDQuote) {
	resp := c.Response()
	resp.AppendBodyString(`{"data":`)
	appendItems(resp, page.Items, q)
	var next []byte
	hasMore := page.HasMore && page.Next != ""
	if hasMore {
		var b [512]byte
		next = s.cursors.appendCursor(b[:0], cursor{kind: kind, bind: bind, pos: page.Next}, now)
	}
	appendPagination(resp, next, hasMore)
	resp.AppendBodyString("}")
}

package httpapi

import (
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/render"
)

// Responses are built by appending prepared bytes straight into fasthttp's
// pooled response body buffer: no item is marshalled per request.

// stamp is a time formatted in readmodel.TimeFormat, which has millisecond
// precision: every request within the same millisecond writes the same
// text, formatted once (Server.stamp).
type stamp struct {
	ms   int64
	n    int
	text [32]byte
}

// appendTime appends now in readmodel.TimeFormat.
func (s *Server) appendTime(resp *fasthttp.Response, now time.Time) {
	resp.AppendBody(s.timeText(now))
}

// timeText returns now in readmodel.TimeFormat: a shared buffer, never
// modified.
func (s *Server) timeText(now time.Time) []byte {
	ms := now.UnixMilli()
	if st := s.stamp.Load(); st != nil && st.ms == ms {
		return st.text[:st.n]
	}
	st := &stamp{ms: ms}
	st.n = len(now.UTC().AppendFormat(st.text[:0], readmodel.TimeFormat))
	s.stamp.Store(st)
	return st.text[:st.n]
}

// appendTimed appends a TimedBody with now in its slot.
func (s *Server) appendTimed(resp *fasthttp.Response, tb render.TimedBody, now time.Time) {
	resp.AppendBody(tb.Head)
	if tb.Timed {
		s.appendTime(resp, now)
		resp.AppendBody(tb.Tail)
	}
}

// appendItems appends `[item,item,...]`.
func appendItems(resp *fasthttp.Response, items [][]byte) {
	resp.AppendBodyString("[")
	for i, it := range items {
		if i > 0 {
			resp.AppendBodyString(",")
		}
		resp.AppendBody(it)
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
func (s *Server) writePage(c *fiber.Ctx, page render.Page, kind cursorKind, bind string, now time.Time) {
	resp := c.Response()
	resp.AppendBodyString(`{"data":`)
	appendItems(resp, page.Items)
	var next []byte
	hasMore := mints(page)
	if hasMore {
		var b [512]byte
		next = s.cursors.appendCursor(b[:0], cursor{kind: kind, bind: bind, pos: page.Next}, now)
	}
	appendPagination(resp, next, hasMore)
	resp.AppendBodyString("}")
}

// mints reports whether writePage mints a next cursor for page (its
// identity then declares mintsCursor).
func mints(page render.Page) bool { return page.HasMore && page.Next != "" }

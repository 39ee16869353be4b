package httpapi

import (
	"encoding/json"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/render"
)

// MaxBatchTokens is the most ids one GET /v1/tokens request may name.
const MaxBatchTokens = 50

var (
	errBatchNoIDs   = readmodel.Errorf(readmodel.BadRequest, "ids is required: a comma-separated list of chain/address/tokenId")
	errBatchTooMany = readmodel.Errorf(readmodel.BadRequest, "ids names more than %d tokens", MaxBatchTokens)
	errBatchBadID   = readmodel.Errorf(readmodel.BadRequest, "every id in ids must be chain/address/tokenId, comma-separated, none empty")
)

// getTokens serves GET /v1/tokens?ids=chain/address/tokenId,...: up to
// MaxBatchTokens tokens in one request, counted once in the item bucket.
// The list as a whole is validated first (absent or empty, more than 50
// ids, an empty id or one that is not three /-separated segments: 400,
// SPEC's error body). Each id is then answered in request order, from the
// same prepared records as the single token endpoint (Reader.Token): its
// TokenDetail, or {error:{code,message}} with the code and message the
// single endpoint would answer for that path (bad_request, not_found; a
// node failure is not_found, as there). Never 502.
func (s *Server) getTokens(c *fiber.Ctx, rt *route, rq request) error {
	now := rq.now
	// raw is a view of the request (Fiber is not Immutable): the ids
	// below are views of it, and the memo key copies it.
	raw := c.Query("ids")
	if len(raw) == 0 {
		return errBatchNoIDs
	}
	// Count before splitting: a list over the limit costs no allocation.
	if n := strings.Count(raw, ",") + 1; n > MaxBatchTokens {
		return errBatchTooMany
	}
	type part struct{ chain, address, tokenID string }
	var partsBuf [MaxBatchTokens]part
	parts := partsBuf[:0]
	list := raw
	for list != "" || len(parts) == 0 {
		id := list
		if i := strings.IndexByte(list, ','); i >= 0 {
			id, list = list[:i], list[i+1:]
			if list == "" {
				return errBatchBadID // a trailing comma names an empty id
			}
		} else {
			list = ""
		}
		a := strings.IndexByte(id, '/')
		if a <= 0 {
			return errBatchBadID
		}
		b := strings.IndexByte(id[a+1:], '/')
		if b <= 0 {
			return errBatchBadID
		}
		b += a + 1
		if b == len(id)-1 || strings.IndexByte(id[b+1:], '/') >= 0 {
			return errBatchBadID
		}
		parts = append(parts, part{id[:a], id[a+1 : b], id[b+1:]})
	}

	ctx := c.UserContext()
	// asOf depends on the chain alone (tokenAsOf): resolved once per
	// chain as the request spells it, read as validToken reads it (0: no
	// such chain).
	var asOfs [8]struct {
		text string
		at   int64
	}
	nAsOf := 0
	asOfOf := func(text string) int64 {
		for i := 0; i < nAsOf; i++ {
			if asOfs[i].text == text {
				return asOfs[i].at
			}
		}
		var at int64
		if chain, ok := readmodel.ParseChain(strings.ToLower(text)); ok {
			at = s.tokenAsOf(ctx, chain)
		}
		if nAsOf < len(asOfs) {
			asOfs[nAsOf].text, asOfs[nAsOf].at = text, at
			nAsOf++
		}
		return at
	}
	// What the batch is: the ids as asked and the asOf of each one's
	// chain (from the polls, before any token is read); below, each
	// token's view version and USD quote, and when the clock alone
	// changes it (its Until). A timed body's time slots are the
	// request's, in no identity. A repeated request is answered from the
	// page memo without validating an id or reading a token, under the
	// identity declared before the reads guarded by TokensVersion (which
	// moves with every token view), until the clock passes the body's
	// bound.
	var kb [4096]byte
	id := newIdentity(kb[:0], identTokens).str(raw)
	for _, p := range parts {
		id = id.num(uint64(asOfOf(p.chain)))
	}
	pre := id // declared before the reads
	var guard uint64
	guarded := false
	if s.memo != nil {
		guard, guarded = s.r.TokensVersion()
	}
	var h uint64
	if guarded {
		// In place after pre's bytes, which the declarations below
		// overwrite: rememberPage's is written anew.
		var e *memoEntry
		if e, h = s.memo.lookup(pre.guarded(nil, guard), now.UnixNano()); e != nil {
			setJSON(c)
			if tag := (etag{h: e.tag, valid: true}); !writeCache(c, rt, tag) {
				c.Response().SetBodyRaw(e.body)
				s.keepTagged(c, rq, tag, e.expires, nil, rt.cacheControl, rt.cdnCacheControl)
			}
			return nil
		}
	}
	type answer struct {
		tv   render.TokenView
		asOf int64
		err  error
	}
	var answersBuf [MaxBatchTokens]answer
	answers := answersBuf[:len(parts)]
	for i, p := range parts {
		a := &answers[i]
		chain, address, err := validToken(p.chain, p.address, p.tokenID)
		if err == nil {
			a.tv, err = s.r.Token(ctx, chain, address, p.tokenID)
			if err == nil && len(a.tv.Body.Head) == 0 {
				err = errTokenMissing
			}
		}
		if a.err = err; err != nil {
			id = id.unversioned() // an error item: no ETag, no 304
			continue
		}
		a.asOf = asOfOf(p.chain)
		id = id.version(a.tv.Version).num(a.tv.USD).expires(a.tv.Until)
	}
	var slotsBuf [MaxBatchTokens]int
	slots := slotsBuf[:0]
	setJSON(c)
	resp := c.Response()
	resp.AppendBodyString(`{"data":[`)
	for i := range answers {
		if i > 0 {
			resp.AppendBodyString(",")
		}
		a := &answers[i]
		if a.err == nil {
			if a.tv.Body.Timed {
				slots = append(slots, len(resp.Body())+len(a.tv.Body.Head)) // appendTimedAsOf writes the time after Head
			}
			s.appendTimedAsOf(resp, a.tv.Body, now, a.asOf, true)
			continue
		}
		_, code, msg := status(rt, a.err)
		if c := readmodel.ErrorCode(a.err); c == readmodel.Internal || c == readmodel.UpstreamError {
			s.log.Error().Err(a.err).Str("route", rt.pattern).Msg("batch token read failed")
		}
		b, _ := json.Marshal(errorBody{Error: errorObject{Code: string(code), Message: msg}})
		resp.AppendBody(b)
	}
	resp.AppendBodyString("]}")
	if guarded {
		// Whole, so a timed body only within its millisecond; the
		// response memo writes each request's time into the slots.
		var gb [4096]byte
		s.rememberPage(c, pre.guarded(gb[:0], guard), h, id, slots, now)
	}
	// The body is built: on a match, writeCache empties it for the 304.
	if !writeCache(c, rt, s.tagOf(id)) {
		s.keep(c, rq, id, slots, rt.cacheControl, rt.cdnCacheControl)
	}
	return nil
}

package httpapi

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/render"
)

// memoTokens is the page memo's kind for batch token bodies.
const memoTokens cursorKind = 'T'

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
	// asOf depends on the chain only (tokenAsOf): read once per chain.
	var asOfs [8]struct {
		chain readmodel.Chain
		at    int64
	}
	nAsOf := 0
	asOfOf := func(chain readmodel.Chain) int64 {
		for i := 0; i < nAsOf; i++ {
			if asOfs[i].chain == chain {
				return asOfs[i].at
			}
		}
		at := s.tokenAsOf(ctx, chain)
		if nAsOf < len(asOfs) {
			asOfs[nAsOf].chain, asOfs[nAsOf].at = chain, at
			nAsOf++
		}
		return at
	}
	// A batch's body is a pure function of the ids, the tokens' views
	// (TokensVersion says none changed), the asOf of each chain and the
	// clock (a listing's expiry, or the millisecond when a body embeds the
	// read time). A repeated request is answered from the page memo
	// without reading a token, until one of those moves.
	var kb [4096]byte
	key := newMemoKey(kb[:0], memoTokens).str(raw)
	versioned := s.memo != nil
	if versioned {
		var v uint64
		if v, versioned = s.r.TokensVersion(); versioned {
			key = key.num(v)
			for _, p := range parts {
				key = key.num(uint64(asOfOf(readmodel.Chain(p.chain))))
			}
		}
	}
	versioned = versioned && s.memo != nil
	nowNs := now.UnixNano()
	var h uint64
	if versioned {
		var e *memoEntry
		if e, h = s.memo.lookup(key, nowNs); e != nil {
			setJSON(c)
			if tag := (etag{h: e.tag, valid: true}); !writeCache(c, rt, tag) {
				c.Response().SetBodyRaw(e.body)
				s.keep(c, rq, tag, e.expires, nil, rt.cacheControl, rt.cdnCacheControl)
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
	tag := s.newETag("tokens")
	timed := false
	var until int64 // the earliest view's Until; 0: none
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
			tag.valid = false // an error item is not versioned: no ETag, no 304
			continue
		}
		a.asOf = asOfOf(chain)
		timed = timed || a.tv.Body.Timed
		if u := a.tv.Until; u != 0 && (until == 0 || u < until) {
			until = u
		}
		tag = tag.str(string(chain)).str(address).str(p.tokenID).version(a.tv.Version).num(a.tv.USD).num(uint64(a.asOf))
	}
	// The response memo writes each request's time into the slots; the
	// page memo, which keeps bodies whole, only within the millisecond.
	pageUntil := until
	if timed { // the body embeds the read time, to the millisecond
		if end := (now.UnixMilli() + 1) * int64(time.Millisecond); pageUntil == 0 || end < pageUntil {
			pageUntil = end
		}
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
	if tag.valid {
		if versioned {
			s.memo.putUntil(key, h, resp.Body(), tag.h, pageUntil)
		}
		// The body is built: on a match, writeCache empties it for the 304.
		if !writeCache(c, rt, tag) {
			s.keep(c, rq, tag, until, slots, rt.cacheControl, rt.cdnCacheControl)
		}
	} else {
		writeCache(c, rt, etag{})
	}
	return nil
}

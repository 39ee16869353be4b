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
func (s *Server) getTokens(c *fiber.Ctx, rt *route, now time.Time) error {
	args := c.Context().QueryArgs()
	raw := args.Peek("ids")
	if len(raw) == 0 {
		return errBatchNoIDs
	}
	// Count before splitting: a list over the limit costs no allocation.
	if n := strings.Count(string(raw), ",") + 1; n > MaxBatchTokens {
		return errBatchTooMany
	}
	type part struct{ chain, address, tokenID string }
	var partsBuf [MaxBatchTokens]part
	parts := partsBuf[:0]
	list := string(raw)
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
	// Every token is read first: the body is a pure function of the ids,
	// each token's version and USD quote, the asOf of its chain and, when
	// a body embeds the read time, the millisecond. When all were found,
	// a hot batch is answered from the page memo without being rebuilt.
	type answer struct {
		tv   render.TokenView
		asOf int64
		err  error
	}
	var answersBuf [MaxBatchTokens]answer
	answers := answersBuf[:len(parts)]
	tag := s.newETag("tokens")
	var kb [1024]byte
	key := newMemoKey(kb[:0], memoTokens).str(string(raw))
	timed := false
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
		tag = tag.str(string(chain)).str(address).str(p.tokenID).version(a.tv.Version).num(a.tv.USD).num(uint64(a.asOf))
		key = key.num(a.tv.Version).num(a.tv.USD).num(uint64(a.asOf))
	}
	if timed {
		key = key.num(uint64(now.UnixMilli()))
	}
	setJSON(c)
	var h uint64
	if s.memo != nil && tag.valid {
		var body []byte
		if body, h = s.memo.get(key); body != nil {
			if !writeCache(c, rt, tag) {
				c.Response().SetBodyRaw(body)
			}
			return nil
		}
	}
	resp := c.Response()
	resp.AppendBodyString(`{"data":[`)
	for i := range answers {
		if i > 0 {
			resp.AppendBodyString(",")
		}
		a := &answers[i]
		if a.err == nil {
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
		if s.memo != nil {
			s.memo.put(key, h, resp.Body())
		}
		// The body is built: on a match, writeCache empties it for the 304.
		writeCache(c, rt, tag)
	} else {
		writeCache(c, rt, etag{})
	}
	return nil
}

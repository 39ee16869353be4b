package httpapi

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/marketd/marketd/readmodel"
)

var (
	errTokenChain   = readmodel.Errorf(readmodel.BadRequest, "unknown chain in token path")
	errEVMAddress   = readmodel.Errorf(readmodel.BadRequest, "address must be 0x followed by 40 hex characters on EVM chains")
	errSolanaHex    = readmodel.Errorf(readmodel.BadRequest, "address on solana must be the base58 collection mint, not a 0x address")
	errSolanaMint   = readmodel.Errorf(readmodel.BadRequest, "address on solana must be a base58 collection mint of 32 to 44 characters")
	errTokenMissing = readmodel.Errorf(readmodel.NotFound, "token not indexed")
)

// validToken applies SPEC §4's token validation, in its order: chain
// (case-insensitive), then address (EVM: 0x + 40 hex, returned lowercased;
// Solana: base58 collection mint of 32–44 characters, case kept), both 400
// when malformed; then tokenId, only length-checked (≤100, else 404).
// GET /v1/tokens/{chain}/{address}/{tokenId} and each id of the batch
// endpoint share it.
func validToken(chainText, address, tokenID string) (readmodel.Chain, string, error) {
	chain, ok := readmodel.ParseChain(strings.ToLower(chainText))
	if !ok {
		return "", "", errTokenChain
	}
	hex0x := len(address) >= 2 && address[0] == '0' && (address[1] == 'x' || address[1] == 'X')
	if chain.IsEVM() {
		if !hex0x || !readmodel.IsEVMAddress(address) {
			return "", "", errEVMAddress
		}
		address = strings.ToLower(address)
	} else {
		if hex0x {
			return "", "", errSolanaHex
		}
		if !readmodel.IsBase58(address) {
			return "", "", errSolanaMint
		}
	}
	if tokenID == "" || len(tokenID) > readmodel.MaxTokenIDLen {
		return "", "", errTokenMissing
	}
	return chain, address, nil
}

// getToken serves GET /v1/tokens/{chain}/{address}/{tokenId}: one token's
// detail. Validation follows SPEC §4's table, in order, before any lookup:
// chain (case-insensitive) and address (EVM: 0x + 40 hex, lowercased;
// Solana: base58 collection mint of 32–44 characters, case kept) are 400
// when malformed; tokenId is only length-checked (≤100, else 404); a
// well-formed path that is not indexed is 404. Never 502: a node read
// failure answers 404 (see status).
//
// The path parameters are views into the request (pathParamView): the
// lookup and the ETag keep nothing of them.
func (s *Server) getToken(c *fiber.Ctx, rt *route, rq request) error {
	now := rq.now
	chainText, _, _ := pathParamView(c, "chain")
	address, _, ok := pathParamView(c, "address")
	if !ok {
		address = "\x00" // an undecodable escape: malformed for every chain
	}
	tokenID, _, ok := pathParamView(c, "tokenId")
	if !ok {
		tokenID = ""
	}
	chain, address, err := validToken(chainText, address, tokenID)
	if err != nil {
		return err
	}
	tv, err := s.r.Token(c.UserContext(), chain, address, tokenID)
	if err != nil {
		return err
	}
	if len(tv.Body.Head) == 0 {
		return errTokenMissing
	}
	setJSON(c)
	asOf := s.tokenAsOf(c.UserContext(), chain)
	// What the token is: which token, its view's version (which moves
	// with each listing that expires) and USD quote, and the resolved
	// asOf; the view says when the clock alone changes it (Until). A
	// timed body's time slot is the request's, in no identity.
	var kb [256]byte
	id := newIdentity(kb[:0], identToken).str(string(chain)).str(address).str(tokenID).version(tv.Version).num(tv.USD).num(uint64(asOf)).expires(tv.Until)
	if writeCache(c, rt, s.tagOf(id)) {
		return nil
	}
	resp := c.Response()
	resp.AppendBodyString(`{"data":`)
	var timeAt []int
	if tv.Body.Timed {
		timeAt = []int{len(resp.Body()) + len(tv.Body.Head)} // appendTimedAsOf writes the time after Head
	}
	s.appendTimedAsOf(resp, tv.Body, now, asOf, true)
	resp.AppendBodyString("}")
	s.keep(c, rq, id, timeAt, rt.cacheControl, rt.cdnCacheControl)
	return nil
}

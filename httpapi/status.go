package httpapi

import (
	"context"
	"encoding/json"

	"github.com/gofiber/fiber/v2"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/wire"
)

// StatusReader is what GET /v1/status reads: the node's public status
// (each source's health as the views hold it, the views' applied
// position, how far behind the streams they are, readiness without its
// reason). It must hold nothing secret: no hosts, no error texts, no node
// names. Safe for concurrent use; an error is a failure of the node
// (answered 502 upstream_error).
type StatusReader interface {
	Status(ctx context.Context) (wire.Status, error)
}

var errNoStatus = readmodel.Errorf(readmodel.Internal, "this node publishes no status")

// identStatus is the identity kind of GET /v1/status.
const identStatus cursorKind = 'Z'

// getStatus serves GET /v1/status (beyond SPEC): {"data": wire.Status}.
// Its identity is every value it shows (a source's health, last success
// and failing count; readiness; the applied position and the lag), so
// the ETag moves exactly when the body does; it is built per request from
// what the StatusReader holds (no memo: it is small, and the reader keeps
// what is costly). Item bucket, s-maxage=10. Errors: 502 when the node
// cannot read its views, or runs without a StatusReader.
func (s *Server) getStatus(c *fiber.Ctx, rt *route, _ request) error {
	if s.st == nil {
		return errNoStatus
	}
	st, err := s.st.Status(c.UserContext())
	if err != nil {
		return err
	}
	if st.Sources == nil {
		st.Sources = []wire.SourceStatus{}
	}
	var kb [256]byte
	id := newIdentity(kb[:0], identStatus)
	for _, src := range st.Sources {
		id = id.str(string(src.Source)).flag(src.Healthy).num(uint64(src.FailingCollections))
		if src.LastSuccess != nil {
			id = id.str(*src.LastSuccess)
		} else {
			id = id.str("")
		}
	}
	n := st.Node
	id = id.flag(n.Ready).num(n.Applied.State).num(n.Applied.Sales).flag(n.Behind != nil)
	if n.Behind != nil {
		id = id.num(n.Behind.State).num(n.Behind.Sales)
	}
	setJSON(c)
	if writeCache(c, rt, s.tagOf(id)) {
		return nil
	}
	b, err := json.Marshal(wire.Envelope[wire.Status]{Data: st})
	if err != nil {
		return readmodel.Errorf(readmodel.Internal, "status: %v", err)
	}
	c.Response().AppendBody(b)
	return nil
}

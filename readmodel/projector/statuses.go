package projector

import (
	"context"
	"encoding/json"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/store"
)

// EachPollStatus calls fn with every poll status this node's views hold,
// per (source, collection; "" for a source-wide poll), as ingest published
// it: any node, not only the one running ingest, can report the upstreams'
// health (GET /admin/sources on a serve node). fn's error stops the walk.
func (p *Projector) EachPollStatus(ctx context.Context, fn func(src readmodel.Source, cid string, st readmodel.PollStatus) error) error {
	return p.st.View(ctx, func(tx *store.Tx) error {
		for _, src := range readmodel.Sources {
			err := tx.EachInput(store.InStatus, []string{string(src)}, func(cid string, raw []byte) error {
				var in statusInput
				if err := json.Unmarshal(raw, &in); err != nil {
					return readmodel.Wrap(readmodel.Internal, err, "decode poll status")
				}
				return fn(src, cid, in.Status)
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
}

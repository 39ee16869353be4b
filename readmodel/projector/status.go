package projector

import (
	"context"
	"encoding/json"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/store"
)

// SourceStatus returns the poll status of (src, cid) as last applied to st
// (cid "" for a source-wide poll such as the collection index); ok is false
// when none has been applied. It reads the status the projector keeps as
// an input, so it is as current as the views.
func SourceStatus(ctx context.Context, st *store.Store, src readmodel.Source, cid string) (status readmodel.PollStatus, ok bool, err error) {
	err = st.View(ctx, func(tx *store.Tx) error {
		in, err := store.Get[statusInput](tx, store.InStatus, string(src), cid)
		if err != nil || in == nil {
			return err
		}
		status, ok = in.Status, true
		return nil
	})
	return status, ok, err
}

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

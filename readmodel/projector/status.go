package projector

import (
	"context"

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

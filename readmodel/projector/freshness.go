package projector

import (
	"context"
	"encoding/binary"
	"time"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/render"
	"github.com/marketd/marketd/readmodel/store"
)

// Per-value freshness and change history, as the projector keeps them so
// the API can say how old a value is (asOf) and how it moved
// (stats.change): when each poll last succeeded (store.InPolled, from
// readmodel.Polled messages), the sources behind each view
// (render.Freshness) and each collection's detail history
// (its state's history section, render.History).

// applyPolled records that a poll succeeded at msg.Polled.At. No view
// changes: the API resolves asOf from these times (PollTimes).
func (a *applier) applyPolled(msg *readmodel.Message) error {
	p := msg.Polled
	if p == nil || readmodel.PollIndex(p.Poll) < 0 || p.At.IsZero() {
		return nil
	}
	ms := p.At.UnixMilli()
	old, err := a.loadedPolled(p.Poll)
	if err != nil {
		return err
	}
	if old >= ms {
		return nil // never backwards (a replayed older message)
	}
	a.putPolled(p.Poll, ms)
	return nil
}

// pollSucceeded returns when poll last succeeded as applied (zero when
// unknown): the last good time of a collection that carries no status of
// the poll's source, healthy until then.
func (a *applier) pollSucceeded(poll string) (time.Time, error) {
	ms, err := a.loadedPolled(poll)
	if err != nil || ms == 0 {
		return time.Time{}, err
	}
	return time.UnixMilli(ms).UTC(), nil
}

// polledMs decodes a stored store.InPolled value: unix ms, 0 when absent
// or malformed.
func polledMs(raw []byte) int64 {
	if len(raw) != 8 {
		return 0
	}
	return int64(binary.BigEndian.Uint64(raw))
}

// PollTimes returns when each poll last succeeded as applied to st (by
// index into readmodel.Polls; 0 when unknown).
func PollTimes(ctx context.Context, st *store.Store) (render.PollTimes, error) {
	var pt render.PollTimes
	err := st.View(ctx, func(tx *store.Tx) error {
		return tx.EachInput(store.InPolled, nil, func(poll string, raw []byte) error {
			if i := readmodel.PollIndex(poll); i >= 0 && i < len(pt) {
				pt[i] = polledMs(raw)
			}
			return nil
		})
	})
	return pt, err
}

// freshness returns what a value of collection cid made from the given
// sources resolves its asOf from: each source's latest status for the
// collection.
func (a *applier) freshness(cid string, srcs ...readmodel.Source) (render.Freshness, error) {
	var f render.Freshness
	for _, src := range srcs {
		st, err := a.status(src, cid)
		if err != nil {
			return f, err
		}
		var ps *readmodel.PollStatus
		if st != nil {
			ps = &st.Status
		}
		f.Add(string(src), ps)
	}
	return f, nil
}

// listingSources are the sources behind a collection's listings: the
// order book only when the collection has a contract or mint.
func listingSources(doc *readmodel.CollectionDoc) []readmodel.Source {
	if doc != nil && doc.ContractAddress != "" {
		return []readmodel.Source{readmodel.SourceOrderBook, readmodel.SourceIndexerMirror}
	}
	return []readmodel.Source{readmodel.SourceIndexerMirror}
}

// history adds what the detail rendered from in shows at a.now to
// collection cid's history and returns its change ratios.
func (a *applier) history(cid string, in render.DetailInputs) (render.Changes, error) {
	st, err := a.state(cid)
	if err != nil {
		return render.Changes{}, err
	}
	h := render.DecodeHistory(st.History())
	if a.now.IsZero() {
		return h.ChangesOf(), nil
	}
	h = h.Record(render.DetailSample(in, a.now))
	st.setHistory(h.Encode())
	return h.ChangesOf(), nil
}

package node

import (
	"context"
	"sync"
	"time"

	"github.com/marketd/marketd/httpapi"
	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/wire"
)

// publicStatus is GET /v1/status over a serving node: its sources' health
// as its views hold it (what /admin/sources shows of a node without
// ingest, aggregated per source), whether it is ready (/readyz without the
// reason, which may name hosts) and its lag monitor's applied position and
// stream heads (/readyz's lag checks and /metrics' lag). Safe for
// concurrent use.
type publicStatus struct {
	views *Views
	lag   *lagMonitor
	ready *Readiness

	// The sources' part, which walks every poll status the views hold,
	// is kept while the views' version holds.
	mu      sync.Mutex
	version uint64
	sources []wire.SourceStatus
}

var _ httpapi.StatusReader = (*publicStatus)(nil)

// Status returns the node's public status; it fails with the views'
// error when they cannot be read (being rebuilt, damaged).
func (p *publicStatus) Status(ctx context.Context) (wire.Status, error) {
	srcs, err := p.sourcesStatus(ctx)
	if err != nil {
		return wire.Status{}, err
	}
	st := wire.Status{Sources: srcs, Node: wire.NodeStatus{Ready: p.ready.Ready()}}
	applied, heads, ok := p.lag.position()
	st.Node.Applied = applied
	if ok {
		st.Node.Behind = &readmodel.Position{State: behind(heads.State, applied.State), Sales: behind(heads.Sales, applied.Sales)}
	}
	return st, nil
}

func behind(head, applied uint64) uint64 {
	if head > applied {
		return head - applied
	}
	return 0
}

// sourcesStatus is every source's public status, from the memo while the
// views' version holds.
func (p *publicStatus) sourcesStatus(ctx context.Context) ([]wire.SourceStatus, error) {
	v, versioned := p.views.ViewsVersion()
	p.mu.Lock()
	if versioned && p.sources != nil && p.version == v {
		out := p.sources
		p.mu.Unlock()
		return out, nil
	}
	p.mu.Unlock()
	out, err := p.views.sourcesStatus(ctx)
	if err != nil {
		return nil, err
	}
	if versioned {
		p.mu.Lock()
		p.version, p.sources = v, out
		p.mu.Unlock()
	}
	return out, nil
}

// sourcesStatus aggregates the poll times and statuses the views hold per
// source, in readmodel.Sources' order: healthy while no status of it
// fails, its last success (its poll's, or a status' lastGoodAt if later)
// and how many collections its per-collection poll fails for. It fails
// with the store's error.
func (vs *Views) sourcesStatus(ctx context.Context) ([]wire.SourceStatus, error) {
	last := make(map[readmodel.Source]time.Time, len(readmodel.Sources))
	out := make([]wire.SourceStatus, len(readmodel.Sources))
	at := make(map[readmodel.Source]int, len(readmodel.Sources))
	pt := vs.PollTimes(ctx)
	for i, src := range readmodel.Sources {
		out[i] = wire.SourceStatus{Source: src, Healthy: true}
		at[src] = i
		if j := readmodel.PollIndex(string(src)); j >= 0 && pt[j] > 0 {
			last[src] = time.UnixMilli(pt[j]).UTC()
		}
	}
	err := vs.eachPollStatus(ctx, func(src readmodel.Source, cid string, st readmodel.PollStatus) error {
		i, ok := at[src]
		if !ok {
			return ctx.Err()
		}
		if st.LastGoodAt.After(last[src]) {
			last[src] = st.LastGoodAt
		}
		if !st.OK {
			out[i].Healthy = false
			if cid != "" {
				out[i].FailingCollections++
			}
		}
		return ctx.Err()
	})
	if err != nil {
		return nil, err
	}
	for i := range out {
		if t := last[out[i].Source]; !t.IsZero() {
			s := readmodel.FormatTime(t)
			out[i].LastSuccess = &s
		}
	}
	return out, nil
}

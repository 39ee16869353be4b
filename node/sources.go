package node

import (
	"context"
	"sort"
	"time"

	"github.com/marketd/marketd/readmodel"
)

// ViewSource is one source's health as a node's views hold it: when its
// poll last succeeded (readmodel.Polled) and the poll statuses ingest
// published, per (source, collection). A collection of a per-collection
// source carries a status only once its poll failed for it: a failure,
// or the recovery after one.
type ViewSource struct {
	Source       string    `json:"source"`
	Healthy      bool      `json:"healthy"`               // every status of it is ok
	LastSuccess  time.Time `json:"lastSuccess,omitzero"`  // its poll's last success, or the newest lastGoodAt if later
	FailingSince time.Time `json:"failingSince,omitzero"` // oldest failingSince of a failing status
	ErrorClass   string    `json:"errorClass,omitempty"`  // class of a failing status
	Subjects     int       `json:"subjects"`              // statuses held (collections that failed, or 1 for a source-wide poll)
	Failing      int       `json:"failing"`               // of which failing
	From         string    `json:"from"`                  // "views"
}

// SourcesFromViews aggregates the poll times and statuses in the views
// served by source (GET /admin/sources of a node that does not poll, or
// of a standby); it fails with the store's error.
func (vs *Views) SourcesFromViews(ctx context.Context) ([]ViewSource, error) {
	by := map[readmodel.Source]*ViewSource{}
	entry := func(src readmodel.Source) *ViewSource {
		v := by[src]
		if v == nil {
			v = &ViewSource{Source: string(src), Healthy: true, From: "views"}
			by[src] = v
		}
		return v
	}
	pt := vs.PollTimes(ctx)
	for _, src := range readmodel.Sources {
		if i := readmodel.PollIndex(string(src)); i >= 0 && pt[i] > 0 {
			entry(src).LastSuccess = time.UnixMilli(pt[i]).UTC()
		}
	}
	err := vs.eachPollStatus(ctx, func(src readmodel.Source, _ string, st readmodel.PollStatus) error {
		v := entry(src)
		v.Subjects++
		if st.LastGoodAt.After(v.LastSuccess) {
			v.LastSuccess = st.LastGoodAt
		}
		if !st.OK {
			v.Healthy = false
			v.Failing++
			v.ErrorClass = st.ErrorClass
			if v.FailingSince.IsZero() || st.FailingSince.Before(v.FailingSince) {
				v.FailingSince = st.FailingSince
			}
		}
		return ctx.Err()
	})
	if err != nil {
		return nil, err
	}
	out := make([]ViewSource, 0, len(by))
	for _, v := range by {
		out = append(out, *v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Source < out[j].Source })
	return out, nil
}

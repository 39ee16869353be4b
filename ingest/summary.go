package ingest

import (
	"sort"
	"sync"
	"time"

	"github.com/marketd/marketd/ingest/source"
	"github.com/marketd/marketd/readmodel"
)

// TokensPoll is the Summary/Stats key of the indexer-mirror token poll,
// counted apart from the indexer-mirror listings poll (every poll is keyed
// by its source.Spec.Name).
const TokensPoll = source.TokensPoll

// Summary is one cycle's outcome, as POST /admin/ingest answers it.
type Summary struct {
	Start     time.Time                 `json:"start"`
	End       time.Time                 `json:"end"`
	Sources   map[string]*SourceSummary `json:"sources"` // by source name, plus TokensPoll
	Published int                       `json:"published"`
	Unchanged int                       `json:"unchanged"`
	Position  readmodel.Position        `json:"position"`
	// Full is set on a cycle that republished every subject (see
	// RunFullCycle) and ended with readmodel.FullCycleEnd.
	Full bool `json:"full,omitempty"`
	// Resumed is set on a cycle that first read back the state stream
	// (resume.go).
	Resumed *Resumed `json:"resumed,omitempty"`
	// MarksError says why the polls' resume points could not be saved
	// (MarkStore) after the cycle; the cycle itself completed.
	MarksError string `json:"marksError,omitempty"`
}

// Resumed is what a cycle learnt from the state stream before polling.
type Resumed struct {
	Read     int    `json:"read"`            // messages read back
	Skipped  int    `json:"skipped"`         // of them, passed over: they did not decode
	Subjects int    `json:"subjects"`        // subjects and poll statuses learnt
	TookMS   int64  `json:"tookMs"`          // wall time of the read
	Error    string `json:"error,omitempty"` // why reading failed: the cycle published everything
	// Marks is how many polls' resume points were loaded (MarkStore);
	// MarksError why they could not be (the polls started over).
	Marks      int    `json:"marks"`
	MarksError string `json:"marksError,omitempty"`
}

// SourceSummary is one source's share of a cycle.
type SourceSummary struct {
	PollsOK      int            `json:"pollsOk"`
	PollsFailed  int            `json:"pollsFailed"`
	ErrorClass   string         `json:"errorClass,omitempty"`
	RowsAccepted int            `json:"rowsAccepted"`
	Rejected     map[string]int `json:"rejected,omitempty"` // by normalize.RejectReason
	Published    int            `json:"published"`
	Unchanged    int            `json:"unchanged"`
	TookMS       int64          `json:"tookMs"` // wall time of the poll, publishing included
}

// Stats are cumulative counters since New, for metrics.
type Stats struct {
	Cycles    uint64                       `json:"cycles"`
	Polls     map[string]map[string]uint64 `json:"polls"`    // source → "ok" or error class → count
	Rejected  map[string]map[string]uint64 `json:"rejected"` // source → reason → rows
	Accepted  map[string]uint64            `json:"accepted"` // source → rows
	Published uint64                       `json:"published"`
	Unchanged uint64                       `json:"unchanged"`
	LastCycle time.Time                    `json:"lastCycle"`
}

// SourceStatus is one source's health as GET /admin/sources reports it.
type SourceStatus struct {
	Source      string    `json:"source"`
	Healthy     bool      `json:"healthy"`              // the last cycle's polls of it all succeeded
	LastSuccess time.Time `json:"lastSuccess,omitzero"` // end of the last cycle where it answered well
	LastFailure time.Time `json:"lastFailure,omitzero"` // end of the last cycle where a poll of it failed
	ErrorClass  string    `json:"errorClass,omitempty"` // class of the last failure
	PollsOK     uint64    `json:"pollsOk"`
	PollsFailed uint64    `json:"pollsFailed"`
}

type statsCounter struct {
	mu      sync.Mutex
	s       Stats
	sources map[string]*SourceStatus
}

func (c *statsCounter) add(sum *Summary) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.s.Polls == nil {
		c.s.Polls, c.s.Rejected, c.s.Accepted = map[string]map[string]uint64{}, map[string]map[string]uint64{}, map[string]uint64{}
	}
	c.s.Cycles++
	c.s.LastCycle = sum.End
	c.s.Published += uint64(sum.Published)
	c.s.Unchanged += uint64(sum.Unchanged)
	if c.sources == nil {
		c.sources = map[string]*SourceStatus{}
	}
	for name, ss := range sum.Sources {
		st := c.sources[name]
		if st == nil {
			st = &SourceStatus{Source: name}
			c.sources[name] = st
		}
		st.PollsOK += uint64(ss.PollsOK)
		st.PollsFailed += uint64(ss.PollsFailed)
		if ss.PollsFailed > 0 {
			st.Healthy, st.LastFailure, st.ErrorClass = false, sum.End, ss.ErrorClass
		} else if ss.PollsOK > 0 {
			st.Healthy, st.LastSuccess = true, sum.End
		}
		if c.s.Polls[name] == nil {
			c.s.Polls[name] = map[string]uint64{}
		}
		c.s.Polls[name]["ok"] += uint64(ss.PollsOK)
		if ss.PollsFailed > 0 {
			c.s.Polls[name][ss.ErrorClass] += uint64(ss.PollsFailed)
		}
		c.s.Accepted[name] += uint64(ss.RowsAccepted)
		for r, n := range ss.Rejected {
			if c.s.Rejected[name] == nil {
				c.s.Rejected[name] = map[string]uint64{}
			}
			c.s.Rejected[name][r] += uint64(n)
		}
	}
}

// sourceStatuses returns every polled source's status, sorted by name.
func (c *statsCounter) sourceStatuses() []SourceStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]SourceStatus, 0, len(c.sources))
	for _, st := range c.sources {
		out = append(out, *st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Source < out[j].Source })
	return out
}

func (c *statsCounter) snapshot() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.s
	out.Polls, out.Rejected, out.Accepted = map[string]map[string]uint64{}, map[string]map[string]uint64{}, map[string]uint64{}
	for k, m := range c.s.Polls {
		out.Polls[k] = copyMap(m)
	}
	for k, m := range c.s.Rejected {
		out.Rejected[k] = copyMap(m)
	}
	for k, v := range c.s.Accepted {
		out.Accepted[k] = v
	}
	return out
}

func copyMap(m map[string]uint64) map[string]uint64 {
	out := make(map[string]uint64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

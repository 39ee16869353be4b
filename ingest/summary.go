package ingest

import (
	"sync"
	"time"

	"github.com/marketd/marketd/readmodel"
)

// TokensPoll is the Summary/Stats key of the indexer-mirror token poll,
// counted apart from the indexer-mirror listings poll.
const TokensPoll = "indexer-mirror/tokens"

// Summary is one cycle's outcome, as POST /admin/ingest answers it.
type Summary struct {
	Start     time.Time                 `json:"start"`
	End       time.Time                 `json:"end"`
	Sources   map[string]*SourceSummary `json:"sources"` // by source name, plus TokensPoll
	Published int                       `json:"published"`
	Unchanged int                       `json:"unchanged"`
	Position  readmodel.Position        `json:"position"`
}

// SourceSummary is one source's share of a cycle.
type SourceSummary struct {
	PollsOK      int            `json:"pollsOk"`
	PollsFailed  int            `json:"pollsFailed"`
	ErrorClass   string         `json:"errorClass,omitempty"`
	RowsAccepted int            `json:"rowsAccepted"`
	Rejected     map[string]int `json:"rejected,omitempty"` // by readmodel.RejectReason
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

type statsCounter struct {
	mu sync.Mutex
	s  Stats
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
	for name, ss := range sum.Sources {
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

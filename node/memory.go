package node

import (
	"runtime/debug"
	"sync"

	"github.com/marketd/marketd/config"
	"github.com/marketd/marketd/internal/memlimit"
	"github.com/rs/zerolog"
)

// memoryBudget is the Go runtime's soft memory limit in the two phases of
// a node with views: building them (until the node is first ready) and
// serving. Build equals Serve unless the limit comes from the cgroup.
type memoryBudget struct {
	Build, Serve int64  // bytes; 0: leave the runtime alone
	From         string // where the limit came from
}

// memoryLimit decides the Go runtime's soft memory limit from --memory-limit
// (config.MemoryLimit), GOMEMLIMIT and the memory cgroup found under root
// ("/" outside tests). An unreadable cgroup is an error; auto then sets
// nothing.
//
// Auto gives the runtime a third of the cgroup's limit while the node
// serves (the rest is the page cache of Badger's mapped files, which reads
// need) and half while it builds its views, when nothing is read yet, or
// runs an ingest cycle (Memory). At
// 100,000 collections the live heap of a first cycle is about 740 MB (a
// third of it the embedded NATS server's subject index and dedupe window):
// under a 1 GiB limit the collector ran more than once a second and took
// over half the CPU (docs/performance-log.md, 2026-11-26 21:41).
func memoryLimit(cfg config.Config, root string) (memoryBudget, error) {
	switch {
	case cfg.MemoryLimit == config.MemoryLimitOff:
		return memoryBudget{From: "off"}, nil
	case cfg.MemoryLimit > 0:
		return memoryBudget{Build: cfg.MemoryLimit, Serve: cfg.MemoryLimit, From: "--memory-limit"}, nil
	case cfg.GoMemLimit != "":
		return memoryBudget{From: "GOMEMLIMIT (the runtime applied it)"}, nil
	}
	cg, err := memlimit.Find(root)
	if err != nil {
		return memoryBudget{}, err
	}
	if cg.Limit == 0 {
		return memoryBudget{From: "no memory cgroup limit"}, nil
	}
	return memoryBudget{
		Build: cg.Limit / memlimit.BuildShare,
		Serve: cg.Limit / memlimit.Share,
		From:  "the memory cgroup's limit (" + cg.Dir + "): a half while building the views or running an ingest cycle, a third otherwise",
	}, nil
}

// SetMemoryLimit applies the serving limit of memoryLimit to the runtime
// and logs the choice once at start.
func SetMemoryLimit(cfg config.Config, log zerolog.Logger) {
	b, err := memoryLimit(cfg, "/")
	if err != nil {
		log.Warn().Err(err).Msg("memory cgroup unreadable: the Go runtime gets no memory limit")
		return
	}
	if b.Serve > 0 {
		debug.SetMemoryLimit(b.Serve)
	}
	log.Info().Int64("go_memory_limit_bytes", debug.SetMemoryLimit(-1)).Str("from", b.From).Msg("memory limit")
}

// Memory is the Go runtime's soft memory limit over a node's phases: the
// building share of memoryLimit while anything holds it (the views being
// built until the node is first ready; an ingest cycle in progress), the
// serving share otherwise. The collector frees down to the serving share
// once the last holder lets go, and the runtime returns the pages. With no
// building share of its own (an explicit limit, GOMEMLIMIT, no cgroup) it
// changes nothing. Safe for concurrent use.
//
// An ingest cycle gets the building share because under the serving share
// it is the collector's: at 100,000 collections x 100 tokens the live heap
// of a step is about 960 MB, 540 MB of it the embedded NATS server's: its
// subject index, and the 4 MB block buffers it loads to remove each
// republished subject's previous message and holds only weakly, so that
// each garbage collection makes it load them again. Under 1 GiB the
// collector ran without pause: in three alternated pairs of one-tick
// steps there, a step took 328, 384 and over 349 CPU-s with a third of
// the 3 GiB cgroup, 217, 282 and 203 with half (docs/performance-log.md,
// 2026-11-29 12:48).
type Memory struct {
	b   memoryBudget
	set func(int64) int64
	log zerolog.Logger

	mu      sync.Mutex
	holders int
}

// NewMemory returns the memory budget of cfg for a node whose memory
// cgroup is found under root ("/" outside tests); set is
// debug.SetMemoryLimit outside tests. It sets nothing until held.
func NewMemory(cfg config.Config, root string, set func(int64) int64, log zerolog.Logger) *Memory {
	b, err := memoryLimit(cfg, root)
	if err != nil || b.Build <= b.Serve {
		b = memoryBudget{}
	}
	return &Memory{b: b, set: set, log: log}
}

// Hold raises the limit to the building share for what (a phase, named in
// the debug log) until the returned call, which may be called more than
// once; the serving share comes back when the last holder lets go. A nil
// Memory holds nothing.
func (m *Memory) Hold(what string) (release func()) {
	if m == nil || m.b.Build == 0 {
		return func() {}
	}
	m.mu.Lock()
	m.holders++
	if m.holders == 1 {
		m.set(m.b.Build)
		m.log.Debug().Int64("go_memory_limit_bytes", m.b.Build).Str("while", what).Msg("memory limit raised")
	}
	m.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			m.mu.Lock()
			defer m.mu.Unlock()
			m.holders--
			if m.holders == 0 {
				m.set(m.b.Serve)
				m.log.Debug().Int64("go_memory_limit_bytes", m.b.Serve).Str("after", what).Msg("memory limit back to the serving share")
			}
		})
	}
}

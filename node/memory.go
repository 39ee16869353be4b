package node

import (
	"runtime/debug"

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
// need) and half while it builds its views, when nothing is read yet. At
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
		From:  "the memory cgroup's limit (" + cg.Dir + "): a half while building the views, a third while serving",
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

// BuildingMemory raises the runtime's limit to the building share of
// memoryLimit, for a node about to build its views, and returns the call
// that lowers it to the serving share again once the node is ready (the
// collector then frees down to it, and the runtime returns the pages). With
// no building share of its own (an explicit limit, GOMEMLIMIT, no cgroup)
// it changes nothing and returns a no-op. set is debug.SetMemoryLimit
// outside tests.
func BuildingMemory(cfg config.Config, root string, set func(int64) int64, log zerolog.Logger) (served func()) {
	b, err := memoryLimit(cfg, root)
	if err != nil || b.Build <= b.Serve {
		return func() {}
	}
	set(b.Build)
	log.Info().Int64("go_memory_limit_bytes", b.Build).Msg("memory limit while the views are built")
	return func() {
		set(b.Serve)
		log.Info().Int64("go_memory_limit_bytes", b.Serve).Msg("memory limit while serving")
	}
}

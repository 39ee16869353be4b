package main

import (
	"runtime/debug"

	"github.com/marketd/marketd/config"
	"github.com/marketd/marketd/internal/memlimit"
	"github.com/rs/zerolog"
)

// memoryLimit decides the Go runtime's soft memory limit from --memory-limit
// (config.MemoryLimit), GOMEMLIMIT and the memory cgroup found under root
// ("/" outside tests). It returns the limit to set (0: leave the runtime
// alone) and where it came from. An unreadable cgroup is an error; auto then
// sets nothing.
func memoryLimit(cfg config.Config, root string) (int64, string, error) {
	switch {
	case cfg.MemoryLimit == config.MemoryLimitOff:
		return 0, "off", nil
	case cfg.MemoryLimit > 0:
		return cfg.MemoryLimit, "--memory-limit", nil
	case cfg.GoMemLimit != "":
		return 0, "GOMEMLIMIT (the runtime applied it)", nil
	}
	cg, err := memlimit.Find(root)
	if err != nil {
		return 0, "", err
	}
	if cg.Limit == 0 {
		return 0, "no memory cgroup limit", nil
	}
	return cg.Limit / memlimit.Share, "a third of the memory cgroup's limit (" + cg.Dir + ")", nil
}

// setMemoryLimit applies memoryLimit to the runtime and logs the choice
// once at start.
func setMemoryLimit(cfg config.Config, log zerolog.Logger) {
	n, from, err := memoryLimit(cfg, "/")
	if err != nil {
		log.Warn().Err(err).Msg("memory cgroup unreadable: the Go runtime gets no memory limit")
		return
	}
	if n > 0 {
		debug.SetMemoryLimit(n)
	}
	log.Info().Int64("go_memory_limit_bytes", debug.SetMemoryLimit(-1)).Str("from", from).Msg("memory limit")
}

package ingest

import (
	"maps"

	"github.com/marketd/marketd/ingest/source"
	"github.com/marketd/marketd/readmodel"
)

// WithPollers returns cfg with the pollers of src replaced by mk's, in
// place of the registered ones (upstreams): a test runs a poller of its
// own through the cycle, as a newly registered one would be run. cfg is
// not modified.
func WithPollers(cfg Config, src readmodel.Source, mk func(c *source.Client) []Poller) Config {
	cfg.pollers = maps.Clone(cfg.pollers)
	if cfg.pollers == nil {
		cfg.pollers = map[readmodel.Source]func(*source.Client) []Poller{}
	}
	cfg.pollers[src] = mk
	return cfg
}

package main

import (
	"context"
	"fmt"
	"io"

	"github.com/marketd/marketd/config"
	"github.com/marketd/marketd/ingest/sim"
	"github.com/rs/zerolog"
)

// runSim is `marketd sim`: the upstream simulator alone on --sim-addr, a
// stand-in for the seven real upstreams (each under /<source-name>) with its
// /_sim control API.
func runSim(ctx context.Context, cfg config.Config, log zerolog.Logger, _ io.Writer) error {
	return withNode(log, func(n *node) error {
		s := sim.New(sim.Options{Seed: uint64(cfg.SimSeed), Collections: cfg.SimCollections, TokensPerCollection: cfg.SimTokens, TickEvery: cfg.SimTick, Anchor: cfg.SimAnchor})
		if err := s.Open(ctx); err != nil {
			return fmt.Errorf("simulator: %w", err)
		}
		n.add("sim-ticker", s.Close)
		ln, err := n.listen("sim", cfg.SimAddr)
		if err != nil {
			return err
		}
		n.serveHTTP("sim", ln, s.Handler())
		<-ctx.Done()
		return nil
	})
}

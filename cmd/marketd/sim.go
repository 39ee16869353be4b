package main

import (
	"context"
	"fmt"
	"io"

	"github.com/marketd/marketd/config"
	"github.com/marketd/marketd/ingest/sim"
	"github.com/marketd/marketd/node"
	"github.com/rs/zerolog"
)

// runSim is `marketd sim`: the upstream simulator alone on --sim-addr, a
// stand-in for the seven real upstreams (each under /<source-name>) with its
// /_sim control API.
func runSim(ctx context.Context, cfg config.Config, log zerolog.Logger, _ io.Writer) error {
	return node.Run(log, func(n *node.Node) error {
		if _, err := openSim(ctx, n, cfg); err != nil {
			return err
		}
		<-ctx.Done()
		return nil
	})
}

// openSim opens the simulator on --sim-addr as parts of n and returns its
// base URL.
func openSim(ctx context.Context, n *node.Node, cfg config.Config) (string, error) {
	s := sim.New(sim.Options{Seed: uint64(cfg.SimSeed), Collections: cfg.SimCollections, TokensPerCollection: cfg.SimTokens, TickEvery: cfg.SimTick, Anchor: cfg.SimAnchor})
	if err := s.Open(ctx); err != nil {
		return "", fmt.Errorf("simulator: %w", err)
	}
	n.Add("sim-ticker", s.Close)
	ln, err := n.Listen("sim", cfg.SimAddr)
	if err != nil {
		return "", err
	}
	n.ServeHTTP("sim", ln, s.Handler())
	return "http://" + ln.Addr().String(), nil
}

package main

import (
	"context"
	"io"

	"github.com/marketd/marketd/config"
	"github.com/rs/zerolog"
)

// runAll is `marketd all` (and `marketd` alone): embedded NATS with
// JetStream under <data-dir>/nats (or --nats when given), the built-in
// upstream simulator, ingest, the projector and the API, in one process.
func runAll(ctx context.Context, cfg config.Config, log zerolog.Logger, _ io.Writer) error {
	return runNode(ctx, cfg, log, parts{embedded: cfg.NatsURL == "", api: true, sim: true, ingest: true})
}

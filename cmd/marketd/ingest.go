package main

import (
	"context"
	"io"

	"github.com/marketd/marketd/config"
	"github.com/rs/zerolog"
)

// runIngest is `marketd ingest --nats URL`: the ingestors alone, polling the
// configured upstream base URLs (--source-<name>-url) and publishing to the
// shared streams. It keeps the admin listener (health, metrics, a manual
// cycle) but serves no public API.
func runIngest(ctx context.Context, cfg config.Config, log zerolog.Logger, _ io.Writer) error {
	if err := needNats("ingest", cfg); err != nil {
		return err
	}
	return runNode(ctx, cfg, log, parts{ingest: true})
}

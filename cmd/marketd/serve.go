package main

import (
	"context"
	"io"

	"github.com/marketd/marketd/config"
	"github.com/rs/zerolog"
)

// runServe is `marketd serve --nats URL`: projector and API over this
// node's own Badger, fed by a shared stream. A node of a regional cache tier.
func runServe(ctx context.Context, cfg config.Config, log zerolog.Logger, _ io.Writer) error {
	if err := needNats("serve", cfg); err != nil {
		return err
	}
	return runNode(ctx, cfg, log, parts{api: true})
}

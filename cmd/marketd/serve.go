package main

import (
	"context"
	"errors"
	"io"

	"github.com/marketd/marketd/config"
	"github.com/rs/zerolog"
)

// runServe is `marketd serve --nats URL`: projector and API over this
// node's own Badger, fed by a shared stream. A node of a regional cache tier.
func runServe(ctx context.Context, cfg config.Config, log zerolog.Logger, _ io.Writer) error {
	if cfg.NatsURL == "" {
		return errors.New("serve needs --nats (MARKETD_NATS_URL): the URL of a NATS server with JetStream")
	}
	return runNode(ctx, cfg, log, parts{api: true})
}

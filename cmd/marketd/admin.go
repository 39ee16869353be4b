package main

import (
	"context"
	"fmt"
	"time"

	"github.com/marketd/marketd/config"
	"github.com/marketd/marketd/httpapi"
	"github.com/marketd/marketd/node"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// sourcesDeadline bounds GET /admin/sources (504 past it), as the
// deadlines of node.Feed and node.Serving bound the other admin actions.
const sourcesDeadline = 10 * time.Second

// listenAdmin opens the admin listener over a, the last part of a
// long-running role (tests learn the listeners' addresses once it is
// up), logs the listeners' URLs and serves until ctx is cancelled.
func listenAdmin(ctx context.Context, n *node.Node, cfg config.Config, a httpapi.Admin, reg *prometheus.Registry, log zerolog.Logger) error {
	ln, err := n.Listen("admin", cfg.AdminAddr)
	if err != nil {
		return err
	}
	as := httpapi.NewAdmin(a, reg, log.With().Str("part", "admin").Logger())
	n.Serve("admin", func() error { return as.Listen(ln) }, as.Shutdown)
	n.LogServing()
	<-ctx.Done()
	log.Info().Msg("shutting down")
	return nil
}

// needNats fails a role that has no embedded server when --nats is unset.
func needNats(role string, cfg config.Config) error {
	if cfg.NatsURL == "" {
		return fmt.Errorf("%s needs --nats (MARKETD_NATS_URL): the URL of a NATS server with JetStream", role)
	}
	return nil
}

// viewsSources is /admin/sources from a node's views: what its projector
// passed over on the bus, and the poll statuses its views hold.
func viewsSources(ctx context.Context, out map[string]any, views *node.Views) (any, error) {
	out["bus"] = views.Gaps() // what the projector passed over (projector/gaps.go)
	srcs, err := views.SourcesFromViews(ctx)
	if err != nil {
		return nil, fmt.Errorf("poll statuses from the views: %w", err)
	}
	out["sources"] = srcs
	return out, nil
}

package main

import (
	"context"
	"errors"
	"io"
	"runtime/debug"

	"github.com/marketd/marketd/config"
	"github.com/marketd/marketd/httpapi"
	"github.com/marketd/marketd/node"
	"github.com/rs/zerolog"
)

// runIngest is `marketd ingest --nats URL`: the ingestors alone, polling the
// configured upstream base URLs (--source-<name>-url) and publishing to the
// shared streams while this node holds the ingest lease. It keeps the admin
// listener (health, metrics, a manual cycle) but serves no public API.
func runIngest(ctx context.Context, cfg config.Config, log zerolog.Logger, _ io.Writer) error {
	if err := needNats("ingest", cfg); err != nil {
		return err
	}
	return node.Run(log, func(n *node.Node) error {
		reg, ready := newRegistry(), node.NewReadiness(nil)
		nc, js, err := node.OpenBus(ctx, n, cfg, false, log)
		if err != nil {
			return err
		}
		// Several `marketd ingest` may run on a tier: the lease picks the
		// one that polls.
		lease, err := node.OpenLease(ctx, n, js, cfg, log)
		if err != nil {
			return err
		}
		ready.Require(node.BusReachable(nc), lease.NotReady)
		ready.Until(node.Fixed("first ingest cycle not yet published"))
		// A cycle's heap gets the larger share (node.Memory).
		mem := node.NewMemory(cfg, "/", debug.SetMemoryLimit, log)
		feed, err := node.OpenFeed(ctx, n, js, cfg, node.FeedOptions{Registry: reg, Lease: lease, Memory: mem}, log)
		if err != nil {
			return err
		}
		node.RegisterLeaseMetrics(reg, lease, node.ID(cfg.NodeID))
		n.Go("first-cycle", func() { feed.Lead(ctx, ready) })
		return listenAdmin(ctx, n, cfg, &ingestAdmin{ready: ready, Feed: feed, lease: lease}, reg, log)
	})
}

// ingestAdmin is the admin of `marketd ingest`: it runs cycles, and keeps
// no views.
type ingestAdmin struct {
	ready *node.Readiness
	*node.Feed
	lease *node.Lease
}

var _ httpapi.Admin = (*ingestAdmin)(nil)

// Readiness is the node's (/readyz).
func (a *ingestAdmin) Readiness() (bool, string) { return a.ready.Readiness() }

// Sources is this node's lease and its ingest's poll status (a standby's
// own last polls, if any).
func (a *ingestAdmin) Sources(ctx context.Context) (any, error) {
	return map[string]any{"lease": node.LeaseSummary(ctx, a.lease), "sources": a.Feed.Sources()}, nil
}

// PublishSnapshot fails: an ingest node keeps no views.
func (a *ingestAdmin) PublishSnapshot(context.Context) (any, error) {
	return nil, errors.New("this role keeps no views")
}

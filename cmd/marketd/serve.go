package main

import (
	"context"
	"errors"
	"io"
	"runtime/debug"

	"github.com/marketd/marketd/config"
	"github.com/marketd/marketd/httpapi"
	"github.com/marketd/marketd/node"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
)

// runServe is `marketd serve --nats URL`: projector and API over this
// node's own Badger, fed by a shared stream. A node of a regional cache
// tier: ready once its views caught up with the streams.
func runServe(ctx context.Context, cfg config.Config, log zerolog.Logger, _ io.Writer) error {
	if err := needNats("serve", cfg); err != nil {
		return err
	}
	return node.Run(log, func(n *node.Node) error {
		reg := newRegistry()
		// Until it is first ready a node with views builds them and
		// serves no reads: its heap gets the larger share.
		ready := node.NewReadiness(node.NewMemory(cfg, "/", debug.SetMemoryLimit, log).Hold("the views are built"))
		nc, js, err := node.OpenBus(ctx, n, cfg, false, log)
		if err != nil {
			return err
		}
		ready.Require(node.BusReachable(nc))
		srv, err := node.OpenServing(ctx, n, js, cfg, node.ServingOptions{Registry: reg, Ready: ready}, log)
		if err != nil {
			return err
		}
		node.RegisterLeaseMetrics(reg, node.BucketLease{JS: js}, node.ID(cfg.NodeID))
		return listenAdmin(ctx, n, cfg, &serveAdmin{ready: ready, Serving: srv, js: js}, reg, log)
	})
}

// serveAdmin is the admin of `marketd serve`: it keeps views, and runs
// no ingest.
type serveAdmin struct {
	ready *node.Readiness
	*node.Serving
	js jetstream.JetStream
}

var _ httpapi.Admin = (*serveAdmin)(nil)

// Readiness is the node's (/readyz).
func (a *serveAdmin) Readiness() (bool, string) { return a.ready.Readiness() }

var errNoIngest = errors.New("this role runs no ingest")

// RunIngest fails: a serve node runs no ingest.
func (a *serveAdmin) RunIngest(context.Context) (any, error) { return nil, errNoIngest }

// RunFullIngest fails: a serve node runs no ingest.
func (a *serveAdmin) RunFullIngest(context.Context, bool) (any, error) { return nil, errNoIngest }

// Sources is the poll status the views hold, and who holds the ingest
// lease as its bucket says.
func (a *serveAdmin) Sources(ctx context.Context) (any, error) {
	ctx, cancel := context.WithTimeout(ctx, sourcesDeadline)
	defer cancel()
	out := map[string]any{}
	if l := node.LeaseSummary(ctx, node.BucketLease{JS: a.js}); l != nil {
		out["lease"] = l
	}
	if a.Region != nil {
		out["region"] = a.Region.Status(ctx) // how far behind the hub
	}
	return viewsSources(ctx, out, a.Views)
}

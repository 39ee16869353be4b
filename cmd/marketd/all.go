package main

import (
	"context"
	"io"
	"runtime/debug"

	"github.com/marketd/marketd/config"
	"github.com/marketd/marketd/httpapi"
	"github.com/marketd/marketd/node"
	"github.com/rs/zerolog"
)

// runAll is `marketd all` (and `marketd` alone): embedded NATS with
// JetStream under <data-dir>/nats (or --nats when given), the built-in
// upstream simulator, ingest, the projector and the API, in one process.
// It is ready once its first cycle is projected.
func runAll(ctx context.Context, cfg config.Config, log zerolog.Logger, _ io.Writer) error {
	return node.Run(log, func(n *node.Node) error {
		reg := newRegistry()
		// Until it is first ready a node with views builds them and
		// serves no reads: its heap gets the larger share, as it does
		// while an ingest cycle runs.
		mem := node.NewMemory(cfg, "/", debug.SetMemoryLimit, log)
		ready := node.NewReadiness(mem.Hold("the views are built"))
		embedded := cfg.NatsURL == ""
		nc, js, err := node.OpenBus(ctx, n, cfg, embedded, log)
		if err != nil {
			return err
		}
		ready.Require(node.BusReachable(nc))
		ready.Until(node.Fixed("first ingest cycle not yet projected"))
		// A cold start on the embedded server holds renders until the
		// first cycle is projected.
		srv, err := node.OpenServing(ctx, n, js, cfg, node.ServingOptions{Registry: reg, Ready: ready, Fed: true, HoldFirstCycle: embedded}, log)
		if err != nil {
			return err
		}
		simURL, err := openSim(ctx, n, cfg)
		if err != nil {
			return err
		}
		for name, src := range cfg.Sources {
			if src.BaseURL == "" {
				src.BaseURL = simURL + "/" + name
				cfg.Sources[name] = src
			}
		}
		// On its embedded server the node runs alone; on --nats it
		// takes part in the ingest lease like `marketd ingest`.
		a := &allAdmin{ready: ready, Serving: srv, lease: node.BucketLease{JS: js}}
		opts := node.FeedOptions{Registry: reg, Serving: srv, Memory: mem}
		if !embedded {
			if opts.Lease, err = node.OpenLease(ctx, n, js, cfg, log); err != nil {
				return err
			}
			ready.Require(opts.Lease.NotReady)
			node.RegisterLeaseMetrics(reg, opts.Lease, node.ID(cfg.NodeID))
			a.lease = opts.Lease
		}
		if a.Feed, err = node.OpenFeed(ctx, n, js, cfg, opts, log); err != nil {
			return err
		}
		n.Go("first-cycle", func() { a.Lead(ctx, ready) })
		return listenAdmin(ctx, n, cfg, a, reg, log)
	})
}

// allAdmin is the admin of `marketd all`: it runs cycles and keeps views.
type allAdmin struct {
	ready *node.Readiness
	*node.Feed
	*node.Serving
	lease node.LeaseView // its own when it takes part, else the bucket's
}

var _ httpapi.Admin = (*allAdmin)(nil)

// Readiness is the node's (/readyz).
func (a *allAdmin) Readiness() (bool, string) { return a.ready.Readiness() }

// Sources is this node's ingest's poll status, or while it stands by
// behind another lease holder the poll status its views hold; what its
// projector passed over on the bus; and who holds the ingest lease.
func (a *allAdmin) Sources(ctx context.Context) (any, error) {
	ctx, cancel := context.WithTimeout(ctx, sourcesDeadline)
	defer cancel()
	out := map[string]any{}
	if l := node.LeaseSummary(ctx, a.lease); l != nil {
		out["lease"] = l
	}
	if a.Standby() {
		return viewsSources(ctx, out, a.Views)
	}
	out["bus"] = a.Views.Gaps()
	out["sources"] = a.Feed.Sources()
	return out, nil
}

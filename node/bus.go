package node

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/marketd/marketd/config"
	"github.com/marketd/marketd/readmodel/bus"
)

// OpenBus connects this process to the bus, as parts of n: with embedded,
// to an embedded NATS server it starts with JetStream under
// BusDir(cfg.DataDir) (loopback, a random port; closed last on
// shutdown), else to cfg.NatsURL, with the client's reconnect
// (bus.Connect; on shutdown the connection is drained within drainWait,
// or closed at once when it reaches no server). It then sets the
// streams up at cfg.StreamReplicas (bus.SetUpStreams), or, for a node of
// a region (cfg.HubDomain), the region's mirrors of the hub's streams
// (region.go). It fails when the server cannot start, the first
// connection fails, or the streams cannot be set up.
func OpenBus(ctx context.Context, n *Node, cfg config.Config, embedded bool, log zerolog.Logger) (*nats.Conn, jetstream.JetStream, error) {
	url := cfg.NatsURL
	if embedded {
		emb, err := bus.StartEmbedded(ctx, bus.EmbeddedOptions{StoreDir: BusDir(cfg.DataDir), Host: "127.0.0.1", Port: -1})
		if err != nil {
			return nil, nil, fmt.Errorf("start embedded NATS: %w", err)
		}
		n.Add("nats-server", emb.Close)
		url = emb.ClientURL()
	}
	nc, js, err := bus.Connect(url, "marketd", log.With().Str("part", "nats").Logger())
	if err != nil {
		return nil, nil, err
	}
	n.Add("nats-conn", func(ctx context.Context) error { closeConn(ctx, nc); return nil })
	if cfg.HubDomain != "" {
		if err := setUpRegion(ctx, nc, js, cfg, log); err != nil {
			return nil, nil, fmt.Errorf("ensure mirrors of domain %s: %w", cfg.HubDomain, err)
		}
		return nc, js, nil
	}
	if err := bus.SetUpStreams(ctx, js, cfg.StreamReplicas, log); err != nil {
		return nil, nil, fmt.Errorf("ensure streams: %w", err)
	}
	return nc, js, nil
}

// drainWait bounds the drain of the bus connection on shutdown (the
// last part before an embedded server): the consumers stopped before
// it, so it only flushes what is in hand.
const drainWait = 2 * time.Second

// closeConn drains nc and waits until it is closed, at most drainWait
// or until ctx ends, then closes it. A connection that reaches no server
// has nothing it could drain (nats.go refuses to drain it, and it would
// keep reconnecting for ever): it is closed at once.
func closeConn(ctx context.Context, nc *nats.Conn) {
	if nc.IsClosed() {
		return
	}
	closed := nc.StatusChanged(nats.CLOSED)
	defer nc.RemoveStatusListener(closed)
	if !nc.IsConnected() || nc.Drain() != nil {
		nc.Close()
		return
	}
	ctx, cancel := context.WithTimeout(ctx, drainWait)
	defer cancel()
	select {
	case <-closed:
	case <-ctx.Done():
		nc.Close()
	}
}

// BusReachable is the readiness check that nc is connected.
func BusReachable(nc *nats.Conn) func() string {
	return func() string {
		if !nc.IsConnected() {
			return "bus unreachable: NATS connection " + strings.ToLower(nc.Status().String())
		}
		return ""
	}
}

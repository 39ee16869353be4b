package node

import (
	"context"
	"fmt"
	"strings"

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
// (bus.Connect; the connection is drained on shutdown). It then sets the
// streams up at cfg.StreamReplicas (bus.SetUpStreams). It fails when the
// server cannot start, the first connection fails, or the streams cannot
// be set up.
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
	n.Add("nats-conn", func(ctx context.Context) error { return nc.Drain() })
	if err := bus.SetUpStreams(ctx, js, cfg.StreamReplicas, log); err != nil {
		return nil, nil, fmt.Errorf("ensure streams: %w", err)
	}
	return nc, js, nil
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

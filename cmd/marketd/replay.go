package main

import (
	"context"
	"fmt"
	"io"

	"github.com/marketd/marketd/config"
	"github.com/marketd/marketd/node"
	"github.com/marketd/marketd/readmodel/bus"
	"github.com/marketd/marketd/readmodel/projector"
	"github.com/marketd/marketd/readmodel/store"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
)

// runReplay is `marketd replay --data-dir D [--from-seq N | --since T]`: it
// rebuilds the node's views from the streams into a fresh Badger directory
// beside <data-dir>/badger, showing progress, swaps it in atomically and
// exits. Without --nats it reads the embedded server's store under
// <data-dir>/nats, the layout `marketd all` leaves (stop that node first).
func runReplay(ctx context.Context, cfg config.Config, log zerolog.Logger, stdout io.Writer) error {
	return node.Run(log, func(n *node.Node) error {
		js, err := connectForTool(ctx, n, cfg)
		if err != nil {
			return err
		}
		return projector.Replay(ctx, js, cfg.DataDir, projector.ReplayOptions{
			FromSeq: cfg.ReplayFromSeq,
			Since:   cfg.ReplaySince,
			Store:   store.Options{FeedEvents: cfg.FeedEvents, MarketEvents: cfg.MarketEvents},
			Log:     log,
		}, stdout)
	})
}

// connectForTool connects to --nats, or starts the embedded server on the
// data dir's store (loopback, random port) when none is given.
func connectForTool(ctx context.Context, n *node.Node, cfg config.Config) (jetstream.JetStream, error) {
	url := cfg.NatsURL
	if url == "" {
		emb, err := bus.StartEmbedded(ctx, bus.EmbeddedOptions{StoreDir: node.BusDir(cfg.DataDir), Host: "127.0.0.1", Port: -1})
		if err != nil {
			return nil, fmt.Errorf("start embedded NATS on %s: %w", node.BusDir(cfg.DataDir), err)
		}
		n.Add("nats-server", emb.Close)
		url = emb.ClientURL()
	}
	nc, err := nats.Connect(url, nats.Name("marketd-replay"))
	if err != nil {
		return nil, fmt.Errorf("connect to NATS at %s: %w", url, err)
	}
	n.Add("nats-conn", func(context.Context) error { nc.Close(); return nil })
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	return js, nil
}

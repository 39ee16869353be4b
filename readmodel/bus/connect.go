package bus

import (
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
)

// PublishAckWait bounds how long an asynchronous publish of a connection
// made by Connect waits for its ack. Without it, an ack lost with a
// server that died never resolves and the cycle hangs; with it, the
// Publisher re-sends (same message id) until the stream has a leader
// again.
const PublishAckWait = 5 * time.Second

// Connect connects to url (one URL or a cluster's comma-separated list)
// as name, with the client's own reconnect: forever, every 250 ms, to any
// server of the list or that the cluster advertises. Disconnects and
// reconnects are logged on log. It returns the connection and its
// JetStream context (asynchronous publishes wait PublishAckWait for their
// ack), or why the first connection failed. The caller drains the
// connection when done.
func Connect(url, name string, log zerolog.Logger) (*nats.Conn, jetstream.JetStream, error) {
	nc, err := nats.Connect(url, nats.Name(name), nats.MaxReconnects(-1), nats.ReconnectWait(250*time.Millisecond),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			log.Warn().AnErr("reason", err).Msg("disconnected from NATS; reconnecting")
		}),
		nats.ReconnectHandler(func(c *nats.Conn) {
			log.Info().Str("server", c.ConnectedUrlRedacted()).Msg("reconnected to NATS")
		}))
	if err != nil {
		return nil, nil, fmt.Errorf("connect to NATS at %s: %w", url, err)
	}
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncTimeout(PublishAckWait))
	if err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("jetstream: %w", err)
	}
	return nc, js, nil
}

package bus

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/marketd/marketd/readmodel"
)

// DefaultSyncInterval is the embedded server's default JetStream fsync
// interval. JetStream's own default is 2 minutes, which lets an OS crash
// lose up to 2 minutes of acknowledged writes; ingest publishes only what
// changed, so a lost write could stay lost until the data changes again.
// One second bounds that window while keeping publish throughput (every
// write reaches the OS page cache at once, so a process crash loses
// nothing). A projector that finds its saved position re-issued by a
// stream that lost its tail detects it by message id and rebuilds.
// Set EmbeddedOptions.SyncAlways to fsync every write instead.
const DefaultSyncInterval = time.Second

// EmbeddedOptions configures StartEmbedded.
type EmbeddedOptions struct {
	// StoreDir is the JetStream file store directory (<data-dir>/nats for
	// `marketd all`). Required.
	StoreDir string
	// Host is the client listen host; "" means 127.0.0.1.
	Host string
	// Port is the client port; -1 picks a free one, 0 means the NATS default
	// (4222).
	Port int
	// SyncInterval is how often JetStream fsyncs its files; 0 means
	// DefaultSyncInterval.
	SyncInterval time.Duration
	// SyncAlways fsyncs after every write (slowest, loses nothing on an OS
	// crash).
	SyncAlways bool
	// ServerName names the server; "" means "marketd-embedded".
	ServerName string
}

// Embedded is a NATS server with JetStream running in this process.
type Embedded struct {
	srv *server.Server
}

// StartEmbedded starts a NATS server with JetStream and a file store under
// opts.StoreDir, and waits until it accepts connections. It fails with an
// UpstreamError *readmodel.Error when the server cannot start (bad options,
// port in use, store unusable).
func StartEmbedded(ctx context.Context, opts EmbeddedOptions) (*Embedded, error) {
	if opts.StoreDir == "" {
		return nil, readmodel.Errorf(readmodel.BadRequest, "embedded nats: store dir required")
	}
	sopts := &server.Options{
		ServerName:   opts.ServerName,
		Host:         opts.Host,
		Port:         opts.Port,
		JetStream:    true,
		StoreDir:     opts.StoreDir,
		SyncInterval: opts.SyncInterval,
		SyncAlways:   opts.SyncAlways,
		NoSigs:       true,
		NoLog:        true,
	}
	if sopts.Host == "" {
		sopts.Host = "127.0.0.1"
	}
	if sopts.ServerName == "" {
		sopts.ServerName = "marketd-embedded"
	}
	if sopts.SyncInterval <= 0 {
		sopts.SyncInterval = DefaultSyncInterval
	}
	srv, err := StartServer(ctx, sopts)
	if err != nil {
		return nil, err
	}
	return &Embedded{srv: srv}, nil
}

// StartServer starts a NATS server from raw options (used for clusters in
// tests) and waits until it is ready for connections or ctx ends.
func StartServer(ctx context.Context, sopts *server.Options) (*server.Server, error) {
	srv, err := server.NewServer(sopts)
	if err != nil {
		return nil, readmodel.Wrap(readmodel.UpstreamError, err, "embedded nats: bad options")
	}
	go srv.Start()
	deadline := 10 * time.Second
	if d, ok := ctx.Deadline(); ok {
		deadline = time.Until(d)
	}
	if !srv.ReadyForConnections(deadline) {
		srv.Shutdown()
		srv.WaitForShutdown()
		return nil, readmodel.Errorf(readmodel.UpstreamError, "embedded nats: not ready after %s", deadline)
	}
	return srv, nil
}

// ClientURL is the URL clients connect to.
func (e *Embedded) ClientURL() string { return e.srv.ClientURL() }

// Server exposes the underlying server (tests, monitoring).
func (e *Embedded) Server() *server.Server { return e.srv }

// Close shuts the server down (flushing JetStream to disk) and waits for
// it, or until ctx ends.
func (e *Embedded) Close(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		e.srv.Shutdown()
		e.srv.WaitForShutdown()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return readmodel.Wrap(readmodel.Internal, ctx.Err(), fmt.Sprintf("embedded nats: shutdown: %v", ctx.Err()))
	}
}

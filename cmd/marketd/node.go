package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"github.com/marketd/marketd/config"
	"github.com/rs/zerolog"
)

// shutdownBudget bounds a clean shutdown: every part gets what is left of
// it, in order (SIGINT/SIGTERM must finish within 10 s).
const shutdownBudget = 9 * time.Second

// node owns the long-lived parts of one process and closes them in the
// reverse of the order they were opened. Roles open parts in the order
// embedded NATS, Badger, HTTP, projector, simulator, ingest, so shutdown is
// DESIGN's: cron (ingest), consumer drain (projector), HTTP, Badger, and
// the embedded NATS server last.
type node struct {
	log   zerolog.Logger
	parts []part
	urls  map[string]string // listener name → URL, as logged
}

type part struct {
	name  string
	close func(ctx context.Context) error
}

// withNode runs fn with a fresh node and closes the node's parts when fn
// returns; a close error is returned when fn itself succeeded.
func withNode(log zerolog.Logger, fn func(n *node) error) (err error) {
	n := &node{log: log}
	defer func() {
		if cerr := n.close(); err == nil {
			err = cerr
		}
	}()
	return fn(n)
}

// needNats fails a role that has no embedded server when --nats is unset.
func needNats(role string, cfg config.Config) error {
	if cfg.NatsURL == "" {
		return fmt.Errorf("%s needs --nats (MARKETD_NATS_URL): the URL of a NATS server with JetStream", role)
	}
	return nil
}

// add registers a part to be closed on shutdown.
func (n *node) add(name string, close func(ctx context.Context) error) {
	n.parts = append(n.parts, part{name: name, close: close})
}

// close closes every part in reverse order within shutdownBudget and
// returns the first error; later parts are closed even when one fails.
func (n *node) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownBudget)
	defer cancel()
	var first error
	for i := len(n.parts) - 1; i >= 0; i-- {
		p := n.parts[i]
		start := time.Now()
		if err := p.close(ctx); err != nil {
			n.log.Error().Err(err).Str("part", p.name).Msg("close failed")
			if first == nil {
				first = fmt.Errorf("close %s: %w", p.name, err)
			}
			continue
		}
		n.log.Debug().Str("part", p.name).Int64("took_ms", time.Since(start).Milliseconds()).Msg("closed")
	}
	return first
}

// listen opens a TCP listener on addr and logs its bound address with the
// listener's name; tests started on ":0" ports learn the address from that
// log line ({"listener": name, "addr": ...}).
func (n *node) listen(name, addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen %s on %s: %w", name, addr, err)
	}
	u := listenURL(ln.Addr())
	n.log.Info().Str("listener", name).Str("addr", ln.Addr().String()).Str("url", u).Msg("listening")
	if n.urls == nil {
		n.urls = map[string]string{}
	}
	n.urls[name] = u
	return ln, nil
}

// listenURL is the URL a local client reaches a listener at: a wildcard
// address (":8080") is reached through localhost.
func listenURL(a net.Addr) string {
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return "http://" + a.String()
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// serve runs a blocking serve function in the background and registers
// shutdown as a part that also waits for serve to return.
func (n *node) serve(name string, serve func() error, shutdown func(ctx context.Context) error) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := serve(); err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
			n.log.Error().Err(err).Str("listener", name).Msg("serve failed")
		}
	}()
	n.add(name, func(ctx context.Context) error {
		err := shutdown(ctx)
		select {
		case <-done:
		case <-ctx.Done():
		}
		return err
	})
}

// serveHTTP serves h on ln in the background and registers its graceful
// shutdown as a part.
func (n *node) serveHTTP(name string, ln net.Listener, h http.Handler) {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			n.log.Error().Err(err).Str("listener", name).Msg("serve failed")
		}
	}()
	n.add(name, func(ctx context.Context) error {
		err := srv.Shutdown(ctx)
		<-done
		return err
	})
}

func natsDir(dataDir string) string   { return filepath.Join(dataDir, "nats") }
func badgerDir(dataDir string) string { return filepath.Join(dataDir, "badger") }

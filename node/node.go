// Package node is a running marketd process: the long-lived parts it
// opens and closes in DESIGN's shutdown order (Node) and the bus it
// connects to (OpenBus). On a node that serves the API (Serving): its
// views, the Badger store and the projector that fills it, healed from
// the streams when damaged and swapped in whole (Views, the API's
// reader), joined from the tier's views snapshot, watched for lag. On a
// node that feeds the streams (Feed): ingest, its first cycles and the
// ingest lease that picks the one node of a tier that polls (Lease).
// Every node says whether it is ready and why not (Readiness), and sets
// the Go runtime's memory budget (memory.go).
//
// cmd/marketd parses the settings and composes a role from these parts;
// httpapi serves the reads of Views through the Reader it declares.
package node

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"
)

// shutdownBudget bounds a clean shutdown: every part gets what is left of
// it, in order (SIGINT/SIGTERM must finish within 10 s).
const shutdownBudget = 9 * time.Second

// Node owns the long-lived parts of one process and closes them in the
// reverse of the order they were opened. Roles open parts in the order
// embedded NATS, Badger, HTTP, projector, simulator, ingest, so shutdown
// is DESIGN's: cron (ingest), consumer drain (projector), HTTP, Badger,
// and the embedded NATS server last. A Node is used by one goroutine,
// the role's, while it opens parts; Close runs after.
type Node struct {
	log   zerolog.Logger
	parts []part
	urls  map[string]string // listener name → URL, as logged
}

type part struct {
	name  string
	close func(ctx context.Context) error
}

// Run runs fn with a fresh Node and closes the Node's parts when fn
// returns, within shutdownBudget; a close error is returned when fn
// itself succeeded.
func Run(log zerolog.Logger, fn func(n *Node) error) (err error) {
	n := &Node{log: log}
	defer func() {
		if cerr := n.close(); err == nil {
			err = cerr
		}
	}()
	return fn(n)
}

// Add registers a part to be closed on shutdown, before every part added
// earlier.
func (n *Node) Add(name string, close func(ctx context.Context) error) {
	n.parts = append(n.parts, part{name: name, close: close})
}

// close closes every part in reverse order within shutdownBudget and
// returns the first error; later parts are closed even when one fails.
func (n *Node) close() error {
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

// Go runs fn in the background and registers a part that waits for it
// to return (fn must return once the role's context ends).
func (n *Node) Go(name string, fn func()) {
	done := make(chan struct{})
	n.Add(name, func(context.Context) error { <-done; return nil })
	go func() { defer close(done); fn() }()
}

// Listen opens a TCP listener on addr and logs its bound address with the
// listener's name; tests started on ":0" ports learn the address from that
// log line ({"listener": name, "addr": ...}).
func (n *Node) Listen(name, addr string) (net.Listener, error) {
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

// LogServing logs the "serving" line: the URL of each listener opened
// (the API's with its /v1 prefix).
func (n *Node) LogServing() {
	ev := n.log.Info()
	for _, l := range []struct{ name, key, path string }{{"http", "api", "/v1"}, {"admin", "admin", ""}, {"sim", "sim", ""}} {
		if u, ok := n.urls[l.name]; ok {
			ev = ev.Str(l.key, u+l.path)
		}
	}
	ev.Msg("serving")
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

// Serve runs a blocking serve function in the background and registers
// shutdown as a part that also waits for serve to return.
func (n *Node) Serve(name string, serve func() error, shutdown func(ctx context.Context) error) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := serve(); err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
			n.log.Error().Err(err).Str("listener", name).Msg("serve failed")
		}
	}()
	n.Add(name, func(ctx context.Context) error {
		err := shutdown(ctx)
		select {
		case <-done:
		case <-ctx.Done():
		}
		return err
	})
}

// ServeHTTP serves h on ln in the background and registers its graceful
// shutdown as a part.
func (n *Node) ServeHTTP(name string, ln net.Listener, h http.Handler) {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			n.log.Error().Err(err).Str("listener", name).Msg("serve failed")
		}
	}()
	n.Add(name, func(ctx context.Context) error {
		err := srv.Shutdown(ctx)
		<-done
		return err
	})
}

// BusDir is where the embedded NATS server keeps its streams below a
// data dir.
func BusDir(dataDir string) string { return filepath.Join(dataDir, "nats") }

// ViewsDir is where the views' Badger store lives below a data dir.
func ViewsDir(dataDir string) string { return filepath.Join(dataDir, "badger") }

// ID is this process's name in the ingest lease, the views snapshot,
// /admin/sources and /metrics: configured (--node-id) when given, else
// the host name and process id.
func ID(configured string) string {
	if configured != "" {
		return configured
	}
	h, err := os.Hostname()
	if err != nil {
		h = "marketd"
	}
	return fmt.Sprintf("%s-%d", h, os.Getpid())
}

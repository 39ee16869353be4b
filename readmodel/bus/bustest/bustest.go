// Package bustest starts real NATS servers with JetStream for tests. It is
// imported only by tests.
package bustest

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/marketd/marketd/readmodel/bus"
)

// MustStartServer starts a NATS server with JetStream on a free loopback
// port, its store in tb.TempDir(), and stops it at cleanup. It returns the
// client URL.
func MustStartServer(tb testing.TB) string {
	tb.Helper()
	e, err := bus.StartEmbedded(context.Background(), bus.EmbeddedOptions{
		StoreDir: tb.TempDir(), Port: -1, ServerName: "bustest",
	})
	if err != nil {
		tb.Fatalf("start nats: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = e.Close(ctx)
	})
	return e.ClientURL()
}

// MustConnect connects to url (a comma-separated list is fine), returns a
// JetStream context with the marketd streams ensured at replicas, and
// closes the connection at cleanup.
func MustConnect(tb testing.TB, url string, replicas int) jetstream.JetStream {
	tb.Helper()
	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		tb.Fatalf("connect %s: %v", url, err)
	}
	tb.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		tb.Fatalf("jetstream: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var lastErr error
	for ctx.Err() == nil { // a fresh cluster needs a moment to elect a meta leader
		actx, acancel := context.WithTimeout(ctx, 2*time.Second)
		lastErr = bus.EnsureStreams(actx, js, bus.StreamOptions{Replicas: replicas})
		acancel()
		if lastErr == nil {
			return js
		}
		time.Sleep(100 * time.Millisecond)
	}
	tb.Fatalf("ensure streams: %v", lastErr)
	return nil
}

// Cluster is a set of clustered NATS servers with JetStream on loopback.
type Cluster struct {
	tb      testing.TB
	opts    []*server.Options
	servers []*server.Server
}

// MustCluster starts n clustered servers (fixed free ports, so a stopped
// server restarts at the same address with its store) and shuts them down
// at cleanup.
func MustCluster(tb testing.TB, n int) *Cluster {
	tb.Helper()
	return mustCluster(tb, n, nil)
}

// mustCluster is MustCluster with each server's options passed through
// edit (when not nil) before it starts.
func mustCluster(tb testing.TB, n int, edit func(i int, o *server.Options)) *Cluster {
	tb.Helper()
	c := &Cluster{tb: tb}
	ports := make([]int, 2*n)
	for i := range ports {
		ports[i] = freePort(tb)
	}
	var routes []*url.URL
	for i := 0; i < n; i++ {
		routes = append(routes, &url.URL{Scheme: "nats-route", Host: fmt.Sprintf("127.0.0.1:%d", ports[n+i])})
	}
	for i := 0; i < n; i++ {
		c.opts = append(c.opts, &server.Options{
			ServerName: fmt.Sprintf("n%d", i),
			Host:       "127.0.0.1",
			Port:       ports[i],
			JetStream:  true,
			StoreDir:   tb.TempDir(),
			NoSigs:     true,
			NoLog:      true,
			Cluster:    server.ClusterOpts{Name: "marketd-test", Host: "127.0.0.1", Port: ports[n+i]},
			Routes:     routes,
		})
		if edit != nil {
			edit(i, c.opts[i])
		}
	}
	c.servers = make([]*server.Server, n)
	for i := range c.opts {
		c.Start(i)
	}
	tb.Cleanup(func() {
		for i := range c.servers {
			c.Stop(i)
		}
	})
	return c
}

// URL is a comma-separated list of every server's client URL.
func (c *Cluster) URL() string {
	var urls []string
	for _, o := range c.opts {
		urls = append(urls, fmt.Sprintf("nats://127.0.0.1:%d", o.Port))
	}
	return strings.Join(urls, ",")
}

// Start (re)starts server i with its original options and store.
func (c *Cluster) Start(i int) {
	c.tb.Helper()
	o := *c.opts[i]
	srv, err := bus.StartServer(context.Background(), &o)
	if err != nil {
		c.tb.Fatalf("start server %d: %v", i, err)
	}
	c.servers[i] = srv
}

// Stop shuts server i down and waits for it; a no-op when it is stopped.
func (c *Cluster) Stop(i int) {
	if s := c.servers[i]; s != nil {
		s.Shutdown()
		s.WaitForShutdown()
		c.servers[i] = nil
	}
}

func freePort(tb testing.TB) int {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

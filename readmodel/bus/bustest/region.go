package bustest

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/marketd/marketd/readmodel/bus"
)

// HubDomain and RegionDomain are the JetStream domains of MustRegion's
// two servers.
const (
	HubDomain    = "hub"
	RegionDomain = "region"
)

// Region is a hub server and a leaf server, each with JetStream in its
// own domain, the leaf connected to the hub through a Link that a test can
// cut and restore.
type Region struct {
	Hub, Leaf *server.Server
	Link      *Link
}

// MustRegion starts a hub (JetStream domain HubDomain, a leaf-node
// listener) and a leaf server (domain RegionDomain) whose remote is the
// hub through a Link, on free loopback ports with stores in tb.TempDir(),
// and waits until the leaf is connected. Everything stops at cleanup.
func MustRegion(tb testing.TB) *Region {
	tb.Helper()
	leafPort := freePort(tb)
	hub, err := bus.StartServer(context.Background(), &server.Options{
		ServerName: "hub", Host: "127.0.0.1", Port: -1, NoSigs: true, NoLog: true,
		JetStream: true, JetStreamDomain: HubDomain, StoreDir: tb.TempDir(),
		// NoAdvertise: the leaf must reach the hub only through the Link.
		LeafNode: server.LeafNodeOpts{Host: "127.0.0.1", Port: leafPort, NoAdvertise: true},
	})
	if err != nil {
		tb.Fatalf("start hub: %v", err)
	}
	tb.Cleanup(func() { hub.Shutdown(); hub.WaitForShutdown() })
	link := MustLink(tb, fmt.Sprintf("127.0.0.1:%d", leafPort))
	leaf, err := bus.StartServer(context.Background(), &server.Options{
		ServerName: "leaf", Host: "127.0.0.1", Port: -1, NoSigs: true, NoLog: true,
		JetStream: true, JetStreamDomain: RegionDomain, StoreDir: tb.TempDir(),
		LeafNode: server.LeafNodeOpts{
			ReconnectInterval: 100 * time.Millisecond,
			Remotes:           []*server.RemoteLeafOpts{{URLs: []*url.URL{{Scheme: "nats-leaf", Host: link.Addr()}}}},
		},
	})
	if err != nil {
		tb.Fatalf("start leaf: %v", err)
	}
	tb.Cleanup(func() { leaf.Shutdown(); leaf.WaitForShutdown() })
	r := &Region{Hub: hub, Leaf: leaf, Link: link}
	r.MustWaitLinked(tb)
	return r
}

// MustWaitLinked waits (up to 10 s) until the leaf is connected to the
// hub.
func (r *Region) MustWaitLinked(tb testing.TB) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for r.Leaf.NumLeafNodes() == 0 || r.Hub.NumLeafNodes() == 0 {
		if time.Now().After(deadline) {
			tb.Fatalf("leaf not connected to the hub after 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Hub is a cluster of servers in JetStream domain HubDomain, each also
// listening for leaf nodes.
type Hub struct {
	*Cluster
	leafPorts []int
}

// MustHub starts n clustered servers (as MustCluster) in domain
// HubDomain, each with a leaf-node listener that it does not advertise
// (leaf servers reach it only through their Links).
func MustHub(tb testing.TB, n int) *Hub {
	tb.Helper()
	h := &Hub{leafPorts: make([]int, n)}
	for i := range h.leafPorts {
		h.leafPorts[i] = freePort(tb)
	}
	h.Cluster = mustCluster(tb, n, func(i int, o *server.Options) {
		o.JetStreamDomain = HubDomain
		o.LeafNode = server.LeafNodeOpts{Host: "127.0.0.1", Port: h.leafPorts[i], NoAdvertise: true}
	})
	return h
}

// Leaf is a region's leaf server, connected to every server of a Hub
// through a Link each.
type Leaf struct {
	Server *server.Server
	Links  []*Link
}

// MustLeaf starts a leaf server with JetStream in domain, on a free
// loopback port with its store in tb.TempDir(), whose remote lists every
// hub server through a Link of its own, and waits until it is connected.
// It stops at cleanup.
func (h *Hub) MustLeaf(tb testing.TB, domain string) *Leaf {
	tb.Helper()
	l := &Leaf{}
	var urls []*url.URL
	for _, p := range h.leafPorts {
		link := MustLink(tb, fmt.Sprintf("127.0.0.1:%d", p))
		l.Links = append(l.Links, link)
		urls = append(urls, &url.URL{Scheme: "nats-leaf", Host: link.Addr()})
	}
	srv, err := bus.StartServer(context.Background(), &server.Options{
		ServerName: "leaf-" + domain, Host: "127.0.0.1", Port: -1, NoSigs: true, NoLog: true,
		JetStream: true, JetStreamDomain: domain, StoreDir: tb.TempDir(),
		LeafNode: server.LeafNodeOpts{
			ReconnectInterval: 100 * time.Millisecond,
			Remotes:           []*server.RemoteLeafOpts{{URLs: urls}},
		},
	})
	if err != nil {
		tb.Fatalf("start leaf %s: %v", domain, err)
	}
	tb.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	l.Server = srv
	l.MustWaitLinked(tb)
	return l
}

// URL is the leaf server's client URL.
func (l *Leaf) URL() string { return l.Server.ClientURL() }

// Cut cuts every link of the leaf.
func (l *Leaf) Cut() {
	for _, k := range l.Links {
		k.Cut()
	}
}

// Restore restores every link of the leaf.
func (l *Leaf) Restore() {
	for _, k := range l.Links {
		k.Restore()
	}
}

// Linked reports whether the leaf is connected to the hub.
func (l *Leaf) Linked() bool { return l.Server.NumLeafNodes() > 0 }

// MustWaitLinked waits (up to 10 s) until the leaf is connected.
func (l *Leaf) MustWaitLinked(tb testing.TB) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !l.Linked() {
		if time.Now().After(deadline) {
			tb.Fatalf("leaf %s not connected to the hub after 10s", l.Server.Name())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Link is a TCP proxy between a leaf server and its hub: Cut closes its
// listener and every connection through it (the leaf sees the hub gone),
// Restore listens again on the same address.
type Link struct {
	tb     testing.TB
	target string
	addr   string

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// MustLink starts a Link to target on a free loopback port; it closes at
// cleanup.
func MustLink(tb testing.TB, target string) *Link {
	tb.Helper()
	l := &Link{tb: tb, target: target, conns: map[net.Conn]struct{}{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("link listen: %v", err)
	}
	l.addr = ln.Addr().String()
	l.serve(ln)
	tb.Cleanup(func() { l.Cut(); l.wg.Wait() })
	return l
}

// Addr is the address the leaf dials.
func (l *Link) Addr() string { return l.addr }

// Cut closes the listener and every connection through the link. A
// no-op when cut.
func (l *Link) Cut() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ln != nil {
		_ = l.ln.Close()
		l.ln = nil
	}
	for c := range l.conns {
		_ = c.Close()
	}
}

// Restore listens on the link's address again (the leaf reconnects by
// itself). A no-op when not cut.
func (l *Link) Restore() {
	l.tb.Helper()
	l.mu.Lock()
	up := l.ln != nil
	l.mu.Unlock()
	if up {
		return
	}
	var ln net.Listener
	var err error
	for range 50 { // the closed listener's port may linger a moment
		if ln, err = net.Listen("tcp", l.addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		l.tb.Fatalf("link listen again: %v", err)
	}
	l.serve(ln)
}

func (l *Link) serve(ln net.Listener) {
	l.mu.Lock()
	l.ln = ln
	l.mu.Unlock()
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			l.pipe(c)
		}
	}()
}

// pipe joins c to a new connection to the target, both tracked for Cut.
func (l *Link) pipe(c net.Conn) {
	up, err := net.Dial("tcp", l.target)
	if err != nil {
		_ = c.Close()
		return
	}
	l.mu.Lock()
	if l.ln == nil { // cut meanwhile
		l.mu.Unlock()
		_ = c.Close()
		_ = up.Close()
		return
	}
	l.conns[c], l.conns[up] = struct{}{}, struct{}{}
	l.mu.Unlock()
	copyClose := func(dst, src net.Conn) {
		defer l.wg.Done()
		_, err := io.Copy(dst, src)
		_ = err // a cut or either side closing ends it; nothing to report
		_ = dst.Close()
		_ = src.Close()
		l.mu.Lock()
		delete(l.conns, dst)
		delete(l.conns, src)
		l.mu.Unlock()
	}
	l.wg.Add(2)
	go copyClose(up, c)
	go copyClose(c, up)
}

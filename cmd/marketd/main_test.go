package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// Main is a running `marketd` started by MustRunMain.
type Main struct {
	API, Admin, Sim string // base URLs, e.g. http://127.0.0.1:41234
	DataDir         string

	cancel context.CancelFunc
	done   chan error
	logs   *logTail
}

// MustRunMain runs `marketd all` in-process on :0 ports with a temporary
// data dir (or dataDir when given in args as --data-dir), waits until
// /readyz answers 200, and stops it at test cleanup. Extra flags are passed
// through.
func MustRunMain(tb testing.TB, args ...string) *Main {
	tb.Helper()
	m := StartMain(tb, args...)
	m.MustWaitReady(tb)
	return m
}

// StartMain is MustRunMain without waiting for readiness.
func StartMain(tb testing.TB, args ...string) *Main {
	tb.Helper()
	dataDir := ""
	for i, a := range args {
		if a == "--data-dir" && i+1 < len(args) {
			dataDir = args[i+1]
		}
	}
	if dataDir == "" {
		dataDir = tb.TempDir()
		args = append(args, "--data-dir", dataDir)
	}
	role := "all"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		role, args = args[0], args[1:]
	}
	full := append([]string{role, "--http-addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0", "--sim-addr", "127.0.0.1:0",
		"--log-level", "info"}, args...)

	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	m := &Main{DataDir: dataDir, cancel: cancel, done: make(chan error, 1), logs: newLogTail(2000)}
	addrs := make(chan map[string]string, 1)
	go m.scan(pr, addrs)
	getenv := func(string) string { return "" }
	go func() {
		err := run(ctx, full, getenv, io.Discard, pw)
		pw.Close()
		m.done <- err
	}()
	tb.Cleanup(func() { m.Stop(tb) })

	select {
	case a := <-addrs:
		m.API, m.Admin, m.Sim = "http://"+a["http"], "http://"+a["admin"], "http://"+a["sim"]
	case err := <-m.done:
		m.done <- err
		tb.Fatalf("marketd exited before listening: %v\n%s", err, m.logs)
	case <-time.After(60 * time.Second):
		tb.Fatalf("marketd did not listen within 60s\n%s", m.logs)
	}
	return m
}

// scan reads the JSON log stream, keeps a tail for failure messages and
// reports the bound addresses once the admin listener (the last one opened)
// is up.
func (m *Main) scan(r io.Reader, addrs chan<- map[string]string) {
	found := map[string]string{}
	sent := false
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		m.logs.add(line)
		var rec struct {
			Listener string `json:"listener"`
			Addr     string `json:"addr"`
		}
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Listener != "" {
			found[rec.Listener] = rec.Addr
			if rec.Listener == "admin" && !sent {
				sent = true
				cp := map[string]string{}
				for k, v := range found {
					cp[k] = v
				}
				addrs <- cp
			}
		}
	}
	io.Copy(io.Discard, r)
}

// MustWaitReady polls /readyz until it answers 200.
func (m *Main) MustWaitReady(tb testing.TB) {
	tb.Helper()
	deadline := time.Now().Add(4 * time.Minute)
	for time.Now().Before(deadline) {
		resp, err := http.Get(m.Admin + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case err := <-m.done:
			m.done <- err
			tb.Fatalf("marketd exited while waiting for ready: %v\n%s", err, m.logs)
		case <-time.After(50 * time.Millisecond):
		}
	}
	tb.Fatalf("marketd not ready within 4m\n%s", m.logs)
}

// Stop cancels the run context (as SIGTERM does) and waits for run to
// return; a shutdown error fails the test.
func (m *Main) Stop(tb testing.TB) {
	tb.Helper()
	if m.cancel == nil {
		return
	}
	m.cancel()
	m.cancel = nil
	select {
	case err := <-m.done:
		if err != nil {
			tb.Errorf("marketd shutdown: %v\n%s", err, m.logs)
		}
	case <-time.After(30 * time.Second):
		tb.Errorf("marketd did not stop within 30s\n%s", m.logs)
	}
}

// logTail keeps the last n log lines for failure messages.
type logTail struct {
	mu    sync.Mutex
	lines []string
	n     int
}

func newLogTail(n int) *logTail { return &logTail{n: n} }

func (l *logTail) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, s)
	if len(l.lines) > l.n {
		l.lines = l.lines[len(l.lines)-l.n:]
	}
}

// Lines returns a copy of the lines kept.
func (l *logTail) Lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

func (l *logTail) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return fmt.Sprintf("--- last %d log lines ---\n%s", len(l.lines), strings.Join(l.lines, "\n"))
}

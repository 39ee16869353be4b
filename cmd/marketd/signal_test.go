package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMain lets the test binary act as the marketd binary when
// MARKETD_TEST_RUN_MAIN=1, so tests can run real child processes and send
// them real signals.
func TestMain(m *testing.M) {
	if os.Getenv("MARKETD_TEST_RUN_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// child is marketd running as a separate process.
type child struct {
	cmd   *exec.Cmd
	lines chan string
	addrs map[string]string
	done  chan error
}

func startChild(t *testing.T, args ...string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"all", "--http-addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0",
		"--sim-addr", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(os.Environ(), "MARKETD_TEST_RUN_MAIN=1")
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	c := &child{cmd: cmd, lines: make(chan string, 10000), addrs: map[string]string{}, done: make(chan error, 1)}
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			select {
			case c.lines <- sc.Text():
			default:
			}
		}
		close(c.lines)
		c.done <- cmd.Wait()
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	for line := range c.lines {
		var rec struct{ Listener, Addr string }
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Listener != "" {
			c.addrs[rec.Listener] = "http://" + rec.Addr
			if rec.Listener == "admin" {
				return c
			}
		}
	}
	t.Fatal("child exited before listening")
	return nil
}

// TestSIGTERMShutsDownCleanlyAndRestartServesViews sends a real SIGTERM to
// a running marketd while a cycle is in flight: it must exit 0 within 10 s
// after logging "stopped"; started again on the same data dir it serves the
// previous views at once.
func TestSIGTERMShutsDownCleanlyAndRestartServesViews(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--data-dir", dir, "--sim-collections", "40", "--cursor-key", testCursorKey}
	c := startChild(t, args...)
	m := &Main{API: c.addrs["http"], Admin: c.addrs["admin"], Sim: c.addrs["sim"], done: make(chan error, 1), logs: newLogTail(10)}
	m.MustWaitReady(t)
	before := get(t, m.API+"/v1/collections?limit=10")
	require.Equal(t, 200, before.Status)

	go func() { _, _ = postQuiet(c.addrs["admin"] + "/admin/ingest") }() // a cycle in flight
	time.Sleep(100 * time.Millisecond)
	require.NoError(t, c.cmd.Process.Signal(syscall.SIGTERM))
	var stopped bool
	deadline := time.After(10 * time.Second)
	for waiting := true; waiting; {
		select {
		case line, ok := <-c.lines:
			if !ok {
				waiting = false
				break
			}
			if strings.Contains(line, `"message":"stopped"`) {
				stopped = true
			}
		case <-deadline:
			t.Fatal("marketd did not exit within 10 s of SIGTERM")
		}
	}
	err := <-c.done
	assert.NoError(t, err, "exit code 0")
	assert.True(t, stopped, "logged a clean stop")

	c2 := startChild(t, args...)
	after := get(t, c2.addrs["http"]+"/v1/collections?limit=10")
	require.Equal(t, 200, after.Status)
	assert.Equal(t, before.JSON["data"], after.JSON["data"], "previous views served at once")
	require.NoError(t, c2.cmd.Process.Signal(syscall.SIGTERM))
	assert.NoError(t, <-c2.done)
}

package projector_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel/projector"
	"github.com/marketd/marketd/readmodel/store"
)

const (
	envCrashChild = "MARKETD_TEST_CRASH_CHILD"
	envCrashNATS  = "MARKETD_TEST_CRASH_NATS"
	envCrashDir   = "MARKETD_TEST_CRASH_DIR"
)

func TestMain(m *testing.M) {
	if os.Getenv(envCrashChild) == "1" {
		os.Exit(crashChild())
	}
	os.Exit(m.Run())
}

// crashChild is the projector process the crash test kills: it applies
// everything available into the store in envCrashDir and exits 0.
func crashChild() int {
	ctx := context.Background()
	nc, err := nats.Connect(os.Getenv(envCrashNATS))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	st, err := store.Open(ctx, os.Getenv(envCrashDir), store.Options{MemTableSize: 16 << 20})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer st.Close(ctx)
	p := projector.New(js, st, projector.Options{Now: func() time.Time { return t0 }, RowRetention: 10 * time.Minute}, zerolog.Nop())
	if _, err := p.ApplyAvailable(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	return 0
}

// TestCrashSafety SIGKILLs a projector child process at random points of a
// large cycle, restarts it, and compares its views with a clean run.
func TestCrashSafety(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test")
	}
	ctx := context.Background()
	e := mustEnv(t)
	url := e.js.Conn().ConnectedUrl()
	e.publish(cycle(200, 1)...)

	start := time.Now()
	e.apply() // the clean run, also the yardstick for kill points
	clean := time.Since(start)

	seed := uint64(time.Now().UnixNano())
	t.Logf("crash seed %d, clean apply %s", seed, clean)
	rng := rand.New(rand.NewPCG(seed, seed))
	dir := t.TempDir()
	child := func() *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), envCrashChild+"=1", envCrashNATS+"="+url, envCrashDir+"="+dir)
		cmd.Stderr = os.Stderr
		return cmd
	}

	killed := 0
	for k := 0; k < 4; k++ {
		if k == 2 {
			e.publish(cycle(200, 2)...) // a second cycle lands between crashes
		}
		cmd := child()
		require.NoError(t, cmd.Start())
		// Kill somewhere inside the child's apply (start-up included).
		time.Sleep(clean/10 + time.Duration(rng.Int64N(int64(clean/2))))
		_ = cmd.Process.Signal(syscall.SIGKILL)
		err := cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			killed++
		} else {
			require.NoError(t, err, "child finished before the kill")
		}
	}
	require.NoError(t, child().Run(), "the restarted child completes")
	assert.Positive(t, killed, "at least one kill landed mid-apply")

	e.apply() // the clean node takes the second cycle too
	st := mustStore(t, dir)
	assert.Equal(t, digest(t, e.st), digest(t, st), "views after crashes equal a clean run")
	sales, err := st.Sales(ctx, "ethereum_0x0007", "", 10)
	require.NoError(t, err)
	assert.Len(t, sales.Items, 2, "no sale applied twice")
}

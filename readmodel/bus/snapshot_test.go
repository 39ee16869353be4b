package bus_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/bus"
	"github.com/marketd/marketd/readmodel/bus/bustest"
)

func TestViewsSnapshotPublishAndOpen(t *testing.T) {
	ctx := context.Background()
	js := bustest.MustConnect(t, bustest.MustStartServer(t), 1)
	snaps := bus.NewSnapshots(js, 1)

	_, err := snaps.Latest(ctx)
	assert.ErrorIs(t, err, bus.ErrNoSnapshot, "no bucket yet")
	_, _, err = snaps.Open(ctx)
	assert.ErrorIs(t, err, bus.ErrNoSnapshot)

	// Several chunks' worth of incompressible bytes, twice: the second
	// publish replaces the first.
	created := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	for round, size := range []int{3<<20 + 17, 1<<20 + 5} {
		body := make([]byte, size)
		rng := rand.New(rand.NewPCG(uint64(round), 1))
		for i := range body {
			body[i] = byte(rng.Uint32())
		}
		meta := bus.SnapshotMeta{Schema: "16+abc", Node: "node-a", Created: created.Add(time.Duration(round) * time.Minute), State: 4711 + uint64(round), Sales: 99}
		put, err := snaps.Publish(ctx, meta, bytes.NewReader(body))
		require.NoError(t, err)
		assert.Equal(t, uint64(size), put.Size)

		latest, err := snaps.Latest(ctx)
		require.NoError(t, err)
		assert.Equal(t, meta.Schema, latest.Schema)
		assert.Equal(t, meta.Node, latest.Node)
		assert.True(t, meta.Created.Equal(latest.Created))
		assert.Equal(t, meta.State, latest.State)
		assert.Equal(t, meta.Sales, latest.Sales)
		assert.Equal(t, uint64(size), latest.Size)

		r, got, err := snaps.Open(ctx)
		require.NoError(t, err)
		read, err := io.ReadAll(r)
		require.NoError(t, err)
		require.NoError(t, r.Close())
		assert.Equal(t, latest.State, got.State)
		assert.True(t, bytes.Equal(body, read), "round %d: the bytes published are read back", round)
	}
}

// TestViewsSnapshotPublishFailsWithItsReader: a snapshot whose writer
// fails (the store closed under it) is not published, and the error is
// the snapshot's own; the snapshot before it stays.
func TestViewsSnapshotPublishFailsWithItsReader(t *testing.T) {
	ctx := context.Background()
	js := bustest.MustConnect(t, bustest.MustStartServer(t), 1)
	snaps := bus.NewSnapshots(js, 1)
	_, err := snaps.Publish(ctx, bus.SnapshotMeta{Schema: "s", State: 1}, bytes.NewReader([]byte("first")))
	require.NoError(t, err)

	boom := readmodel.Errorf(readmodel.Internal, "store closed")
	pr, pw := io.Pipe()
	go func() {
		_, _ = pw.Write(make([]byte, 700<<10))
		pw.CloseWithError(boom)
	}()
	_, err = snaps.Publish(ctx, bus.SnapshotMeta{Schema: "s", State: 2}, pr)
	require.Error(t, err)
	assert.True(t, errors.Is(err, boom), "%v", err)

	latest, err := snaps.Latest(ctx)
	require.NoError(t, err)
	assert.Equal(t, uint64(1), latest.State, "the failed publish left the earlier snapshot")
	r, _, err := snaps.Open(ctx)
	require.NoError(t, err)
	defer r.Close()
	b, err := io.ReadAll(r)
	require.NoError(t, err)
	assert.Equal(t, "first", string(b))
}

// TestViewsSnapshotReadsSlowerThanTheClientTimeout: a restore reads the
// snapshot as fast as it writes it, which at the large size takes far
// longer than the client's default timeout; the read must not be cut off.
func TestViewsSnapshotReadsSlowerThanTheClientTimeout(t *testing.T) {
	ctx := context.Background()
	// The bucket lookup in Open is one API request bounded by this
	// timeout too: 200 ms failed now and then on a loaded CI runner.
	snaps := mustSnapshotsTimingOut(t, 500*time.Millisecond)
	body := bytes.Repeat([]byte("marketd views "), 200_000) // several chunks
	_, err := snaps.Publish(ctx, bus.SnapshotMeta{Schema: "s"}, bytes.NewReader(body))
	require.NoError(t, err)

	r, _, err := snaps.Open(ctx)
	require.NoError(t, err)
	defer r.Close()
	var got bytes.Buffer
	buf := make([]byte, 256<<10)
	for {
		time.Sleep(150 * time.Millisecond) // the whole read takes over 1.5 s
		n, err := r.Read(buf)
		got.Write(buf[:n])
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
	}
	assert.True(t, bytes.Equal(body, got.Bytes()))
}

// TestViewsSnapshotPublishesSlowerThanTheClientTimeout: a publish with no
// deadline of its own is not cut off by the client's default timeout
// (nats.go gives each chunk's acknowledgement that timeout otherwise).
func TestViewsSnapshotPublishesSlowerThanTheClientTimeout(t *testing.T) {
	ctx := context.Background()
	snaps := mustSnapshotsTimingOut(t, time.Millisecond)
	body := bytes.Repeat([]byte("marketd views "), 800_000) // 11 MB: 22 chunks
	_, err := snaps.Publish(ctx, bus.SnapshotMeta{Schema: "s"}, bytes.NewReader(body))
	require.NoError(t, err)

	// Only the publish is under test: Open's bucket lookup is an API
	// request that the 1 ms default would bound, so it gets a deadline.
	openCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	r, _, err := snaps.Open(openCtx)
	require.NoError(t, err)
	defer r.Close()
	got, err := io.ReadAll(r)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(body, got))
}

// mustSnapshotsTimingOut returns Snapshots on a fresh server through a
// client whose default timeout is timeout.
func mustSnapshotsTimingOut(t *testing.T, timeout time.Duration) *bus.Snapshots {
	t.Helper()
	nc, err := nats.Connect(bustest.MustStartServer(t))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc, jetstream.WithDefaultTimeout(timeout))
	require.NoError(t, err)
	return bus.NewSnapshots(js, 1)
}

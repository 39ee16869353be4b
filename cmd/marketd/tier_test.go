package main

import (
	"context"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/config"
	"github.com/marketd/marketd/ingest/sim"
	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/bus"
	"github.com/marketd/marketd/readmodel/bus/bustest"
)

// tier is a regional cache tier on loopback: three clustered NATS servers
// (R3 streams), the simulator, ingest and serve nodes run in-process as
// their roles (`marketd ingest`, `marketd serve`), each with its own NATS
// client over the cluster's URL list.
type tier struct {
	t       *testing.T
	cluster *bustest.Cluster
	sim     string // simulator base URL
	js      jetstream.JetStream
	ids     *idCounter
}

// tierLease is the ingest lease of the tier's nodes: the default. The
// handovers below go through a release (an ingest stopped), so its length
// does not slow them; a shorter one expired while the stream leader's
// server was stopped mid-cycle on a loaded runner (its renewal waits for
// the election), and the standby then took the cycle over.
const tierLease = "10s"

func newTier(t *testing.T) *tier {
	c := bustest.MustCluster(t, 3)
	s := sim.New(sim.Options{Seed: 7, Collections: 20, TokensPerCollection: 20, Anchor: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)})
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(func() { srv.Close(); _ = s.Close(context.Background()) })
	js := bustest.MustConnect(t, c.URL(), 3)
	ids := &idCounter{seen: map[string]int{}}
	sub, err := js.Conn().Subscribe("marketd.>", ids.note)
	require.NoError(t, err)
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	return &tier{t: t, cluster: c, sim: srv.URL, js: js, ids: ids}
}

// idCounter counts every publish of every message id on the wire.
type idCounter struct {
	mu   sync.Mutex
	seen map[string]int
}

func (c *idCounter) note(m *nats.Msg) {
	c.mu.Lock()
	c.seen[m.Header.Get(jetstream.MsgIDHeader)]++
	c.mu.Unlock()
}

// reset forgets the ids seen so far and returns how many there were and
// how many of them were sent more than once.
func (c *idCounter) reset() (ids, repeated int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.seen {
		ids++
		if n > 1 {
			repeated++
		}
	}
	c.seen = map[string]int{}
	return ids, repeated
}

func (tr *tier) common() []string {
	return []string{"--nats", tr.cluster.URL(), "--stream-replicas", "3", "--poll-interval", "1h", "--ingest-lease", tierLease,
		"--source-timeout", "5s", "--cursor-key", testCursorKey}
}

func (tr *tier) ingest(id, dataDir string) *Main {
	args := append([]string{"ingest", "--node-id", id, "--data-dir", dataDir}, tr.common()...)
	for _, name := range config.SourceNames {
		args = append(args, "--source-"+name+"-url", tr.sim+"/"+name)
	}
	args = append(args, "--source-analytics-timeout", "3s")
	return MustRunMain(tr.t, args...)
}

func (tr *tier) serve(id, dataDir string) *Main {
	return MustRunMain(tr.t, append([]string{"serve", "--node-id", id, "--data-dir", dataDir}, tr.common()...)...)
}

// heads returns the streams' last sequences, waiting (a restarted cluster
// elects its leaders first).
func (tr *tier) heads() readmodel.Position {
	var h readmodel.Position
	require.Eventually(tr.t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		var err error
		h, err = bus.Heads(ctx, tr.js)
		return err == nil
	}, 90*time.Second, 100*time.Millisecond)
	return h
}

// caughtUp waits until every node applied the streams' heads and is ready.
func (tr *tier) caughtUp(nodes ...*Main) {
	tr.t.Helper()
	want := tr.heads()
	for _, m := range nodes {
		var st, sa float64
		var ready resp
		ok := assert.Eventually(tr.t, func() bool {
			r := get(tr.t, m.Admin+"/metrics")
			st = metric(string(r.Body), `marketd_projector_applied_sequence{stream="`+bus.StateStream+`"}`)
			sa = metric(string(r.Body), `marketd_projector_applied_sequence{stream="`+bus.SalesStream+`"}`)
			ready = get(tr.t, m.Admin+"/readyz")
			return st >= float64(want.State) && sa >= float64(want.Sales) && ready.Status == 200
		}, 60*time.Second, 100*time.Millisecond, "node %s did not catch up with %+v", m.Admin, want)
		if !ok {
			// What the node had applied and said, and its log, so that a
			// failure on a loaded runner can be read afterwards.
			tr.t.Fatalf("node %s: applied state %v sales %v, readyz %d %s\n%s", m.Admin, st, sa, ready.Status, ready.Body, m.logs)
		}
	}
}

func (tr *tier) tick() {
	r := post(tr.t, tr.sim+"/_sim/tick", "")
	require.Equal(tr.t, 200, r.Status, "%s", r.Body)
}

func (tr *tier) fault(source, mode string) {
	r := post(tr.t, tr.sim+"/_sim/faults", `{"source":"`+source+`","mode":"`+mode+`"}`)
	require.Equal(tr.t, 200, r.Status, "%s", r.Body)
}

// leader returns the index of the server leading stream name.
func (tr *tier) leader(name string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := tr.js.Stream(ctx, name)
	require.NoError(tr.t, err)
	info, err := s.Info(ctx)
	require.NoError(tr.t, err)
	require.NotNil(tr.t, info.Cluster)
	i, err := strconv.Atoi(strings.TrimPrefix(info.Cluster.Leader, "n"))
	require.NoError(tr.t, err, "leader %q", info.Cluster.Leader)
	return i
}

// metric returns the value of the sample line that starts with name.
func metric(body, name string) float64 {
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, name+" ") {
			v, _ := strconv.ParseFloat(strings.TrimSpace(line[len(name):]), 64)
			return v
		}
	}
	return -1
}

func leaseHolder(t *testing.T, m *Main) string {
	r := get(t, m.Admin+"/admin/sources")
	require.Equal(t, 200, r.Status, "%s", r.Body)
	return obj(r.JSON["lease"])["holder"].(string)
}

// TestTierSurvivesLosingAServerAndAnIngest is the regional cache tier's
// failover (docs/tier.md): a stream leader's server stopped mid-cycle, the active ingest stopped,
// everything restarted in another order; the serve nodes always equal a
// clean replay of the streams.
func TestTierSurvivesLosingAServerAndAnIngest(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	tr := newTier(t)
	dirs := map[string]string{"ingest-a": t.TempDir(), "ingest-b": t.TempDir(), "serve-1": t.TempDir(), "serve-2": t.TempDir()}
	ingA := tr.ingest("ingest-a", dirs["ingest-a"])
	ingB := tr.ingest("ingest-b", dirs["ingest-b"])
	s1 := tr.serve("serve-1", dirs["serve-1"])
	s2 := tr.serve("serve-2", dirs["serve-2"])
	tr.caughtUp(s1, s2)
	require.Equal(t, "ingest-a", leaseHolder(t, s1), "the first ingest holds the lease")
	assert.Equal(t, float64(1), metric(string(get(t, ingA.Admin+"/metrics").Body), `marketd_ingest_lease_held{node="ingest-a"}`))
	assert.Equal(t, float64(0), metric(string(get(t, ingB.Admin+"/metrics").Body), `marketd_ingest_lease_held{node="ingest-b"}`))
	assert.Equal(t, float64(1), metric(string(get(t, s1.Admin+"/metrics").Body), `marketd_ingest_lease_holders`), "a serve node sees the holder")
	assert.Equal(t, float64(1), metric(string(get(t, s1.Admin+"/metrics").Body), `marketd_ready`))
	r := post(t, ingB.Admin+"/admin/ingest", "")
	assert.Equal(t, 503, r.Status, "a standby refuses to run a cycle: %s", r.Body)

	// /admin/sources answers on a serve node, from the statuses on the bus.
	r = get(t, s2.Admin+"/admin/sources")
	require.Equal(t, 200, r.Status, "%s", r.Body)
	require.Len(t, arr(r.JSON["sources"]), len(config.SourceNames))
	for _, v := range arr(r.JSON["sources"]) {
		assert.Equal(t, true, obj(v)["healthy"], "%v", v)
	}

	// 1. Stop the stream leader's server mid-cycle: analytics hangs until
	// its 3 s timeout, so the cycle is still running when the other
	// sources' rows have reached the stream.
	tr.tick()
	tr.fault("analytics", "timeout")
	before := tr.heads()
	type answer struct {
		r    resp
		took time.Duration
	}
	done := make(chan answer, 1)
	go func() {
		start := time.Now()
		res := post(t, ingA.Admin+"/admin/ingest", "")
		done <- answer{res, time.Since(start)}
	}()
	require.Eventually(t, func() bool { return tr.heads().State > before.State }, 30*time.Second, 20*time.Millisecond)
	down := tr.leader(bus.StateStream)
	tr.cluster.Stop(down)
	a := <-done
	require.Equal(t, 200, a.r.Status, "the cycle completes once the stream has a leader again: %s", a.r.Body)
	t.Logf("cycle with the stream leader's server (n%d) stopped mid-cycle: %s", down, a.took.Round(time.Millisecond))
	acked := obj(a.r.JSON["position"])
	after := tr.heads()
	assert.GreaterOrEqual(t, after.State, uint64(acked["state"].(float64)), "no acknowledged state message lost")
	assert.GreaterOrEqual(t, after.Sales, uint64(acked["sales"].(float64)), "no acknowledged sale lost")
	tr.fault("analytics", "ok")
	tr.caughtUp(s1, s2)
	tr.tick()
	require.Equal(t, 200, post(t, ingA.Admin+"/admin/ingest", "").Status, "a cycle with one server down")
	tr.cluster.Start(down)
	tr.caughtUp(s1, s2)
	ids, repeated := tr.ids.reset()
	t.Logf("before the ingest handover: %d message ids published, %d sent again (a retried publish; the stream dedupes it)", ids, repeated)

	// 2. Stop the active ingest: the standby takes over and publishes a
	// cycle of its own; no message id goes out twice.
	stopped := time.Now()
	ingA.Stop(t)
	require.Eventually(t, func() bool {
		return metric(string(get(t, ingB.Admin+"/metrics").Body), `marketd_ingest_lease_held{node="ingest-b"}`) == 1
	}, 30*time.Second, 20*time.Millisecond)
	t.Logf("standby took over %s after the active ingest stopped (lease period %s)", time.Since(stopped).Round(time.Millisecond), tierLease)
	tr.tick()
	require.Eventually(t, func() bool { return post(t, ingB.Admin+"/admin/ingest", "").Status == 200 }, 30*time.Second, 200*time.Millisecond)
	tr.caughtUp(s1, s2)
	assert.Equal(t, "ingest-b", leaseHolder(t, s1))
	ids, repeated = tr.ids.reset()
	assert.Zero(t, repeated, "no message id published twice across the handover")
	t.Logf("across the handover: %d message ids published, %d twice", ids, repeated)

	// 3. Restart everything in another order. With every server down a
	// serve node keeps serving its views but says it is not ready.
	s1.Stop(t)
	ingB.Stop(t)
	for _, i := range []int{1, 2, 0} {
		tr.cluster.Stop(i)
	}
	require.Eventually(t, func() bool {
		r := get(t, s2.Admin+"/readyz")
		return r.Status == 503 && strings.Contains(string(r.Body), "bus unreachable")
	}, 30*time.Second, 100*time.Millisecond)
	t.Logf("serve node with the bus down: %s", get(t, s2.Admin+"/readyz").Body)
	assert.Equal(t, 200, get(t, s2.API+"/v1/collections").Status, "the last views are still served")
	for _, i := range []int{2, 0, 1} {
		tr.cluster.Start(i)
	}
	tr.caughtUp(s2) // ready again once the bus is back
	s2.Stop(t)
	for _, i := range []int{0, 2, 1} {
		tr.cluster.Stop(i)
	}
	for _, i := range []int{1, 0, 2} {
		tr.cluster.Start(i)
	}
	s2 = tr.serve("serve-2", dirs["serve-2"])
	ingB = tr.ingest("ingest-b", dirs["ingest-b"])
	s1 = tr.serve("serve-1", dirs["serve-1"])
	ingA = tr.ingest("ingest-a", dirs["ingest-a"])
	tr.tick()
	holder := ingB
	if leaseHolder(t, s1) == "ingest-a" {
		holder = ingA
	}
	require.Eventually(t, func() bool { return post(t, holder.Admin+"/admin/ingest", "").Status == 200 }, 30*time.Second, 200*time.Millisecond)
	tr.caughtUp(s1, s2)
	ids, repeated = tr.ids.reset()
	assert.Zero(t, repeated, "no message id published twice after the restart")
	t.Logf("after the restart: %d message ids published, %d twice", ids, repeated)
	s1.Stop(t)
	s2.Stop(t)
	ingA.Stop(t)
	ingB.Stop(t)

	// Both serve nodes equal a clean replay of the streams.
	fresh := t.TempDir()
	runRole(t, "replay", "--nats", tr.cluster.URL(), "--data-dir", fresh)
	at := time.Now().UTC().Format(time.RFC3339)
	want := strings.TrimSpace(runRole(t, "digest", "--data-dir", fresh, "--at", at))
	for _, name := range []string{"serve-1", "serve-2"} {
		assert.Equal(t, want, strings.TrimSpace(runRole(t, "digest", "--data-dir", dirs[name], "--at", at)), "%s equals a clean replay", name)
	}
}

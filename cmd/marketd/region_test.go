package main

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/config"
	"github.com/marketd/marketd/ingest/sim"
	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/bus"
	"github.com/marketd/marketd/readmodel/bus/bustest"
)

// region is a hub (one NATS server, JetStream domain bustest.HubDomain)
// fed by `marketd ingest`, and a region: a leaf server with its own domain
// behind a link the test cuts, and `marketd serve --hub-domain` nodes on
// it.
type region struct {
	t   *testing.T
	r   *bustest.Region
	sim string
	hub jetstream.JetStream // the hub's streams, asked at the hub
}

func newRegion(t *testing.T) *region {
	r := bustest.MustRegion(t)
	s := sim.New(sim.Options{Seed: 11, Collections: 15, TokensPerCollection: 15, Anchor: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)})
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(func() { srv.Close(); _ = s.Close(context.Background()) })
	return &region{t: t, r: r, sim: srv.URL, hub: bustest.MustConnect(t, r.Hub.ClientURL(), 1)}
}

func (rg *region) common() []string {
	return []string{"--poll-interval", "1h", "--source-timeout", "5s", "--cursor-key", testCursorKey, "--snapshot-every", "0"}
}

func (rg *region) ingest() *Main {
	args := append([]string{"ingest", "--node-id", "ingest", "--nats", rg.r.Hub.ClientURL()}, rg.common()...)
	for _, name := range config.SourceNames {
		args = append(args, "--source-"+name+"-url", rg.sim+"/"+name)
	}
	return MustRunMain(rg.t, args...)
}

func (rg *region) serve(id, dataDir string) *Main {
	return MustRunMain(rg.t, append([]string{"serve", "--node-id", id, "--data-dir", dataDir,
		"--nats", rg.r.Leaf.ClientURL(), "--hub-domain", bustest.HubDomain}, rg.common()...)...)
}

// hubHeads returns the hub streams' last sequences.
func (rg *region) hubHeads() readmodel.Position {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	h, err := bus.Heads(ctx, rg.hub)
	require.NoError(rg.t, err)
	return h
}

// applied returns what a node applied, from its metrics.
func applied(t *testing.T, m *Main) readmodel.Position {
	body := string(get(t, m.Admin+"/metrics").Body)
	return readmodel.Position{
		State: uint64(metric(body, `marketd_projector_applied_sequence{stream="`+bus.StateStream+`"}`)),
		Sales: uint64(metric(body, `marketd_projector_applied_sequence{stream="`+bus.SalesStream+`"}`)),
	}
}

// caughtUp waits until every node applied the hub's heads and is ready.
func (rg *region) caughtUp(nodes ...*Main) {
	rg.t.Helper()
	want := rg.hubHeads()
	for _, m := range nodes {
		require.Eventually(rg.t, func() bool {
			return applied(rg.t, m).Covers(want) && get(rg.t, m.Admin+"/readyz").Status == 200
		}, 60*time.Second, 50*time.Millisecond, "node %s did not catch up with the hub's %+v\n%s", m.Admin, want, m.logs)
	}
}

// cycle moves the market and runs one ingest cycle at the hub.
func (rg *region) cycle(ing *Main) {
	rg.t.Helper()
	require.Equal(rg.t, 200, post(rg.t, rg.sim+"/_sim/tick", "").Status)
	r := post(rg.t, ing.Admin+"/admin/ingest", "")
	require.Equal(rg.t, 200, r.Status, "%s", r.Body)
}

// regionOf returns the "region" of a node's /admin/sources.
func regionOf(t *testing.T, m *Main) map[string]any {
	r := get(t, m.Admin+"/admin/sources")
	require.Equal(t, 200, r.Status, "%s", r.Body)
	return obj(r.JSON["region"])
}

// TestRegionServesCutOffAndCatchesUp is a region (docs/tier.md#regions):
// its serve nodes read the region's mirrors of the hub's streams; with the
// leaf link cut they keep answering every read and stay ready while
// saying how long the region has been cut off; restored, they apply what
// they missed; a node that joins the region restores the region's views
// snapshot; and every node equals a replay of the hub's streams.
func TestRegionServesCutOffAndCatchesUp(t *testing.T) {
	if testing.Short() {
		t.Skip("region test")
	}
	rg := newRegion(t)
	ing := rg.ingest()
	d1 := t.TempDir()
	s1 := rg.serve("region-1", d1)
	rg.caughtUp(s1)
	reg := regionOf(t, s1)
	assert.Equal(t, bustest.HubDomain, reg["hubDomain"])
	assert.Equal(t, true, reg["hubReachable"], "%v", reg)
	for _, st := range arr(reg["streams"]) {
		assert.Zero(t, obj(st)["behind"], "%v", st)
	}
	assert.Equal(t, float64(1), metric(string(get(t, s1.Admin+"/metrics").Body), `marketd_region_hub_reachable{hub_domain="hub"}`))

	// Every read the node answers, and one collection's detail to watch.
	list := get(t, s1.API+"/v1/collections?chain=ethereum&limit=1")
	require.Equal(t, 200, list.Status, "%s", list.Body)
	id := obj(arr(list.JSON["data"])[0])["id"].(string)
	reads := []string{"/v1/collections?limit=5", "/v1/collections/" + id, "/v1/collections/" + id + "/listings", "/v1/collections/" + id + "/events"}

	// Cut the link; the hub moves on.
	rg.r.Link.Cut()
	require.Eventually(t, func() bool { return rg.r.Leaf.NumLeafNodes() == 0 }, 10*time.Second, 10*time.Millisecond)
	before := applied(t, s1)
	rg.cycle(ing)
	missed := rg.hubHeads()
	require.False(t, before.Covers(missed), "the hub published while the region was cut off")

	// Cut off for a while: every read answered, ready, and the node says
	// how long since the region last heard from the hub.
	var age float64
	require.Eventually(t, func() bool {
		for _, p := range reads {
			r := get(t, s1.API+p)
			require.Equal(t, 200, r.Status, "%s while cut off: %s", p, r.Body)
		}
		rz := get(t, s1.Admin+"/readyz")
		require.Equal(t, 200, rz.Status, "ready while cut off: %s", rz.Body)
		body := string(get(t, s1.Admin+"/metrics").Body)
		require.Equal(t, float64(0), metric(body, `marketd_region_hub_reachable{hub_domain="hub"}`))
		age = min(metric(body, `marketd_region_hub_contact_age_seconds{hub_domain="hub",stream="`+bus.StateStream+`"}`),
			metric(body, `marketd_region_hub_contact_age_seconds{hub_domain="hub",stream="`+bus.SalesStream+`"}`))
		return age >= 3
	}, 30*time.Second, 100*time.Millisecond)
	reg = regionOf(t, s1)
	assert.Equal(t, false, reg["hubReachable"], "%v", reg)
	for _, st := range arr(reg["streams"]) {
		assert.GreaterOrEqual(t, obj(st)["sinceContactSeconds"].(float64), 3.0, "%v", st)
	}
	assert.Equal(t, before, applied(t, s1), "nothing reaches the region while cut off")
	t.Logf("cut off for %.1fs: reads 200, readyz 200, /admin/sources region %v", age, reg)

	// Restarted while cut off, the node is ready at once on its views.
	s1.Stop(t)
	s1 = rg.serve("region-1", d1)
	for _, p := range reads {
		assert.Equal(t, 200, get(t, s1.API+p).Status, "%s after a restart while cut off", p)
	}
	assert.Equal(t, before, applied(t, s1))

	// Restored: the mirrors catch up and the node applies what it missed.
	restored := time.Now()
	rg.r.Link.Restore()
	rg.caughtUp(s1)
	t.Logf("caught up %s after the link returned (%d state, %d sales messages missed)",
		time.Since(restored).Round(time.Millisecond), missed.State-before.State, missed.Sales-before.Sales)
	require.Eventually(t, func() bool {
		reg = regionOf(t, s1)
		return reg["hubReachable"] == true
	}, 10*time.Second, 50*time.Millisecond)
	for _, st := range arr(reg["streams"]) {
		assert.Zero(t, obj(st)["behind"], "%v", st)
	}

	// A node that joins the region starts from the region's snapshot.
	r := post(t, s1.Admin+"/admin/snapshot", "")
	require.Equal(t, 200, r.Status, "%s", r.Body)
	rg.cycle(ing)
	d2 := t.TempDir()
	s2 := rg.serve("region-2", d2)
	rg.caughtUp(s1, s2)
	assert.True(t, logged(s2, "views restored from the tier's snapshot"), "region-2 joined by the region's snapshot\n%s", s2.logs)
	s1.Stop(t)
	s2.Stop(t)
	ing.Stop(t)

	// Both equal a replay of the hub's streams.
	fresh := t.TempDir()
	runRole(t, "replay", "--nats", rg.r.Hub.ClientURL(), "--data-dir", fresh)
	at := time.Now().UTC().Format(time.RFC3339)
	want := strings.TrimSpace(runRole(t, "digest", "--data-dir", fresh, "--at", at))
	for name, dir := range map[string]string{"region-1": d1, "region-2": d2} {
		assert.Equal(t, want, strings.TrimSpace(runRole(t, "digest", "--data-dir", dir, "--at", at)), "%s equals a replay of the hub", name)
	}
}

// TestRegionFirstNodeJoinsByTheHubSnapshot: a region without a views
// snapshot of its own (its first node) restores the hub's, read across the
// link through the hub's domain, and continues from the region's mirrors,
// whose sequences are the hub's.
func TestRegionFirstNodeJoinsByTheHubSnapshot(t *testing.T) {
	if testing.Short() {
		t.Skip("region test")
	}
	rg := newRegion(t)
	ing := rg.ingest()
	dh := t.TempDir()
	atHub := MustRunMain(t, append([]string{"serve", "--node-id", "hub-1", "--data-dir", dh, "--nats", rg.r.Hub.ClientURL()}, rg.common()...)...)
	rg.caughtUp(atHub)
	r := post(t, atHub.Admin+"/admin/snapshot", "")
	require.Equal(t, 200, r.Status, "%s", r.Body)
	rg.cycle(ing) // after the snapshot: the region's node applies it from the mirrors

	dr := t.TempDir()
	s1 := rg.serve("region-1", dr)
	rg.caughtUp(atHub, s1)
	assert.True(t, logged(s1, "restoring the hub's, across the link"), "%s", s1.logs)
	assert.True(t, logged(s1, "views restored from the tier's snapshot"), "%s", s1.logs)
	s1.Stop(t)
	atHub.Stop(t)
	ing.Stop(t)
	at := time.Now().UTC().Format(time.RFC3339)
	assert.Equal(t, strings.TrimSpace(runRole(t, "digest", "--data-dir", dh, "--at", at)),
		strings.TrimSpace(runRole(t, "digest", "--data-dir", dr, "--at", at)), "the region's node equals the hub's")
}

// logged reports whether a log line of m contains s.
func logged(m *Main, s string) bool {
	for _, l := range m.logs.Lines() {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}

// TestRegionsOfAReplicatedHub: a hub of three servers (streams at R3) and
// two regions, each a leaf server linked to every hub server, with a
// serve node each. One region is cut off for two cycles while the other
// keeps up; a hub server is stopped mid-cycle; the cut region catches up
// once its links return, and every node equals a replay of the hub.
func TestRegionsOfAReplicatedHub(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	hub := bustest.MustHub(t, 3)
	hubJS := bustest.MustConnect(t, hub.URL(), 3)
	eu, ap := hub.MustLeaf(t, "eu"), hub.MustLeaf(t, "ap")
	s := sim.New(sim.Options{Seed: 13, Collections: 15, TokensPerCollection: 15, Anchor: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)})
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(func() { srv.Close(); _ = s.Close(context.Background()) })
	common := []string{"--poll-interval", "1h", "--source-timeout", "5s", "--cursor-key", testCursorKey, "--snapshot-every", "0", "--stream-replicas", "3"}
	args := append([]string{"ingest", "--node-id", "ingest", "--nats", hub.URL()}, common...)
	for _, name := range config.SourceNames {
		args = append(args, "--source-"+name+"-url", srv.URL+"/"+name)
	}
	args = append(args, "--source-analytics-timeout", "3s")
	ing := MustRunMain(t, args...)
	dirs := map[string]string{"eu-1": t.TempDir(), "ap-1": t.TempDir()}
	serve := func(id string, leaf *bustest.Leaf) *Main {
		return MustRunMain(t, append([]string{"serve", "--node-id", id, "--data-dir", dirs[id], "--nats", leaf.URL(),
			"--hub-domain", bustest.HubDomain}, common[:len(common)-2]...)...) // the region's mirrors at R1: one leaf server
	}
	eu1, ap1 := serve("eu-1", eu), serve("ap-1", ap)
	heads := func() readmodel.Position {
		var h readmodel.Position
		require.Eventually(t, func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			var err error
			h, err = bus.Heads(ctx, hubJS)
			return err == nil
		}, 60*time.Second, 100*time.Millisecond)
		return h
	}
	caughtUp := func(nodes ...*Main) {
		t.Helper()
		want := heads()
		for _, m := range nodes {
			require.Eventually(t, func() bool {
				return applied(t, m).Covers(want) && get(t, m.Admin+"/readyz").Status == 200
			}, 90*time.Second, 50*time.Millisecond, "node %s did not catch up with the hub's %+v\n%s", m.Admin, want, m.logs)
		}
	}
	cycle := func() {
		t.Helper()
		require.Equal(t, 200, post(t, srv.URL+"/_sim/tick", "").Status)
		r := post(t, ing.Admin+"/admin/ingest", "")
		require.Equal(t, 200, r.Status, "%s", r.Body)
	}
	caughtUp(eu1, ap1)

	// eu is cut off for two cycles; ap keeps up; eu keeps serving.
	eu.Cut()
	require.Eventually(t, func() bool { return !eu.Linked() }, 10*time.Second, 10*time.Millisecond)
	before := applied(t, eu1)
	cycle()
	cycle()
	caughtUp(ap1)
	require.Eventually(t, func() bool {
		r := get(t, eu1.API+"/v1/collections?limit=5")
		require.Equal(t, 200, r.Status, "%s", r.Body)
		rz := get(t, eu1.Admin+"/readyz")
		require.Equal(t, 200, rz.Status, "%s", rz.Body)
		reg := regionOf(t, eu1)
		return reg["hubReachable"] == false && obj(arr(reg["streams"])[0])["sinceContactSeconds"].(float64) >= 2
	}, 30*time.Second, 100*time.Millisecond)
	assert.Equal(t, before, applied(t, eu1), "nothing reaches a cut-off region")

	// A hub server stopped mid-cycle (analytics held by a timeout fault so
	// the cycle is still running): the cycle completes, ap keeps up.
	require.Equal(t, 200, post(t, srv.URL+"/_sim/tick", "").Status)
	require.Equal(t, 200, post(t, srv.URL+"/_sim/faults", `{"source":"analytics","mode":"timeout"}`).Status)
	was := heads()
	done := make(chan resp, 1)
	go func() { done <- post(t, ing.Admin+"/admin/ingest", "") }()
	require.Eventually(t, func() bool { return heads().State > was.State }, 30*time.Second, 20*time.Millisecond)
	hub.Stop(1)
	r := <-done
	require.Equal(t, 200, r.Status, "the cycle completes with a hub server stopped: %s", r.Body)
	require.Equal(t, 200, post(t, srv.URL+"/_sim/faults/reset", "").Status)
	caughtUp(ap1)
	hub.Start(1)

	// eu's links return: it applies what it missed.
	restored := time.Now()
	eu.Restore()
	caughtUp(eu1, ap1)
	t.Logf("eu caught up %s after its links returned", time.Since(restored).Round(time.Millisecond))
	eu1.Stop(t)
	ap1.Stop(t)
	ing.Stop(t)

	fresh := t.TempDir()
	runRole(t, "replay", "--nats", hub.URL(), "--data-dir", fresh)
	at := time.Now().UTC().Format(time.RFC3339)
	want := strings.TrimSpace(runRole(t, "digest", "--data-dir", fresh, "--at", at))
	for name, dir := range dirs {
		assert.Equal(t, want, strings.TrimSpace(runRole(t, "digest", "--data-dir", dir, "--at", at)), "%s equals a replay of the hub", name)
	}
}

// TestNewRegionCutOffFromTheStartIsNotReady: a region whose first node
// starts while the link is down has nothing to serve; the node says so on
// /readyz, and is ready once the link lets the mirrors fill.
func TestNewRegionCutOffFromTheStartIsNotReady(t *testing.T) {
	if testing.Short() {
		t.Skip("region test")
	}
	was := bus.MirrorCatchUpWait
	bus.MirrorCatchUpWait = time.Second // the node waits this long for new mirrors to fill
	t.Cleanup(func() { bus.MirrorCatchUpWait = was })
	rg := newRegion(t)
	rg.ingest()
	rg.r.Link.Cut()
	require.Eventually(t, func() bool { return rg.r.Leaf.NumLeafNodes() == 0 }, 10*time.Second, 10*time.Millisecond)
	s1 := StartMain(t, append([]string{"serve", "--node-id", "region-1", "--nats", rg.r.Leaf.ClientURL(), "--hub-domain", bustest.HubDomain}, rg.common()...)...)
	rz := get(t, s1.Admin+"/readyz")
	assert.Equal(t, 503, rz.Status)
	assert.Contains(t, string(rz.Body), "have not reached the hub", "%s", rz.Body)
	rg.r.Link.Restore()
	rg.caughtUp(s1)
}

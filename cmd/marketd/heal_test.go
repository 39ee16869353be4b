package main

import (
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/internal/damage"
	"github.com/marketd/marketd/node"
)

// TestDamagedViewsHeal runs the rows of docs/operating.md's Damaged storage
// table: a node's view store is damaged while the node is stopped (a table
// removed or truncated, the
// MANIFEST emptied, the value log truncated or garbled, and a table
// garbled, which reads as missing keys until the tables are verified); the
// node starts anyway, rebuilds its views from the streams, counts the
// rebuild and becomes ready, and its views then equal a replay of the
// same streams.
func TestDamagedViewsHeal(t *testing.T) {
	built := t.TempDir()
	m := MustRunMain(t, "--data-dir", built, "--sim-seed", e2eSeed, "--sim-collections", "12", "--sim-tokens", "10",
		"--sim-anchor", "2026-11-01T00:00:00Z", "--cursor-key", testCursorKey)
	m.Stop(t)

	for _, c := range damage.Cases {
		t.Run(c.Name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, exec.Command("cp", "-a", built+"/.", dir).Run())
			require.NoError(t, c.Do(node.ViewsDir(dir)))

			m := MustRunMain(t, "--data-dir", dir, "--sim-seed", e2eSeed, "--sim-collections", "12", "--sim-tokens", "10",
				"--sim-anchor", "2026-11-01T00:00:00Z", "--cursor-key", testCursorKey)
			if len(rebuilds(t, m.Admin)) == 0 {
				// Value-log damage is found on the first read of a damaged
				// value (docs/operating.md), which the node's start makes
				// only when its first cycle happens to touch one. A full
				// cycle reads every collection's inputs and views again,
				// and the index page is read by the API.
				t.Log("not found at start: a full cycle and a read")
				post(t, m.Admin+"/admin/ingest?full=true", "")
				r, err := http.Get(m.API + "/v1/collections")
				require.NoError(t, err)
				r.Body.Close()
				m.MustWaitReady(t)
			}
			by := rebuilds(t, m.Admin)
			n := 0
			for _, v := range by {
				n += v
			}
			assert.Equal(t, 1, n, "one rebuild counted: %v", by)
			t.Logf("rebuilds by reason: %v", by)
			assert.Equal(t, map[string]string{"apply": "0", "apply in memory": "0", "write": "0"}, rebuildPhase(t, m.Admin), "no rebuild under way")
			r, err := http.Get(m.API + "/v1/collections")
			require.NoError(t, err)
			r.Body.Close()
			assert.Equal(t, 200, r.StatusCode, "serving again")
			m.Stop(t)
			_, err = os.Stat(node.ViewsDir(dir) + ".damaged")
			assert.ErrorIs(t, err, os.ErrNotExist, "the damaged views are removed")
			assertEqualsReplay(t, dir)
		})
	}
}

var rebuildsLine = regexp.MustCompile(`(?m)^marketd_views_rebuilds_total\{reason="([a-z]+)"\} (\d+)$`)

// rebuilds is marketd_views_rebuilds_total by reason (those above 0).
func rebuilds(t *testing.T, admin string) map[string]int {
	t.Helper()
	r, err := http.Get(admin + "/metrics")
	require.NoError(t, err)
	defer r.Body.Close()
	b, err := io.ReadAll(r.Body)
	require.NoError(t, err)
	by := map[string]int{}
	for _, m := range rebuildsLine.FindAllStringSubmatch(string(b), -1) {
		if v, _ := strconv.Atoi(m[2]); v > 0 {
			by[m[1]] = v
		}
	}
	return by
}

var phaseLine = regexp.MustCompile(`(?m)^marketd_views_rebuild_phase\{phase="([a-z ]+)"\} (\S+)$`)

// rebuildPhase is marketd_views_rebuild_phase by phase.
func rebuildPhase(t *testing.T, admin string) map[string]string {
	t.Helper()
	r, err := http.Get(admin + "/metrics")
	require.NoError(t, err)
	defer r.Body.Close()
	b, err := io.ReadAll(r.Body)
	require.NoError(t, err)
	by := map[string]string{}
	for _, m := range phaseLine.FindAllStringSubmatch(string(b), -1) {
		by[m[1]] = m[2]
	}
	return by
}

// TestViewsDamagedWhileServingHeal garbles the value log of a node that is
// serving (in place: Badger reads it through a shared memory map, so the
// node sees the bytes change under it): the next read of a view fails
// (its checksum, or its decoding), the node stops saying it is ready,
// rebuilds its views from the streams and serves again, equal to a replay.
func TestViewsDamagedWhileServingHeal(t *testing.T) {
	dir := t.TempDir()
	m := MustRunMain(t, "--data-dir", dir, "--sim-seed", e2eSeed, "--sim-collections", "12", "--sim-tokens", "10",
		"--sim-anchor", "2026-11-01T00:00:00Z", "--cursor-key", testCursorKey)
	// A collection's listing snapshot: larger than the value threshold
	// (the value log holds it), not read before the damage (no cache
	// holds it), and on a route where SPEC allows a 502.
	list := get(t, m.API+"/v1/collections?limit=1")
	require.Equal(t, 200, list.Status, "%s", list.Body)
	listings := m.API + "/v1/collections/" + obj(arr(list.JSON["data"])[0])["id"].(string) + "/listings"
	garbleWritten(t, node.ViewsDir(dir))

	r, err := http.Get(listings)
	require.NoError(t, err)
	r.Body.Close()
	assert.Equal(t, 502, r.StatusCode, "a damaged read answers SPEC's 502, not bytes it cannot vouch for")
	m.MustWaitReady(t)
	by := rebuilds(t, m.Admin)
	assert.Len(t, by, 1, "one rebuild: %v", by)
	for reason, n := range by {
		assert.Equal(t, 1, n, reason)
		assert.Contains(t, []string{"read", "decode"}, reason, "found on a read")
	}
	r, err = http.Get(listings)
	require.NoError(t, err)
	r.Body.Close()
	assert.Equal(t, 200, r.StatusCode, "serving again")
	m.Stop(t)
	assertEqualsReplay(t, dir)
}

// garbleWritten flips the written bytes (past the header) of every value
// log in dir, in place: the file keeps its size and inode.
func garbleWritten(t *testing.T, dir string) {
	t.Helper()
	logs, err := filepath.Glob(filepath.Join(dir, "*.vlog"))
	require.NoError(t, err)
	require.NotEmpty(t, logs)
	for _, name := range logs {
		f, err := os.OpenFile(name, os.O_RDWR, 0)
		require.NoError(t, err)
		b := make([]byte, 16<<20)
		n, _ := f.ReadAt(b, 0)
		for i := 20; i < n; i++ {
			if b[i] != 0 {
				b[i] ^= 0xa5
			}
		}
		_, err = f.WriteAt(b[20:n], 20)
		require.NoError(t, err)
		require.NoError(t, f.Close())
	}
}

// assertEqualsReplay compares the digest of the stopped node's views in
// dir with that of a replay of its streams (into a copy), at one instant.
func assertEqualsReplay(t *testing.T, dir string) {
	t.Helper()
	replayed := t.TempDir()
	require.NoError(t, exec.Command("cp", "-a", dir+"/.", replayed).Run())
	require.NoError(t, os.RemoveAll(node.ViewsDir(replayed)))
	runRole(t, "replay", "--data-dir", replayed)
	at := time.Now().Add(time.Minute).UTC().Format(time.RFC3339)
	assert.Equal(t, strings.TrimSpace(runRole(t, "digest", "--data-dir", replayed, "--at", at)),
		strings.TrimSpace(runRole(t, "digest", "--data-dir", dir, "--at", at)), "healed views == a replay of the same streams")
}

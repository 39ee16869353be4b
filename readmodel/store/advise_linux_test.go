package store

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAdviseFindsTheValueLog: advice reaches the mapped value-log files of
// this store, and only those.
func TestAdviseFindsTheValueLog(t *testing.T) {
	s := mustOpenSmallLog(t)
	rewriteViews(t, s, 2)
	other := mustOpenSmallLog(t)
	n := s.adviseValueLog(adviseRandom)
	assert.Positive(t, n, "the store's value-log files are mapped")
	assert.Equal(t, n, s.adviseValueLog(adviseNormal))
	assert.Less(t, other.adviseValueLog(adviseNormal), n, "another store's files are not this one's")
}

// valueLogReadHints returns, for each mapped value-log file of the store in
// dir, whether its mapping carries the random-read hint ("rr" in the
// VmFlags of /proc/self/smaps).
func valueLogReadHints(t *testing.T, dir string) map[string]bool {
	t.Helper()
	abs, err := filepath.Abs(dir)
	require.NoError(t, err)
	f, err := os.Open("/proc/self/smaps")
	require.NoError(t, err)
	defer f.Close()
	hints := map[string]bool{}
	file := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		switch {
		case len(fields) >= 6 && strings.Contains(fields[0], "-"):
			file = ""
			if strings.HasSuffix(fields[5], ".vlog") && filepath.Dir(fields[5]) == abs {
				file = filepath.Base(fields[5])
			}
		case file != "" && len(fields) > 0 && fields[0] == "VmFlags:":
			hints[file] = hints[file] || slices.Contains(fields[1:], "rr")
		}
	}
	require.NoError(t, sc.Err())
	return hints
}

// TestValueLogIsReadAtRandom: the value log is read at random (a value
// per read, wherever its key points), and with the kernel's default
// read-around each fault on its mapping reads up to the device's
// read-ahead (8 MiB on this kind of machine) into the page cache. The
// store advises random reads at Open and, for the files it opens later,
// at each round of its background loop. The test runs that round itself
// (collectGuarded, what the loop calls on each tick): a round advises the
// value log normal while it rewrites, so a loop ticking beside the checks
// could be caught inside one.
func TestValueLogIsReadAtRandom(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(context.Background(), dir, Options{ValueLogFileSize: 1 << 20, MemTableSize: 256 << 10, GCInterval: time.Hour})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close(context.Background()) })

	opened := valueLogReadHints(t, dir)
	require.NotEmpty(t, opened, "Open maps the value log")
	for file, random := range opened {
		assert.True(t, random, "%s after Open", file)
	}

	rewriteViews(t, s, 3) // about 3 MiB: new value-log files
	require.Greater(t, len(valueLogReadHints(t, dir)), len(opened), "the writes opened new value-log files")
	s.collectGuarded()
	for file, random := range valueLogReadHints(t, dir) {
		assert.True(t, random, "%s after a round of the loop", file)
	}
}

// TestReadAheadSpan: while a ReadAhead span is open the value log carries
// no random-read hint, the files opened meanwhile included and through a
// GC round (which otherwise advises random again); spans nest, and the
// hint is back on every file when the last ends.
func TestReadAheadSpan(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(context.Background(), dir, Options{ValueLogFileSize: 1 << 20, MemTableSize: 256 << 10, GCInterval: time.Hour})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	hinted := func(want bool, msg string) {
		t.Helper()
		hints := valueLogReadHints(t, dir)
		require.NotEmpty(t, hints)
		for file, random := range hints {
			assert.Equal(t, want, random, "%s: %s", file, msg)
		}
	}
	hinted(true, "after Open")

	end := s.ReadAhead()
	hinted(false, "in a span")
	before := len(valueLogReadHints(t, dir))
	rewriteViews(t, s, 3)
	require.Greater(t, len(valueLogReadHints(t, dir)), before, "the writes opened new value-log files")
	s.collect(nil, 1) // a GC round advises the files as they stay
	hinted(false, "in a span, after a GC round")

	endInner := s.ReadAhead()
	end()
	hinted(false, "an inner span still open")
	endInner()
	hinted(true, "after the last span")
}

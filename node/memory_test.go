package node

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/marketd/marketd/config"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMemoryLimit: --memory-limit wins, GOMEMLIMIT is left to the runtime,
// and auto gives the runtime a third of the memory cgroup's limit to serve
// and half of it to build the views.
func TestMemoryLimit(t *testing.T) {
	cgroupRoot := mustCgroupRoot(t)
	tests := []struct {
		name         string
		args         []string
		env          map[string]string
		root         string
		build, serve int64
	}{
		{"auto in a 3 GiB cgroup", nil, nil, cgroupRoot, 1536 << 20, 1 << 30},
		{"auto outside any cgroup", nil, nil, t.TempDir(), 0, 0},
		{"auto leaves GOMEMLIMIT to the runtime", nil, map[string]string{"GOMEMLIMIT": "2GiB"}, cgroupRoot, 0, 0},
		{"an explicit size wins over the cgroup", []string{"--memory-limit", "1536MiB"}, nil, cgroupRoot, 1536 << 20, 1536 << 20},
		{"an explicit size wins over GOMEMLIMIT", nil, map[string]string{"MARKETD_MEMORY_LIMIT": "512MiB", "GOMEMLIMIT": "2GiB"}, cgroupRoot, 512 << 20, 512 << 20},
		{"off", []string{"--memory-limit", "off"}, nil, cgroupRoot, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := config.Load(tt.args, func(k string) string { return tt.env[k] }, nil)
			require.NoError(t, err)
			got, err := memoryLimit(cfg, tt.root)
			require.NoError(t, err)
			assert.Equal(t, tt.build, got.Build, got.From)
			assert.Equal(t, tt.serve, got.Serve, got.From)
			assert.NotEmpty(t, got.From)
		})
	}
}

// TestMemoryHold: auto raises the limit to the building share while
// anything holds it (the views being built, an ingest cycle) and lowers it
// to the serving share when the last holder lets go, whatever the order; a
// limit of the operator's own stays as it is throughout.
func TestMemoryHold(t *testing.T) {
	cgroupRoot := mustCgroupRoot(t)
	const build, serve = 1536 << 20, 1 << 30
	tests := []struct {
		name string
		args []string
		want []int64 // the limits set, in order, by the steps below
	}{
		{"auto: half while held, a third once let go", nil, []int64{build, serve, build, serve}},
		{"an explicit size is left alone", []string{"--memory-limit", "1GiB"}, nil},
		{"off is left alone", []string{"--memory-limit", "off"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := config.Load(tt.args, func(string) string { return "" }, nil)
			require.NoError(t, err)
			var set []int64
			m := NewMemory(cfg, cgroupRoot, func(n int64) int64 { set = append(set, n); return n }, zerolog.Nop())
			built := m.Hold("the views are built")
			cycle := m.Hold("an ingest cycle runs") // the first cycle, inside the build
			built()
			built() // a second call changes nothing
			assert.Len(t, set, min(len(tt.want), 1), "still held by the cycle")
			cycle()
			m.Hold("an ingest cycle runs")()
			assert.Equal(t, tt.want, set)
		})
	}
}

// mustCgroupRoot returns a root holding a process in a 3 GiB cgroup v2 group.
func mustCgroupRoot(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for p, content := range map[string]string{
		"proc/self/cgroup":                 "0::/marketd\n",
		"sys/fs/cgroup/memory.max":         "max\n",
		"sys/fs/cgroup/marketd/memory.max": "3221225472\n",
	} {
		full := filepath.Join(root, p)
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(content), 0o644))
	}
	return root
}

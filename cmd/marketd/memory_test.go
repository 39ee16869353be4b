package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/marketd/marketd/config"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMemoryLimit: --memory-limit wins, GOMEMLIMIT is left to the runtime,
// and auto gives the runtime a third of the memory cgroup's limit.
func TestMemoryLimit(t *testing.T) {
	cgroupRoot := t.TempDir()
	for p, content := range map[string]string{
		"proc/self/cgroup":                 "0::/marketd\n",
		"sys/fs/cgroup/memory.max":         "max\n",
		"sys/fs/cgroup/marketd/memory.max": "3221225472\n",
	} {
		full := filepath.Join(cgroupRoot, p)
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(content), 0o644))
	}
	tests := []struct {
		name string
		args []string
		env  map[string]string
		root string
		want int64
	}{
		{"auto in a 3 GiB cgroup", nil, nil, cgroupRoot, 1 << 30},
		{"auto outside any cgroup", nil, nil, t.TempDir(), 0},
		{"auto leaves GOMEMLIMIT to the runtime", nil, map[string]string{"GOMEMLIMIT": "2GiB"}, cgroupRoot, 0},
		{"an explicit size wins over the cgroup", []string{"--memory-limit", "1536MiB"}, nil, cgroupRoot, 1536 << 20},
		{"an explicit size wins over GOMEMLIMIT", nil, map[string]string{"MARKETD_MEMORY_LIMIT": "512MiB", "GOMEMLIMIT": "2GiB"}, cgroupRoot, 512 << 20},
		{"off", []string{"--memory-limit", "off"}, nil, cgroupRoot, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := config.Load(tt.args, func(k string) string { return tt.env[k] }, nil)
			require.NoError(t, err)
			got, from, err := memoryLimit(cfg, tt.root)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got, from)
			assert.NotEmpty(t, from)
		})
	}
}

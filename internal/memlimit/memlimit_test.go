package memlimit_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/marketd/marketd/internal/memlimit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fsRoot writes files (path relative to the root → content) under a new
// directory and returns it.
func fsRoot(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, content := range files {
		full := filepath.Join(root, p)
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(content), 0o644))
	}
	return root
}

func TestFind(t *testing.T) {
	const v1Self = "9:name=systemd:/\n4:memory:/process_api/abc/bench-7\n1:cpu:/\n0::/\n"
	const noLimitV1 = "9223372036854771712\n"
	tests := []struct {
		name    string
		files   map[string]string
		want    int64
		wantDir string // relative to the root; "" when no limit
		v1      bool
		wantErr bool
	}{
		{"cgroup v1, the group's own limit", map[string]string{
			"proc/self/cgroup":                                                   v1Self,
			"sys/fs/cgroup/memory/memory.limit_in_bytes":                         noLimitV1,
			"sys/fs/cgroup/memory/process_api/memory.limit_in_bytes":             noLimitV1,
			"sys/fs/cgroup/memory/process_api/abc/memory.limit_in_bytes":         "25769803776\n",
			"sys/fs/cgroup/memory/process_api/abc/bench-7/memory.limit_in_bytes": "3221225472\n",
		}, 3 << 30, "sys/fs/cgroup/memory/process_api/abc/bench-7", true, false},
		{"cgroup v1, an ancestor's limit is smaller", map[string]string{
			"proc/self/cgroup": v1Self,
			"sys/fs/cgroup/memory/process_api/abc/memory.limit_in_bytes":         "1073741824\n",
			"sys/fs/cgroup/memory/process_api/abc/bench-7/memory.limit_in_bytes": "3221225472\n",
		}, 1 << 30, "sys/fs/cgroup/memory/process_api/abc", true, false},
		{"cgroup v1 without a limit", map[string]string{
			"proc/self/cgroup":                                                   v1Self,
			"sys/fs/cgroup/memory/memory.limit_in_bytes":                         noLimitV1,
			"sys/fs/cgroup/memory/process_api/abc/bench-7/memory.limit_in_bytes": noLimitV1,
		}, 0, "", true, false},
		{"cgroup v2, memory.max", map[string]string{
			"proc/self/cgroup":                                      "0::/system.slice/marketd.service\n",
			"sys/fs/cgroup/system.slice/memory.max":                 "max\n",
			"sys/fs/cgroup/system.slice/marketd.service/memory.max": "2147483648\n",
		}, 2 << 30, "sys/fs/cgroup/system.slice/marketd.service", false, false},
		{"cgroup v2, max all the way up", map[string]string{
			"proc/self/cgroup": "0::/system.slice/marketd.service\n",
			"sys/fs/cgroup/system.slice/marketd.service/memory.max": "max\n",
		}, 0, "", false, false},
		{"cgroup v2 in a namespace: the root group", map[string]string{
			"proc/self/cgroup":         "0::/\n",
			"sys/fs/cgroup/memory.max": "4294967296\n",
		}, 4 << 30, "sys/fs/cgroup", false, false},
		{"no cgroups at all", map[string]string{}, 0, "", false, false},
		{"malformed limit", map[string]string{
			"proc/self/cgroup":         "0::/\n",
			"sys/fs/cgroup/memory.max": "lots\n",
		}, 0, "", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := fsRoot(t, tt.files)
			got, err := memlimit.Find(root)
			if tt.wantErr {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got.Limit)
			if tt.wantDir == "" {
				assert.Empty(t, got.Dir)
			} else {
				assert.Equal(t, filepath.Join(root, tt.wantDir), got.Dir)
			}
			if tt.want > 0 {
				assert.Equal(t, tt.v1, got.V1)
			}
		})
	}
}

func TestSelfCgroup(t *testing.T) {
	tests := []struct {
		name, text, unified, mem string
	}{
		{name: "hybrid v1 host", text: "9:name=systemd:/\n4:memory:/process_api/abc\n3:cpuset:/\n0::/\n", unified: "/", mem: "/process_api/abc"},
		{name: "v2 only", text: "0::/user.slice/session-1.scope\n", unified: "/user.slice/session-1.scope"},
		{name: "joined controllers", text: "5:cpu,memory:/g\n", mem: "/g"},
		{name: "nothing", text: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			u, m := memlimit.SelfCgroup(tc.text)
			assert.Equal(t, tc.unified, u)
			assert.Equal(t, tc.mem, m)
		})
	}
}

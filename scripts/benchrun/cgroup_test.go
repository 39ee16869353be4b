package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseSize(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    int64
		wantErr bool
	}{
		{name: "gigabytes", in: "3G", want: 3 << 30},
		{name: "systemd style", in: "512MiB", want: 512 << 20},
		{name: "fraction", in: "1.5G", want: 3 << 29},
		{name: "bytes", in: "1048576", want: 1 << 20},
		{name: "lower case", in: "2g", want: 2 << 30},
		{name: "zero is none", in: "0", want: 0},
		{name: "none", in: "none", want: 0},
		{name: "empty", in: "", want: 0},
		{name: "garbage", in: "lots", wantErr: true},
		{name: "negative", in: "-1G", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseSize(tc.in)
			if tc.wantErr {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestFmtSize(t *testing.T) {
	assert.Equal(t, "3 GiB", fmtSize(3<<30))
	assert.Equal(t, "1536 MiB", fmtSize(3<<29))
}

func TestCgroupMounts(t *testing.T) {
	text := `30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
31 30 0:28 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
34 30 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`
	v2, v1 := cgroupMounts(text)
	assert.Equal(t, "/sys/fs/cgroup/unified", v2)
	assert.Equal(t, "/sys/fs/cgroup/memory", v1)
	v2, v1 = cgroupMounts("25 1 0:23 / /sys/fs/cgroup rw,nosuid shared:9 - cgroup2 cgroup2 rw,nsdelegate\n")
	assert.Equal(t, "/sys/fs/cgroup", v2, "optional fields before the separator")
	assert.Equal(t, "", v1)
}

// TestCgroupStat reads a group's files as the kernel lays them out, for
// both versions, from a directory standing in for the group.
func TestCgroupStat(t *testing.T) {
	write := func(t *testing.T, dir string, files map[string]string) {
		for name, v := range files {
			require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(v), 0o644))
		}
	}
	t.Run("v1", func(t *testing.T) {
		dir := t.TempDir()
		write(t, dir, map[string]string{
			"memory.usage_in_bytes":     "3000000000\n",
			"memory.max_usage_in_bytes": "3221225472\n",
			"memory.stat":               "cache 2000000000\nrss 900000000\npgmajfault 7\ntotal_pgmajfault 74000\n",
			"memory.oom_control":        "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n",
			"memory.failcnt":            "1234\n",
		})
		g := &memCgroup{Mechanism: mechV1, Dir: dir, v1: true}
		st, err := g.stat()
		require.NoError(t, err)
		assert.Equal(t, CgroupStat{Usage: 3000000000, Anon: 900000000, File: 2000000000, MajFaults: 74000, OOMKills: 1, LimitHits: 1234}, st)
		assert.Equal(t, int64(3<<30), g.peak())
	})
	t.Run("v2", func(t *testing.T) {
		dir := t.TempDir()
		write(t, dir, map[string]string{
			"memory.current": "2000\n",
			"memory.peak":    "4000\n",
			"memory.stat":    "anon 1500\nfile 500\npgmajfault 3\n",
			"memory.events":  "low 0\nhigh 0\nmax 9\noom 1\noom_kill 0\n",
		})
		g := &memCgroup{Mechanism: mechV2, Dir: dir}
		st, err := g.stat()
		require.NoError(t, err)
		assert.Equal(t, CgroupStat{Usage: 2000, Anon: 1500, File: 500, MajFaults: 3, LimitHits: 9}, st)
		assert.Equal(t, int64(4000), g.peak())
	})
	t.Run("no group", func(t *testing.T) {
		var g *memCgroup
		_, err := g.stat()
		assert.Error(t, err)
		assert.Zero(t, g.peak())
		g.remove() // a nil group is a no-op
	})
}

func TestWrap(t *testing.T) {
	argv := []string{"taskset", "-c", "0-1", "marketd", "all"}
	var none *memCgroup
	assert.Equal(t, argv, none.wrap(argv), "no group: unchanged")
	v1 := &memCgroup{Mechanism: mechV1, Dir: "/sys/fs/cgroup/memory/g", v1: true}
	assert.Equal(t, append([]string{"sh", "-c", `echo $$ > "$0" && exec "$@"`, "/sys/fs/cgroup/memory/g/cgroup.procs"}, argv...), v1.wrap(argv))
	sd := &memCgroup{Mechanism: mechSystemd, Limit: 3 << 30, unit: "b.scope"}
	assert.Equal(t, []string{"systemd-run", "--scope", "--quiet", "--unit", "b.scope", "-p", "MemoryMax=3221225472", "-p", "MemorySwapMax=0"}, sd.wrap(argv)[:9])
}

// TestWrapMovesTheProcess runs the wrapper's shell against a file standing
// in for cgroup.procs: the pid written is the program's own (exec).
func TestWrapMovesTheProcess(t *testing.T) {
	dir := t.TempDir()
	g := &memCgroup{Mechanism: mechV1, Dir: dir, v1: true}
	argv := g.wrap([]string{"sh", "-c", "echo $$"})
	out, _, err := runCmd(t.Context(), 10*time.Second, "", argv...)
	require.NoError(t, err)
	procs, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	require.NoError(t, err)
	assert.Equal(t, string(procs), out, "the pid moved into the group is the one that runs the program")
}

func TestParseStatMajflt(t *testing.T) {
	n, err := parseStatMajflt("4242 (mark etd) (x) S 1 4242 4242 0 -1 4194560 100 0 74000 0 1500 250 0 0 20 0 9 0 100 0 0")
	require.NoError(t, err)
	assert.Equal(t, int64(74000), n)
	_, err = parseStatMajflt("4242 (x) S 1 2")
	assert.Error(t, err)
}

func TestParseListen(t *testing.T) {
	text := `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 111 1 0000000000000000 100 0 0 10 0
   1: 0100007F:107E 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 222 1 0000000000000000 100 0 0 10 0
   2: 0100007F:C350 0100007F:1F90 01 00000000:00000000 00:00000000 00000000     0        0 333 1 0000000000000000 20 4 30 10 -1
   3: 0100007F:2710 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 444 1 0000000000000000 100 0 0 10 0
`
	got := parseListen(text, map[string]bool{"111": true, "222": true, "333": true})
	assert.Equal(t, []int{8080, 4222}, got, "listening sockets of the process only; 333 is a connection, 444 another process's")
}

func TestNatsPortOfThisProcess(t *testing.T) {
	known := listenOn(t)
	nats := listenOn(t)
	url, err := natsPort(os.Getpid(), "http://"+known)
	require.NoError(t, err)
	_, port, _ := strings.Cut(nats, ":")
	assert.Equal(t, "nats://127.0.0.1:"+port, url)
	_, err = natsPort(os.Getpid())
	assert.Error(t, err, "two unknown listeners: ambiguous")
}

func listenOn(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().String()
}

func TestDiskUsage(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a"), make([]byte, 10000), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sub", "b"), make([]byte, 5000), 0o644))
	f, err := os.Create(filepath.Join(dir, "sparse"))
	require.NoError(t, err)
	require.NoError(t, f.Truncate(1<<30)) // apparent 1 GiB, nothing allocated
	require.NoError(t, f.Close())
	u, err := diskUsage(dir)
	require.NoError(t, err)
	assert.Equal(t, 3, u.Files)
	assert.Equal(t, int64(15000+1<<30), u.Apparent)
	assert.Less(t, u.OnDisk, int64(1<<20), "the sparse file takes no blocks")
	assert.GreaterOrEqual(t, u.OnDisk, int64(15000))
	assert.Equal(t, u.Apparent, u.Max())
	_, err = diskUsage(filepath.Join(dir, "missing"))
	assert.Error(t, err)
}

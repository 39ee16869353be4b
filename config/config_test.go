package config_test

import (
	"errors"
	"flag"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/marketd/marketd/config"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestLoadDefaultsMatchDesign(t *testing.T) {
	c, err := config.Load(nil, env(nil), nil)
	require.NoError(t, err)
	assert.Equal(t, ":8080", c.HTTPAddr)
	assert.Equal(t, "127.0.0.1:8081", c.AdminAddr)
	assert.Equal(t, "127.0.0.1:8090", c.SimAddr)
	assert.Equal(t, "./data", c.DataDir)
	assert.Equal(t, "", c.NatsURL)
	assert.Equal(t, 2*time.Minute, c.PollInterval)
	assert.Equal(t, time.Duration(0), c.SimTick)
	assert.True(t, c.SimAnchor.IsZero(), "the simulator anchors its market at start")
	assert.Equal(t, 120, c.RateList)
	assert.Equal(t, 300, c.RateItem)
	assert.Equal(t, "", c.CursorKey)
	assert.Empty(t, c.TrustedProxies)
	assert.Equal(t, 0.25, c.ViewsGCShare)
	assert.Equal(t, 30*time.Minute, c.SnapshotEvery)
	assert.Equal(t, "snapshot", c.Join)
	assert.Equal(t, config.MemoryLimitAuto, c.MemoryLimit)
	assert.Len(t, c.Sources, 7)
	for name, s := range c.Sources {
		assert.Equal(t, 2*time.Minute, s.Interval, name)
		assert.Equal(t, 10*time.Second, s.Timeout, name)
	}
}

func TestLoadPrecedence(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want func(t *testing.T, c config.Config)
	}{
		{"env over default", nil, map[string]string{"MARKETD_HTTP_ADDR": ":9000", "MARKETD_RATE_LIST": "7"},
			func(t *testing.T, c config.Config) {
				assert.Equal(t, ":9000", c.HTTPAddr)
				assert.Equal(t, 7, c.RateList)
			}},
		{"flag over env", []string{"--http-addr", ":9100"}, map[string]string{"MARKETD_HTTP_ADDR": ":9000"},
			func(t *testing.T, c config.Config) { assert.Equal(t, ":9100", c.HTTPAddr) }},
		{"poll interval feeds every source", []string{"--poll-interval=30s"}, nil,
			func(t *testing.T, c config.Config) {
				for _, s := range c.Sources {
					assert.Equal(t, 30*time.Second, s.Interval)
				}
			}},
		{"per-source override", []string{"--poll-interval=30s", "--source-sales-interval=5m", "--source-order-book-timeout=2s"}, nil,
			func(t *testing.T, c config.Config) {
				assert.Equal(t, 5*time.Minute, c.Sources["sales"].Interval)
				assert.Equal(t, 30*time.Second, c.Sources["analytics"].Interval)
				assert.Equal(t, 2*time.Second, c.Sources["order-book"].Timeout)
			}},
		{"per-source url from env", nil, map[string]string{"MARKETD_SOURCE_PRICE_FEED_URL": "http://feed.internal"},
			func(t *testing.T, c config.Config) {
				assert.Equal(t, "http://feed.internal", c.Sources["price-feed"].BaseURL)
			}},
		{"trusted proxies", []string{"--trusted-proxies", "10.0.0.0/8, 127.0.0.1"}, nil,
			func(t *testing.T, c config.Config) {
				assert.Equal(t, []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("127.0.0.1/32")}, c.TrustedProxies)
			}},
		{"sim anchor", nil, map[string]string{"MARKETD_SIM_ANCHOR": "2030-01-02T03:04:00Z"},
			func(t *testing.T, c config.Config) {
				assert.Equal(t, time.Date(2030, 1, 2, 3, 4, 0, 0, time.UTC), c.SimAnchor.UTC())
			}},
		{"a tier's settings", []string{"--ingest-lease", "5s"}, map[string]string{"MARKETD_STREAM_REPLICAS": "3", "MARKETD_NATS_URL": "nats://a:4222,nats://b:4222"},
			func(t *testing.T, c config.Config) {
				assert.Equal(t, "nats://a:4222,nats://b:4222", c.NatsURL)
				assert.Equal(t, 3, c.StreamReplicas)
				assert.Equal(t, 5*time.Second, c.IngestLease)
			}},
		{"a region's serve node", []string{"--hub-domain", "hub"}, map[string]string{"MARKETD_NATS_URL": "nats://leaf:4222"},
			func(t *testing.T, c config.Config) { assert.Equal(t, "hub", c.HubDomain) }},
		{"no hub domain by default", nil, nil,
			func(t *testing.T, c config.Config) {
				assert.Empty(t, c.HubDomain, "without it a node reads the streams of --nats")
			}},
		{"memory limit in MiB", []string{"--memory-limit", "1536MiB"}, nil,
			func(t *testing.T, c config.Config) { assert.Equal(t, int64(1536)<<20, c.MemoryLimit) }},
		{"memory limit in GiB from env", nil, map[string]string{"MARKETD_MEMORY_LIMIT": "1.5GiB"},
			func(t *testing.T, c config.Config) { assert.Equal(t, int64(1536)<<20, c.MemoryLimit) }},
		{"memory limit decimal", []string{"--memory-limit", "2GB"}, nil,
			func(t *testing.T, c config.Config) { assert.Equal(t, int64(2e9), c.MemoryLimit) }},
		{"memory limit off", []string{"--memory-limit", "off"}, nil,
			func(t *testing.T, c config.Config) { assert.Equal(t, config.MemoryLimitOff, c.MemoryLimit) }},
		{"GOMEMLIMIT is kept for auto to respect", nil, map[string]string{"GOMEMLIMIT": "900MiB"},
			func(t *testing.T, c config.Config) {
				assert.Equal(t, "900MiB", c.GoMemLimit)
				assert.Equal(t, config.MemoryLimitAuto, c.MemoryLimit)
			}},
		{"replay since", []string{"--since", "2026-11-01T00:00:00Z", "--from-seq", "42"}, nil,
			func(t *testing.T, c config.Config) {
				assert.Equal(t, time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), c.ReplaySince.UTC())
				assert.Equal(t, uint64(42), c.ReplayFromSeq)
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := config.Load(tt.args, env(tt.env), nil)
			require.NoError(t, err)
			tt.want(t, c)
		})
	}
}

func TestLoadRejectsBadValuesNamingTheSetting(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		mention string
	}{
		{"bad duration flag", []string{"--poll-interval", "soon"}, nil, "poll-interval"},
		{"bad duration env", nil, map[string]string{"MARKETD_POLL_INTERVAL": "soon"}, "MARKETD_POLL_INTERVAL"},
		{"too short interval", []string{"--poll-interval", "10ms"}, nil, "poll-interval"},
		{"bad rate", []string{"--rate-list", "0"}, nil, "rate-list"},
		{"bad rate env", nil, map[string]string{"MARKETD_RATE_ITEM": "many"}, "MARKETD_RATE_ITEM"},
		{"bad addr", []string{"--http-addr", "8080"}, nil, "http-addr"},
		{"admin on public port", []string{"--http-addr", ":8080", "--admin-addr", ":8080"}, nil, "admin-addr"},
		{"bad nats", []string{"--nats", "localhost"}, nil, "nats"},
		{"bad nats in a list", []string{"--nats", "nats://a:4222,b:4222"}, nil, "nats"},
		{"no replicas", []string{"--stream-replicas", "0"}, nil, "stream-replicas"},
		{"no feed events", []string{"--feed-events", "0"}, nil, "feed-events"},
		{"no market events", []string{"--market-events", "0"}, nil, "market-events"},
		{"too many replicas env", nil, map[string]string{"MARKETD_STREAM_REPLICAS": "7"}, "MARKETD_STREAM_REPLICAS"},
		{"short lease", []string{"--ingest-lease", "100ms"}, nil, "ingest-lease"},
		{"bad proxy", []string{"--trusted-proxies", "not-an-ip"}, nil, "trusted-proxies"},
		{"short cursor key", []string{"--cursor-key", "abc"}, nil, "cursor-key"},
		{"bad source url", []string{"--source-sales-url", "ftp://x"}, nil, "source-sales-url"},
		{"bad sim anchor", []string{"--sim-anchor", "tomorrow"}, nil, "sim-anchor"},
		{"unknown flag", []string{"--nope"}, nil, "nope"},
		{"stray argument", []string{"extra"}, nil, "extra"},
		{"bad log level", []string{"--log-level", "loud"}, nil, "log-level"},
		{"gc share not a number", []string{"--views-gc-share", "half"}, nil, "views-gc-share"},
		{"gc share zero", nil, map[string]string{"MARKETD_VIEWS_GC_SHARE": "0"}, "MARKETD_VIEWS_GC_SHARE"},
		{"memory limit not a size", []string{"--memory-limit", "lots"}, nil, "memory-limit"},
		{"memory limit too small", nil, map[string]string{"MARKETD_MEMORY_LIMIT": "10MiB"}, "MARKETD_MEMORY_LIMIT"},
		{"memory limit negative", []string{"--memory-limit", "-1GiB"}, nil, "memory-limit"},
		{"gc share above a core", []string{"--views-gc-share", "1.5"}, nil, "views-gc-share"},
		{"snapshots every few seconds", []string{"--snapshot-every", "10s"}, nil, "snapshot-every"},
		{"snapshot interval negative", nil, map[string]string{"MARKETD_SNAPSHOT_EVERY": "-1m"}, "MARKETD_SNAPSHOT_EVERY"},
		{"hub domain with a dot", []string{"--hub-domain", "hub.eu"}, nil, "hub-domain"},
		{"hub domain wildcard env", nil, map[string]string{"MARKETD_HUB_DOMAIN": "*"}, "MARKETD_HUB_DOMAIN"},
		{"join from elsewhere", []string{"--join", "peer"}, nil, "join"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := config.Load(tt.args, env(tt.env), nil)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.mention)
			assert.NotContains(t, err.Error(), "\n", "one line")
		})
	}
}

func TestLoadHelp(t *testing.T) {
	var out strings.Builder
	_, err := config.Load([]string{"-h"}, env(nil), &out)
	assert.True(t, errors.Is(err, flag.ErrHelp))
	assert.Contains(t, out.String(), "MARKETD_HTTP_ADDR")
}

// TestLoadBadFlagIsOneLine: a mistyped flag is reported by the returned
// one-line error alone; the flag list is printed only for -h.
func TestLoadBadFlagIsOneLine(t *testing.T) {
	for _, args := range [][]string{{"--no-such-flag"}, {"--http-addr"}, {"--rate-list", "x"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var out strings.Builder
			_, err := config.Load(args, env(nil), &out)
			require.Error(t, err)
			assert.NotContains(t, err.Error(), "\n")
			assert.Empty(t, out.String(), "no usage dump on a bad flag")
		})
	}
}

func TestRedactedHidesCursorKey(t *testing.T) {
	c, err := config.Load([]string{"--cursor-key", "0123456789abcdef-secret"}, env(nil), nil)
	require.NoError(t, err)
	r := c.Redacted()
	assert.Equal(t, "[redacted]", r["cursor-key"])
	for _, v := range r {
		assert.NotContains(t, v, "secret")
	}
	assert.Equal(t, ":8080", r["http-addr"])
}

// Package config is marketd's one typed configuration. Load is the only
// place in marketd that reads the environment: flags first, then MARKETD_*
// variables, then defaults; Validate rejects a bad value with a one-line
// message naming the setting. It imports the standard library only.
package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"time"
)

// SourceNames are the seven upstream sources (readmodel.Sources spells the
// same names; config stays standard-library only, so it repeats them).
var SourceNames = []string{
	"order-book", "indexer-mirror", "indexer-stats", "analytics",
	"collection-index", "price-feed", "sales",
}

// Source is one upstream's settings. A zero Interval or Timeout means the
// global poll interval or the default source timeout; an empty BaseURL means
// the built-in simulator (role all) and is an error for role ingest.
type Source struct {
	BaseURL  string
	Interval time.Duration
	Timeout  time.Duration
}

// Config is every setting of every role. Fields not used by a role are
// ignored by it.
type Config struct {
	HTTPAddr  string // public API listener
	AdminAddr string // admin listener (never the public port)
	SimAddr   string // simulator listener (roles all and sim)
	DataDir   string // <data-dir>/nats and <data-dir>/badger
	NatsURL   string // empty: embedded server (all, replay); a comma-separated list names every server of a cluster

	// StreamReplicas is the replica count of the state and sales streams
	// (1 on one server, 3 on a three-server cluster); an existing stream
	// with another count is updated to it.
	StreamReplicas int
	// HubDomain, for a serve node of a region, is the JetStream domain of
	// the hub whose streams the region's JetStream (the server at NatsURL,
	// a leaf node with its own domain) mirrors: the node reads the
	// mirrors, never across the link. Empty: the node reads the streams of
	// the cluster at NatsURL, as before.
	HubDomain string
	// IngestLease is the period of the ingest lease: a standby ingest takes
	// over within about this long of the active one dying.
	IngestLease time.Duration
	// NodeID names this process in the ingest lease and /admin/sources;
	// empty: host name and process id.
	NodeID string

	PollInterval  time.Duration // default cycle of every source
	SourceTimeout time.Duration // default per-source timeout
	Sources       map[string]Source

	SimSeed        int64
	SimCollections int
	SimTokens      int           // tokens per collection; 0: varied (20–400)
	SimTick        time.Duration // 0: the market moves only on POST /_sim/tick
	SimAnchor      time.Time     // the market's clock at tick 0; zero: start time, to the minute

	RateList int // list bucket, requests per 60 s per IP
	RateItem int // item bucket, requests per 60 s per IP
	// RateIPv6Prefix is the prefix length (bits) that names one IPv6
	// client for rate limiting: every address in a /64 shares a budget.
	RateIPv6Prefix int

	CursorKey      string // HMAC key for cursors; empty: random per process (with a warning)
	CursorTTL      time.Duration
	TrustedProxies []netip.Prefix

	// RowRetention is how long a failing source's last good listing rows
	// stay in the snapshot.
	RowRetention time.Duration

	// FeedEvents is how many change-feed events each collection keeps
	// (GET /v1/collections/{id}/events); the oldest are dropped.
	FeedEvents int
	// MarketEvents is how many events the market's change feed keeps
	// (GET /v1/events); the oldest are dropped.
	MarketEvents int

	// ViewsGCShare is about how much of one core the views' background
	// value-log GC may use (store.Options.GCShare); 1 does not pace it.
	ViewsGCShare float64

	// SnapshotEvery is how old the tier's views snapshot (NATS object
	// store MARKETD_VIEWS) may get before a node with views publishes a
	// new one; 0: this node never publishes.
	SnapshotEvery time.Duration
	// Join is how a node whose view store is empty starts: "snapshot"
	// restores the tier's views snapshot (if there is one of this build's
	// schema) and applies the streams after it; "replay" applies the
	// streams from their start.
	Join string

	// MemoryLimit is the Go runtime's soft memory limit in bytes:
	// MemoryLimitAuto (the default) gives it half of the memory cgroup's
	// limit while a node builds its views or runs an ingest cycle and a
	// third otherwise, when the process runs in one and GOMEMLIMIT is unset,
	// MemoryLimitOff leaves the runtime alone.
	MemoryLimit int64
	// GoMemLimit is GOMEMLIMIT as the Go runtime read it at start ("" when
	// unset): auto does not override what an operator set there.
	GoMemLimit string

	// Replay settings (role replay).
	ReplayFromSeq uint64
	ReplaySince   time.Time

	// DigestAt is the moment clock-dependent views (row expiry, retention)
	// are settled to before a digest (role digest); zero means now.
	DigestAt time.Time

	LogLevel  string // debug, info, warn, error
	LogFormat string // json or console
}

// Default returns the defaults of DESIGN's settings table.
func Default() Config {
	c := Config{
		HTTPAddr:       ":8080",
		AdminAddr:      "127.0.0.1:8081",
		SimAddr:        "127.0.0.1:8090",
		DataDir:        "./data",
		PollInterval:   2 * time.Minute,
		SourceTimeout:  10 * time.Second,
		Sources:        map[string]Source{},
		SimSeed:        20261122,
		SimCollections: 300,
		RateList:       120,
		RateItem:       300,
		RateIPv6Prefix: 64,
		CursorTTL:      time.Hour,
		RowRetention:   10 * time.Minute,
		FeedEvents:     1000,
		MarketEvents:   1_000_000,
		ViewsGCShare:   0.25,
		SnapshotEvery:  30 * time.Minute,
		Join:           "snapshot",
		MemoryLimit:    MemoryLimitAuto,
		StreamReplicas: 1,
		IngestLease:    10 * time.Second,
		LogLevel:       "info",
		LogFormat:      "json",
	}
	for _, s := range SourceNames {
		c.Sources[s] = Source{}
	}
	return c
}

// envName turns a flag name into its variable: poll-interval →
// MARKETD_POLL_INTERVAL.
func envName(flagName string) string {
	if flagName == "nats" {
		return "MARKETD_NATS_URL" // DESIGN's fixed name, older than the rule
	}
	return "MARKETD_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// setting is one flag/variable pair bound to a field.
type setting struct {
	name  string
	usage string
	set   func(string) error
	show  func() string
}

func (c *Config) settings() []setting {
	str := func(p *string) (func(string) error, func() string) {
		return func(v string) error { *p = v; return nil }, func() string { return *p }
	}
	dur := func(p *time.Duration) (func(string) error, func() string) {
		return func(v string) error {
				d, err := time.ParseDuration(v)
				if err != nil {
					return fmt.Errorf("not a duration (e.g. 30s, 2m)")
				}
				*p = d
				return nil
			}, func() string {
				return p.String()
			}
	}
	timeVal := func(p *time.Time) (func(string) error, func() string) {
		return func(v string) error {
				if v == "" {
					*p = time.Time{}
					return nil
				}
				t, err := time.Parse(time.RFC3339, v)
				if err != nil {
					return fmt.Errorf("not an RFC 3339 time")
				}
				*p = t
				return nil
			}, func() string {
				if p.IsZero() {
					return ""
				}
				return p.Format(time.RFC3339)
			}
	}
	integer := func(p *int) (func(string) error, func() string) {
		return func(v string) error {
			n, err := strconv.Atoi(v)
			if err != nil {
				return fmt.Errorf("not an integer")
			}
			*p = n
			return nil
		}, func() string { return strconv.Itoa(*p) }
	}
	// srcDur binds a duration field of one source's settings.
	srcDur := func(name string, pick func(*Source) *time.Duration) (func(string) error, func() string) {
		return func(v string) error {
				src := c.Sources[name]
				set, _ := dur(pick(&src))
				if err := set(v); err != nil {
					return err
				}
				c.Sources[name] = src
				return nil
			}, func() string {
				src := c.Sources[name]
				return pick(&src).String()
			}
	}
	var out []setting
	add := func(name, usage string, set func(string) error, show func() string) {
		out = append(out, setting{name: name, usage: usage, set: set, show: show})
	}
	s, g := str(&c.HTTPAddr)
	add("http-addr", "public API listen address", s, g)
	s, g = str(&c.AdminAddr)
	add("admin-addr", "admin listen address (healthz, readyz, metrics, admin)", s, g)
	s, g = str(&c.SimAddr)
	add("sim-addr", "upstream simulator listen address", s, g)
	s, g = str(&c.DataDir)
	add("data-dir", "data directory (nats/ and badger/ below it)", s, g)
	s, g = str(&c.NatsURL)
	add("nats", "NATS server URL, or a comma-separated list of a cluster's servers; empty runs an embedded server", s, g)
	s, g = integer(&c.StreamReplicas)
	add("stream-replicas", "replicas of the state and sales streams (3 on a three-server cluster); an existing stream is updated to it", s, g)
	s, g = str(&c.HubDomain)
	add("hub-domain", "serve: the hub's JetStream domain; the node reads mirrors of the hub's streams kept by the JetStream of --nats (a region's leaf node), created if missing (empty: the streams of --nats)", s, g)
	s, g = dur(&c.IngestLease)
	add("ingest-lease", "ingest lease period: one ingest polls, standbys take over within about this long of it dying", s, g)
	s, g = str(&c.NodeID)
	add("node-id", "this process's name in the ingest lease and /admin/sources (empty: host name and pid)", s, g)
	s, g = dur(&c.PollInterval)
	add("poll-interval", "default poll interval of every upstream source", s, g)
	s, g = dur(&c.SourceTimeout)
	add("source-timeout", "default timeout of one upstream poll", s, g)
	add("sim-seed", "simulator seed", func(v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("not an integer")
		}
		c.SimSeed = n
		return nil
	}, func() string { return strconv.FormatInt(c.SimSeed, 10) })
	s, g = integer(&c.SimCollections)
	add("sim-collections", "simulator market size in collections", s, g)
	s, g = integer(&c.SimTokens)
	add("sim-tokens", "simulator tokens per collection; 0 varies them from 20 to 400", s, g)
	s, g = dur(&c.SimTick)
	add("sim-tick", "simulator tick interval; 0 moves the market only on POST /_sim/tick", s, g)
	s, g = timeVal(&c.SimAnchor)
	add("sim-anchor", "simulator market clock at tick 0 (RFC 3339); empty: the start time, to the minute", s, g)
	s, g = integer(&c.RateList)
	add("rate-list", "list bucket: requests per 60 s per client IP", s, g)
	s, g = integer(&c.RateItem)
	add("rate-item", "item bucket: requests per 60 s per client IP", s, g)
	s, g = integer(&c.RateIPv6Prefix)
	add("rate-ipv6-prefix", "IPv6 clients are rate limited per network of this prefix length (bits)", s, g)
	s, g = str(&c.CursorKey)
	add("cursor-key", "HMAC key for pagination cursors (shared by every node of a tier)", s, g)
	s, g = dur(&c.CursorTTL)
	add("cursor-ttl", "how long a pagination cursor stays valid", s, g)
	add("trusted-proxies", "comma-separated CIDRs or IPs whose X-Forwarded-For is trusted", func(v string) error {
		p, err := parsePrefixes(v)
		if err != nil {
			return err
		}
		c.TrustedProxies = p
		return nil
	}, func() string {
		var parts []string
		for _, p := range c.TrustedProxies {
			parts = append(parts, p.String())
		}
		return strings.Join(parts, ",")
	})
	s, g = dur(&c.RowRetention)
	add("row-retention", "how long a failing source's last good listing rows are kept", s, g)
	s, g = integer(&c.FeedEvents)
	add("feed-events", "change-feed events kept per collection (the oldest are dropped)", s, g)
	s, g = integer(&c.MarketEvents)
	add("market-events", "events kept by the market's change feed, GET /v1/events (the oldest are dropped)", s, g)
	add("views-gc-share", "about how much of one core the views' value-log GC may use, above 0 and at most 1 (1: unpaced)", func(v string) error {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return fmt.Errorf("not a number")
		}
		c.ViewsGCShare = f
		return nil
	}, func() string { return strconv.FormatFloat(c.ViewsGCShare, 'g', -1, 64) })
	s, g = dur(&c.SnapshotEvery)
	add("snapshot-every", "publish the tier's views snapshot when the newest is older than this (0: never from this node)", s, g)
	s, g = str(&c.Join)
	add("join", "how a node with an empty view store starts: snapshot (the tier's views snapshot, then the streams after it) or replay (the streams from their start)", s, g)
	add("memory-limit", "the Go runtime's soft memory limit: auto (half of the memory cgroup's limit while a node builds its views or runs an ingest cycle, a third otherwise, unless GOMEMLIMIT is set), off, or a size such as 1GiB or 1536MiB",
		func(v string) error {
			n, err := ParseMemoryLimit(v)
			if err != nil {
				return err
			}
			c.MemoryLimit = n
			return nil
		}, func() string { return FormatMemoryLimit(c.MemoryLimit) })
	add("from-seq", "replay: start at this stream sequence", func(v string) error {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return fmt.Errorf("not a sequence number")
		}
		c.ReplayFromSeq = n
		return nil
	}, func() string { return strconv.FormatUint(c.ReplayFromSeq, 10) })
	s, g = timeVal(&c.ReplaySince)
	add("since", "replay: apply only messages published at or after this RFC 3339 time", s, g)
	s, g = timeVal(&c.DigestAt)
	add("at", "digest: settle expiry and retention as of this RFC 3339 time before hashing (default now)", s, g)
	s, g = str(&c.LogLevel)
	add("log-level", "debug, info, warn or error", s, g)
	s, g = str(&c.LogFormat)
	add("log-format", "json or console", s, g)
	for _, name := range SourceNames {
		name := name
		add("source-"+name+"-url", "base URL of the "+name+" upstream (empty: built-in simulator)",
			func(v string) error { src := c.Sources[name]; src.BaseURL = v; c.Sources[name] = src; return nil },
			func() string { return c.Sources[name].BaseURL })
		s, g := srcDur(name, func(src *Source) *time.Duration { return &src.Interval })
		add("source-"+name+"-interval", "poll interval of "+name+" (0: --poll-interval)", s, g)
		s, g = srcDur(name, func(src *Source) *time.Duration { return &src.Timeout })
		add("source-"+name+"-timeout", "poll timeout of "+name+" (0: --source-timeout)", s, g)
	}
	return out
}

// Load builds the configuration of one role from its arguments (without the
// program and role names) and the environment lookup getenv: a flag wins
// over its MARKETD_* variable, which wins over the default. The result is
// validated. Errors name the setting and fit on one line; -h/--help returns
// flag.ErrHelp after writing usage to usage (which may be nil).
func Load(args []string, getenv func(string) string, usage io.Writer) (Config, error) {
	c := Default()
	settings := c.settings()
	for _, s := range settings {
		if v := getenv(envName(s.name)); v != "" {
			if err := s.set(v); err != nil {
				return Config{}, fmt.Errorf("invalid %s=%q: %v", envName(s.name), v, err)
			}
		}
	}
	c.GoMemLimit = getenv("GOMEMLIMIT")
	fs := flag.NewFlagSet("marketd", flag.ContinueOnError)
	if usage == nil {
		usage = io.Discard
	}
	// A bad flag is one line (the returned error), never the whole usage;
	// only -h prints the flag list, to usage.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	for _, s := range settings {
		s := s
		fs.Func(s.name, s.usage+" (env "+envName(s.name)+", default "+quoteDefault(s.show())+")", func(v string) error {
			if err := s.set(v); err != nil {
				return fmt.Errorf("%v", err)
			}
			return nil
		})
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(usage)
			fs.PrintDefaults()
			return Config{}, err
		}
		return Config{}, fmt.Errorf("%s", firstLine(err.Error()))
	}
	if fs.NArg() > 0 {
		return Config{}, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	for name, src := range c.Sources {
		if src.Interval == 0 {
			src.Interval = c.PollInterval
		}
		if src.Timeout == 0 {
			src.Timeout = c.SourceTimeout
		}
		c.Sources[name] = src
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// Validate checks every setting and returns the first problem as a one-line
// error naming the flag and variable.
func (c Config) Validate() error {
	bad := func(name, why string) error {
		return fmt.Errorf("invalid --%s (%s): %s", name, envName(name), why)
	}
	for _, a := range []struct{ name, addr string }{
		{"http-addr", c.HTTPAddr}, {"admin-addr", c.AdminAddr}, {"sim-addr", c.SimAddr},
	} {
		if _, _, err := net.SplitHostPort(a.addr); err != nil {
			return bad(a.name, fmt.Sprintf("%q is not host:port", a.addr))
		}
	}
	if c.HTTPAddr == c.AdminAddr && !strings.HasSuffix(c.HTTPAddr, ":0") {
		return bad("admin-addr", "must differ from --http-addr (admin is never the public port)")
	}
	if c.DataDir == "" {
		return bad("data-dir", "must not be empty")
	}
	if c.NatsURL != "" {
		for _, u := range strings.Split(c.NatsURL, ",") {
			if !strings.Contains(u, "://") {
				return bad("nats", fmt.Sprintf("%q is not a URL (nats://host:port) or a comma-separated list of them", u))
			}
		}
	}
	if c.StreamReplicas < 1 || c.StreamReplicas > 5 {
		return bad("stream-replicas", "must be between 1 and 5 (JetStream's limit)")
	}
	if c.HubDomain != "" && !validDomain(c.HubDomain) {
		return bad("hub-domain", fmt.Sprintf("%q is not a JetStream domain name (letters, digits, - and _)", c.HubDomain))
	}
	if c.IngestLease < time.Second {
		return bad("ingest-lease", "must be at least 1s")
	}
	if c.PollInterval < time.Second {
		return bad("poll-interval", "must be at least 1s")
	}
	if c.SourceTimeout <= 0 {
		return bad("source-timeout", "must be positive")
	}
	for _, name := range SourceNames {
		src := c.Sources[name]
		if src.Interval != 0 && src.Interval < time.Second {
			return bad("source-"+name+"-interval", "must be at least 1s")
		}
		if src.Timeout < 0 {
			return bad("source-"+name+"-timeout", "must not be negative")
		}
		if src.BaseURL != "" && !strings.HasPrefix(src.BaseURL, "http://") && !strings.HasPrefix(src.BaseURL, "https://") {
			return bad("source-"+name+"-url", fmt.Sprintf("%q is not an http(s) URL", src.BaseURL))
		}
	}
	if c.SimCollections < 1 || c.SimCollections > 1_000_000 {
		return bad("sim-collections", "must be between 1 and 1000000")
	}
	if c.SimTokens < 0 || c.SimTokens > 100_000 {
		return bad("sim-tokens", "must be between 0 and 100000")
	}
	if c.SimTick < 0 {
		return bad("sim-tick", "must not be negative")
	}
	if c.RateList < 1 {
		return bad("rate-list", "must be at least 1")
	}
	if c.RateItem < 1 {
		return bad("rate-item", "must be at least 1")
	}
	if c.RateIPv6Prefix < 1 || c.RateIPv6Prefix > 128 {
		return bad("rate-ipv6-prefix", "must be 1 to 128")
	}
	if c.CursorKey != "" && len(c.CursorKey) < 16 {
		return bad("cursor-key", "must be at least 16 characters")
	}
	if c.CursorTTL < time.Minute {
		return bad("cursor-ttl", "must be at least 1m")
	}
	if c.RowRetention < 0 {
		return bad("row-retention", "must not be negative")
	}
	if c.FeedEvents < 1 || c.FeedEvents > 1_000_000 {
		return bad("feed-events", "must be between 1 and 1000000")
	}
	if c.MarketEvents < 1 || c.MarketEvents > 100_000_000 {
		return bad("market-events", "must be between 1 and 100000000")
	}
	if !(c.ViewsGCShare > 0 && c.ViewsGCShare <= 1) {
		return bad("views-gc-share", "must be above 0 and at most 1")
	}
	if c.SnapshotEvery < 0 || (c.SnapshotEvery > 0 && c.SnapshotEvery < time.Minute) {
		return bad("snapshot-every", "must be 0 or at least 1m")
	}
	switch c.Join {
	case "snapshot", "replay":
	default:
		return bad("join", fmt.Sprintf("%q is not snapshot or replay", c.Join))
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		return bad("log-level", fmt.Sprintf("%q is not one of debug, info, warn, error", c.LogLevel))
	}
	switch c.LogFormat {
	case "json", "console":
	default:
		return bad("log-format", fmt.Sprintf("%q is not json or console", c.LogFormat))
	}
	return nil
}

// validDomain reports whether d can be a JetStream domain: one subject
// token ($JS.<domain>.API), so no dots, spaces or wildcards.
func validDomain(d string) bool {
	for _, r := range d {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return d != ""
}

// Redacted returns every setting as name → value for the start-up log, with
// secrets replaced.
func (c Config) Redacted() map[string]string {
	out := map[string]string{}
	for _, s := range c.settings() {
		out[s.name] = s.show()
	}
	if c.CursorKey != "" {
		out["cursor-key"] = "[redacted]"
	}
	return out
}

// SettingNames lists every flag name, sorted (for documentation tests).
func SettingNames() []string {
	c := Default()
	var names []string
	for _, s := range c.settings() {
		names = append(names, s.name)
	}
	sort.Strings(names)
	return names
}

func parsePrefixes(v string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, part := range strings.Split(v, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if strings.Contains(part, "/") {
			p, err := netip.ParsePrefix(part)
			if err != nil {
				return nil, fmt.Errorf("%q is not a CIDR", part)
			}
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(part)
		if err != nil {
			return nil, fmt.Errorf("%q is not an IP address or CIDR", part)
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// MemoryLimit's two words.
const (
	MemoryLimitAuto int64 = -1
	MemoryLimitOff  int64 = 0
)

// memUnits are the suffixes ParseMemoryLimit takes, longest first.
var memUnits = []struct {
	suffix string
	mult   int64
}{
	{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10},
	{"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3},
	{"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}, {"B", 1},
}

// ParseMemoryLimit reads --memory-limit: "auto", "off", or a positive size
// in bytes with an optional unit (B, KiB, MiB, GiB; K, M, G are binary
// too; KB, MB, GB decimal). A size below 64 MiB is refused: the runtime
// would collect without pause.
func ParseMemoryLimit(v string) (int64, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "auto":
		return MemoryLimitAuto, nil
	case "off":
		return MemoryLimitOff, nil
	}
	num, mult := strings.TrimSpace(v), int64(1)
	for _, u := range memUnits {
		if strings.HasSuffix(num, u.suffix) {
			num, mult = strings.TrimSpace(strings.TrimSuffix(num, u.suffix)), u.mult
			break
		}
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f <= 0 || f*float64(mult) > 1<<62 {
		return 0, fmt.Errorf("not auto, off or a size such as 1GiB")
	}
	n := int64(f * float64(mult))
	if n < 64<<20 {
		return 0, fmt.Errorf("below 64MiB")
	}
	return n, nil
}

// FormatMemoryLimit is the inverse of ParseMemoryLimit (a size in MiB when
// it is a whole number of them).
func FormatMemoryLimit(n int64) string {
	switch {
	case n == MemoryLimitAuto:
		return "auto"
	case n == MemoryLimitOff:
		return "off"
	case n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + "MiB"
	}
	return strconv.FormatInt(n, 10)
}

func quoteDefault(s string) string {
	if s == "" {
		return `""`
	}
	return s
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

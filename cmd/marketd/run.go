package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/marketd/marketd/config"
	"github.com/marketd/marketd/node"
	"github.com/rs/zerolog"
)

// roles maps each subcommand to its entry point. `marketd` with no
// subcommand (or with only flags) means `marketd all`.
var roles = map[string]func(ctx context.Context, cfg config.Config, log zerolog.Logger, stdout io.Writer) error{
	"all":    runAll,
	"serve":  runServe,
	"ingest": runIngest,
	"sim":    runSim,
	"replay": runReplay,
	"digest": runDigest,
}

// usageHeader is what -h prints before the flags: the roles of the binary.
const usageHeader = `Usage: marketd [command] [flags]

Commands (no command means all):
  all       embedded NATS, upstream simulator, ingest, projector and API in one process
  serve     projector and API of one node, fed by --nats
  ingest    ingest only, publishing to --nats
  sim       the upstream simulator alone
  replay    rebuild this node's views from the streams, with progress, then exit
  digest    print a digest of this node's views (compare two nodes), then exit
  version   print the version and exit (also --version)

Flags (each also read from its MARKETD_* variable):
`

// version is set at link time (-ldflags "-X main.version=v1.2.3"); when
// empty the module version from the build info is used.
var version string

// buildInfo is what `marketd version` prints and marketd_build_info reports.
type buildInfo struct {
	Version, Revision, GoVersion string
	Modified                     bool
}

func readBuildInfo() buildInfo {
	b := buildInfo{Version: version, Revision: "unknown", GoVersion: "unknown"}
	if bi, ok := debug.ReadBuildInfo(); ok {
		b.GoVersion = bi.GoVersion
		if b.Version == "" {
			b.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				b.Revision = s.Value
			case "vcs.modified":
				b.Modified = s.Value == "true"
			}
		}
	}
	if b.Version == "" {
		b.Version = "(devel)"
	}
	return b
}

func (b buildInfo) String() string {
	rev := b.Revision
	if b.Modified {
		rev += "+dirty"
	}
	return fmt.Sprintf("marketd %s (revision %s, %s)", b.Version, rev, b.GoVersion)
}

// run parses the role and its settings, builds the logger and runs the role
// until ctx is cancelled (long-running roles) or the work is done (replay,
// digest). It returns flag.ErrHelp after printing usage for -h.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	role, implicit := "all", true
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		role, args, implicit = args[0], args[1:], false
	}
	if role == "version" || (len(args) > 0 && (args[0] == "--version" || args[0] == "-version")) {
		fmt.Fprintln(stdout, readBuildInfo())
		return nil
	}
	entry, ok := roles[role]
	if !ok {
		return fmt.Errorf("unknown command %q (want one of all, serve, ingest, sim, replay, digest, version; -h for help)", role)
	}
	cfg, err := config.Load(args, getenv, &headerWriter{w: stderr, header: usageHeader})
	if err != nil {
		return err
	}
	if cfg.HubDomain != "" && (role == "all" || role == "ingest") {
		// The hub's roles publish to its streams; only a region's
		// serve node reads mirrors of them.
		return fmt.Errorf("--hub-domain (MARKETD_HUB_DOMAIN) is for serve, a region's node; %s runs at the hub", role)
	}
	log := newLogger(cfg, stderr).With().Str("role", role).Logger()
	if implicit {
		log.Info().Msg("no command given: running all (embedded NATS, simulator, ingest, projector, API)")
	}
	log.Info().Str("version", readBuildInfo().Version).Interface("config", cfg.Redacted()).Msg("starting")
	node.SetMemoryLimit(cfg, log)
	if err := entry(ctx, cfg, log, stdout); err != nil {
		return err
	}
	log.Info().Msg("stopped")
	return nil
}

// headerWriter writes header before the first write (the usage of -h: the
// roles, then config's flag list).
type headerWriter struct {
	w      io.Writer
	header string
	done   bool
}

func (h *headerWriter) Write(p []byte) (int, error) {
	if !h.done {
		h.done = true
		if _, err := io.WriteString(h.w, h.header); err != nil {
			return 0, err
		}
	}
	return h.w.Write(p)
}

// logTimeFormat is RFC 3339 with milliseconds, in UTC: zerolog's default
// is whole seconds.
const logTimeFormat = "2006-01-02T15:04:05.000Z07:00"

func init() {
	zerolog.TimeFieldFormat = logTimeFormat
	zerolog.TimestampFunc = func() time.Time { return time.Now().UTC() }
}

func newLogger(cfg config.Config, w io.Writer) zerolog.Logger {
	level, err := zerolog.ParseLevel(cfg.LogLevel)
	if err != nil {
		level = zerolog.InfoLevel
	}
	if cfg.LogFormat == "console" {
		noColor := true
		if f, ok := w.(*os.File); ok {
			if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
				noColor = false
			}
		}
		w = zerolog.ConsoleWriter{Out: w, NoColor: noColor, TimeFormat: "15:04:05.000"}
	}
	return zerolog.New(w).Level(level).With().Timestamp().Logger()
}

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/marketd/marketd/config"
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

// run parses the role and its settings, builds the logger and runs the role
// until ctx is cancelled (long-running roles) or the work is done (replay,
// digest). It returns flag.ErrHelp after printing usage for -h.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	role := "all"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		role, args = args[0], args[1:]
	}
	entry, ok := roles[role]
	if !ok {
		return fmt.Errorf("unknown command %q (want one of all, serve, ingest, sim, replay, digest)", role)
	}
	cfg, err := config.Load(args, getenv, stderr)
	if err != nil {
		return err
	}
	log := newLogger(cfg, stderr).With().Str("role", role).Logger()
	log.Info().Interface("config", cfg.Redacted()).Msg("starting")
	if err := entry(ctx, cfg, log, stdout); err != nil {
		return err
	}
	log.Info().Msg("stopped")
	return nil
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

// Command marketd is the one binary of marketd: `marketd [all|serve|ingest|sim|replay|digest] [flags]`.
// See run.go for the roles and README.md for the settings.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "marketd:", err)
		os.Exit(1)
	}
}

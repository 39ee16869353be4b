package main

import (
	"context"
	"fmt"
	"io"

	"time"

	"github.com/marketd/marketd/config"
	"github.com/marketd/marketd/node"
	"github.com/marketd/marketd/readmodel/projector"
	"github.com/marketd/marketd/readmodel/store"
	"github.com/rs/zerolog"
)

// runDigest is `marketd digest --data-dir D [--at T]`: it prints one line,
// the hex content digest of every view in D's Badger (not of Badger's files,
// nor of node-local bookkeeping such as the applied position), and exits.
//
// Some views depend on the clock (listings expire, a failing source's rows
// age out), so it first settles them as of --at (default now): two nodes
// that applied the same messages print the same line when digested at the
// same --at, however and whenever they stopped. The node must be stopped
// (Badger holds a directory lock).
func runDigest(ctx context.Context, cfg config.Config, log zerolog.Logger, stdout io.Writer) error {
	st, err := store.Open(ctx, node.ViewsDir(cfg.DataDir), store.Options{})
	if err != nil {
		return fmt.Errorf("open views in %s: %w", node.ViewsDir(cfg.DataDir), err)
	}
	defer st.Close(context.Background())
	at := cfg.DigestAt
	if at.IsZero() {
		at = time.Now()
	}
	if err := projector.New(nil, st, projector.Options{RowRetention: cfg.RowRetention}, log).Settle(ctx, at); err != nil {
		return fmt.Errorf("settle views at %s: %w", at.Format(time.RFC3339), err)
	}
	d, err := st.Digest(ctx, at)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, d)
	return err
}

package main

import (
	"context"
	"fmt"
	"io"

	"github.com/marketd/marketd/config"
	"github.com/marketd/marketd/readmodel/store"
	"github.com/rs/zerolog"
)

// runDigest is `marketd digest --data-dir D`: it prints one line, the hex
// content digest of every view in D's Badger (not of Badger's files, nor of
// node-local bookkeeping such as the applied position), and exits. Two nodes
// holding the same views print the same line. The node must be stopped
// (Badger holds a directory lock).
func runDigest(ctx context.Context, cfg config.Config, _ zerolog.Logger, stdout io.Writer) error {
	st, err := store.Open(ctx, badgerDir(cfg.DataDir), store.Options{})
	if err != nil {
		return fmt.Errorf("open views in %s: %w", badgerDir(cfg.DataDir), err)
	}
	defer st.Close(context.Background())
	d, err := st.Digest(ctx)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, d)
	return err
}

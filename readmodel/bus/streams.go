package bus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/marketd/marketd/readmodel"
)

// The streams: their configurations, setting them up at start-up (with
// the replica count a tier asks for), reading their heads and purging the
// state stream.

// StreamOptions configures EnsureStreams.
type StreamOptions struct {
	// Replicas is the stream replication factor: 1 for a single server, 3
	// on a three-server cluster. 0 means 1.
	Replicas int
	// Duplicates is the Nats-Msg-Id dedupe window; 0 means
	// DefaultDuplicates.
	Duplicates time.Duration
	// SalesMaxAge bounds the sales stream's history; 0 keeps it forever.
	SalesMaxAge time.Duration
}

// StreamConfigs returns the two stream configurations for opts.
//
// The sales stream is S2-compressed by the server: messages are JSON that
// repeats its collection ids and field names, and compressed the streams
// of 10,000 collections × 100 tokens took 288 MB on disk instead of
// 914 MB. The state stream is not: it keeps one message per subject, so
// every publish removes its subject's previous message, and the server
// loads (and, compressed, decompresses) that message's whole block to do
// it. With the state stream compressed, a steady cycle at 10,000
// collections spent 22% of the node's CPU in those removals and took
// 24.4 CPU-s; uncompressed, 8% and 19.5 CPU-s. Its large messages are
// compressed by the publisher instead (see compressWire), which shrinks
// the blocks those removals load. The sales stream only appends (and
// ages out whole blocks).
func StreamConfigs(opts StreamOptions) []jetstream.StreamConfig {
	if opts.Replicas <= 0 {
		opts.Replicas = 1
	}
	if opts.Duplicates <= 0 {
		opts.Duplicates = DefaultDuplicates
	}
	return []jetstream.StreamConfig{
		{
			Name:              StateStream,
			Description:       "marketd current state: last value per subject",
			Subjects:          []string{statePrefix + ".>"},
			Retention:         jetstream.LimitsPolicy,
			MaxMsgsPerSubject: 1,
			Discard:           jetstream.DiscardOld,
			Storage:           jetstream.FileStorage,
			Replicas:          opts.Replicas,
			Duplicates:        opts.Duplicates,
			MaxMsgSize:        -1,
			Compression:       jetstream.NoCompression,
		},
		{
			Name:        SalesStream,
			Description: "marketd sales: append-only",
			Subjects:    []string{salesPrefix + ".>"},
			Retention:   jetstream.LimitsPolicy,
			Discard:     jetstream.DiscardOld,
			Storage:     jetstream.FileStorage,
			Replicas:    opts.Replicas,
			Duplicates:  opts.Duplicates,
			MaxAge:      opts.SalesMaxAge,
			MaxMsgSize:  -1,
			Compression: jetstream.S2Compression,
		},
	}
}

// EnsureStreams creates the two streams or updates them to opts. It is
// idempotent and safe to call from every process at start-up. Errors are
// UpstreamError *readmodel.Error values.
func EnsureStreams(ctx context.Context, js jetstream.JetStream, opts StreamOptions) error {
	for _, cfg := range StreamConfigs(opts) {
		if _, err := js.CreateOrUpdateStream(ctx, cfg); err != nil {
			return readmodel.Wrap(readmodel.UpstreamError, err, "ensure stream "+cfg.Name)
		}
	}
	return nil
}

// StreamChange says what ReconcileStreams did to one stream.
type StreamChange struct {
	Stream string
	// Action is "created", "replicas" (the replica count was changed) or
	// "updated" (the configuration was re-applied, replicas unchanged).
	Action       string
	FromReplicas int // before; 0 when created
	ToReplicas   int
}

func (c StreamChange) String() string {
	switch c.Action {
	case "created":
		return fmt.Sprintf("stream %s created with %d replica(s)", c.Stream, c.ToReplicas)
	case "replicas":
		return fmt.Sprintf("stream %s replicas changed from %d to %d", c.Stream, c.FromReplicas, c.ToReplicas)
	}
	return fmt.Sprintf("stream %s configuration re-applied (%d replica(s))", c.Stream, c.ToReplicas)
}

// ReconcileStreams creates the two streams or brings them to opts, like
// EnsureStreams, and reports what it did, so a role can log a replica
// count it changed (JetStream moves a stream between R1 and R3 in place:
// it adds or removes peers and keeps the messages). It fails with an
// UpstreamError *readmodel.Error, for example when more replicas are asked
// than the cluster has servers.
func ReconcileStreams(ctx context.Context, js jetstream.JetStream, opts StreamOptions) ([]StreamChange, error) {
	var out []StreamChange
	for _, cfg := range StreamConfigs(opts) {
		s, err := js.Stream(ctx, cfg.Name)
		switch {
		case errors.Is(err, jetstream.ErrStreamNotFound):
			if _, err := js.CreateStream(ctx, cfg); err != nil && !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
				return out, readmodel.Wrap(readmodel.UpstreamError, err, fmt.Sprintf("create stream %s with %d replica(s)", cfg.Name, cfg.Replicas))
			}
			out = append(out, StreamChange{Stream: cfg.Name, Action: "created", ToReplicas: cfg.Replicas})
			continue
		case err != nil:
			return out, readmodel.Wrap(readmodel.UpstreamError, err, "stream "+cfg.Name)
		}
		was := s.CachedInfo().Config.Replicas
		if _, err := js.UpdateStream(ctx, cfg); err != nil {
			return out, readmodel.Wrap(readmodel.UpstreamError, err, fmt.Sprintf("update stream %s (replicas %d → %d)", cfg.Name, was, cfg.Replicas))
		}
		ch := StreamChange{Stream: cfg.Name, Action: "updated", FromReplicas: was, ToReplicas: cfg.Replicas}
		if was != cfg.Replicas {
			ch.Action = "replicas"
		}
		out = append(out, ch)
	}
	return out, nil
}

// Heads returns the last sequence of each stream. Errors are UpstreamError
// *readmodel.Error values (the bus is unreachable or a stream is gone).
func Heads(ctx context.Context, js jetstream.JetStream) (readmodel.Position, error) {
	var h readmodel.Position
	for _, name := range []string{StateStream, SalesStream} {
		s, err := js.Stream(ctx, name)
		if err != nil {
			return h, readmodel.Wrap(readmodel.UpstreamError, err, "stream "+name+": "+err.Error())
		}
		last := s.CachedInfo().State.LastSeq
		if name == StateStream {
			h.State = last
		} else {
			h.Sales = last
		}
	}
	return h, nil
}

// SetUpStreams reconciles the streams to replicas (ReconcileStreams),
// retrying for up to a minute: a cluster that just started needs a moment
// to elect its meta leader. Every change it made is logged on log, each
// failed attempt as a warning. It returns the last attempt's error once
// the minute or ctx is over.
func SetUpStreams(ctx context.Context, js jetstream.JetStream, replicas int, log zerolog.Logger) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for {
		actx, acancel := context.WithTimeout(ctx, 5*time.Second)
		changes, err := ReconcileStreams(actx, js, StreamOptions{Replicas: replicas})
		acancel()
		for _, c := range changes {
			ev := log.Debug()
			if c.Action != "updated" {
				ev = log.Info()
			}
			ev.Str("stream", c.Stream).Int("from", c.FromReplicas).Int("replicas", c.ToReplicas).Msg(c.String())
		}
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return err
		}
		log.Warn().Err(err).Msg("ensure streams; retrying")
		pause(ctx, 500*time.Millisecond)
	}
}

// PurgeState removes every message of the state stream and keeps its
// sequence numbering (nodes' applied positions stay valid). A full cycle
// then publishes every subject again: it is how a server whose stream
// blocks hold garbage is healed. Errors are the server's, wrapped.
func PurgeState(ctx context.Context, js jetstream.JetStream) error {
	s, err := js.Stream(ctx, StateStream)
	if err != nil {
		return fmt.Errorf("purge %s: %w", StateStream, err)
	}
	if err := s.Purge(ctx); err != nil {
		return fmt.Errorf("purge %s: %w", StateStream, err)
	}
	return nil
}

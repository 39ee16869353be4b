package bus

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/marketd/marketd/readmodel"
)

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

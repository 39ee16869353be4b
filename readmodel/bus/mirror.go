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

// A region: serve nodes whose NATS server is a leaf node of the hub with
// a JetStream domain of its own. The region's JetStream keeps mirrors of
// the hub domain's two streams, under the same names, so that the nodes'
// projectors, lag monitors and saved positions read them as they read the
// hub's: a mirror keeps its origin's sequence numbers (the server skips
// the sequences its origin no longer holds) and message headers (the
// Nats-Msg-Id a saved position is checked against). The nodes then never
// read across the leaf link: while it is down the mirrors stand still and
// the nodes serve what they applied; when it returns the server's mirror
// consumer resumes after the last sequence it stored.

// hubAPIPrefix is the JetStream API prefix of domain as a leaf node
// reaches it (nats.go's StreamSource.Domain writes the same).
func hubAPIPrefix(domain string) string { return "$JS." + domain + ".API" }

// MirrorConfigs returns the configurations of a region's two streams:
// mirrors of the hub domain's StateStream and SalesStream, named as they
// are, with their limits as StreamConfigs gives them to the origins (the
// state mirror keeps the last message per subject, so a compacted origin
// stays compacted in the region; the sales mirror ages out as the
// origin's does). A mirror takes no subjects and no duplicate window: it
// stores what its origin stored, in its order.
func MirrorConfigs(hubDomain string, opts StreamOptions) []jetstream.StreamConfig {
	out := StreamConfigs(opts)
	for i := range out {
		c := &out[i]
		c.Description = fmt.Sprintf("marketd mirror of %s in JetStream domain %s", c.Name, hubDomain)
		c.Mirror = &jetstream.StreamSource{Name: c.Name, Domain: hubDomain}
		c.Subjects = nil
		c.Duplicates = 0
	}
	return out
}

// ReconcileMirrors creates the region's mirrors of the hub domain's
// streams in js (the region's JetStream) or brings an existing mirror's
// limits and replicas to opts, and reports what it did. It needs no link
// to the hub: a mirror created while the link is down fills once it
// returns. It fails with an UpstreamError *readmodel.Error when the
// region's JetStream cannot be asked, or when a stream of that name
// exists there and is not a mirror of the hub domain's stream of that
// name (a region's server that once held the streams itself: delete the
// stream there, or point the node at the hub without --hub-domain).
func ReconcileMirrors(ctx context.Context, js jetstream.JetStream, hubDomain string, opts StreamOptions) ([]StreamChange, error) {
	var out []StreamChange
	for _, cfg := range MirrorConfigs(hubDomain, opts) {
		s, err := js.Stream(ctx, cfg.Name)
		switch {
		case errors.Is(err, jetstream.ErrStreamNotFound):
			if _, err := js.CreateStream(ctx, cfg); err != nil && !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
				return out, readmodel.Wrap(readmodel.UpstreamError, err, fmt.Sprintf("create mirror %s of domain %s", cfg.Name, hubDomain))
			}
			out = append(out, StreamChange{Stream: cfg.Name, Action: "created", ToReplicas: cfg.Replicas})
			continue
		case err != nil:
			return out, readmodel.Wrap(readmodel.UpstreamError, err, "stream "+cfg.Name)
		}
		have := s.CachedInfo().Config
		m := have.Mirror
		if m == nil || m.Name != cfg.Name || m.External == nil || m.External.APIPrefix != hubAPIPrefix(hubDomain) {
			return out, readmodel.Wrap(readmodel.UpstreamError, ErrNotMirror,
				fmt.Sprintf("stream %s of this region's JetStream (%s; wanted %s of domain %s): delete it there to let it be created as one",
					cfg.Name, describeOrigin(m), cfg.Name, hubDomain))
		}
		cfg.Mirror = m // a mirror's origin cannot change; keep the server's spelling of it
		if _, err := js.UpdateStream(ctx, cfg); err != nil {
			return out, readmodel.Wrap(readmodel.UpstreamError, err, fmt.Sprintf("update mirror %s (replicas %d → %d)", cfg.Name, have.Replicas, cfg.Replicas))
		}
		ch := StreamChange{Stream: cfg.Name, Action: "updated", FromReplicas: have.Replicas, ToReplicas: cfg.Replicas}
		if have.Replicas != cfg.Replicas {
			ch.Action = "replicas"
		}
		out = append(out, ch)
	}
	return out, nil
}

// ErrNotMirror says a region's stream exists and is not the mirror of
// the hub's stream a region's node reads (ReconcileMirrors).
var ErrNotMirror = errors.New("not the mirror of the hub's stream")

func describeOrigin(m *jetstream.StreamSource) string {
	switch {
	case m == nil:
		return "it mirrors nothing"
	case m.External == nil:
		return "it mirrors " + m.Name + " of its own domain"
	}
	return "it mirrors " + m.Name + " through " + m.External.APIPrefix
}

// MirrorCatchUpWait bounds how long SetUpMirrors waits, for mirrors it
// just created, until they hold what the hub held.
var MirrorCatchUpWait = 60 * time.Second

// SetUpMirrors is SetUpStreams for a serve node of a region: it reconciles
// the region's mirrors of hubDomain's streams (ReconcileMirrors) at
// replicas, retrying for up to a minute, and logs what it changed on log.
// When it created a mirror, it then waits (up to MirrorCatchUpWait) until
// the mirrors hold the sequences the hub's streams held when it asked
// (through hub, the hub domain's JetStream; nil: no wait), so that a new
// region's first node does not count itself caught up with empty mirrors;
// an unreachable hub ends the wait with a warning (the node then serves
// what the mirrors hold and applies the rest when the link is up). It
// returns the last reconcile error once the minute or ctx is over, at
// once when a stream is not the mirror (ErrNotMirror).
func SetUpMirrors(ctx context.Context, js, hub jetstream.JetStream, hubDomain string, replicas int, log zerolog.Logger) error {
	sctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	created := false
	for {
		actx, acancel := context.WithTimeout(sctx, 5*time.Second)
		changes, err := ReconcileMirrors(actx, js, hubDomain, StreamOptions{Replicas: replicas})
		acancel()
		for _, c := range changes {
			ev := log.Debug()
			if c.Action != "updated" {
				ev = log.Info()
			}
			created = created || c.Action == "created"
			ev.Str("stream", c.Stream).Str("hub_domain", hubDomain).Int("replicas", c.ToReplicas).Msg("mirror: " + c.String())
		}
		if err == nil {
			break
		}
		if sctx.Err() != nil || errors.Is(err, ErrNotMirror) { // retrying will not make it one
			return err
		}
		log.Warn().Err(err).Msg("ensure mirrors; retrying")
		pause(sctx, 500*time.Millisecond)
	}
	if !created || hub == nil {
		return nil
	}
	wctx, wcancel := context.WithTimeout(ctx, MirrorCatchUpWait)
	defer wcancel()
	if err := WaitMirrors(wctx, js, hub); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		log.Warn().Err(err).Str("hub_domain", hubDomain).Msg("new mirrors not caught up with the hub; serving what they hold, the rest follows when the link is up")
	}
	return nil
}

// WaitMirrors waits until js's streams (a region's mirrors) hold the last
// sequences hub's streams held when it first reached them. It fails with
// ctx's end, saying whether the hub answered.
func WaitMirrors(ctx context.Context, js, hub jetstream.JetStream) error {
	var target readmodel.Position
	for reached := false; ; pause(ctx, 250*time.Millisecond) {
		if ctx.Err() != nil {
			if !reached {
				return readmodel.Errorf(readmodel.UpstreamError, "hub's streams unreachable")
			}
			return readmodel.Errorf(readmodel.UpstreamError, "mirrors behind the hub's heads (state %d, sales %d)", target.State, target.Sales)
		}
		if !reached {
			actx, cancel := context.WithTimeout(ctx, 2*time.Second)
			h, err := Heads(actx, hub)
			cancel()
			if err != nil {
				continue
			}
			target, reached = h, true
		}
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		h, err := Heads(actx, js)
		cancel()
		if err == nil && h.Covers(target) {
			return nil
		}
	}
}

// MirrorState is how far a region's mirror is behind its hub origin.
type MirrorState struct {
	Stream string `json:"stream"`
	// Head is the mirror's last sequence: what the region's nodes can
	// apply.
	Head uint64 `json:"head"`
	// HubHead is the origin's last sequence, when the hub answered just
	// now; 0 when it did not.
	HubHead uint64 `json:"hubHead,omitempty"`
	// Behind is how many sequences the mirror lacks: HubHead-Head when the
	// hub answered, else the server's count of messages pending as of the
	// mirror's last contact with the hub.
	Behind uint64 `json:"behind"`
	// SinceContact is how long ago the mirror last heard from the hub (a
	// message or its heartbeat, every second while the link is up); -1
	// when it never has.
	SinceContact time.Duration `json:"-"`
	// SinceContactSeconds is SinceContact in seconds, for JSON.
	SinceContactSeconds float64 `json:"sinceContactSeconds"`
	// Error is the server's reason the mirror is not replicating, if any.
	Error string `json:"error,omitempty"`
}

// Mirrors returns the state of js's two mirrors against hub (the hub
// domain's JetStream, asked for its heads with ctx; nil or unreachable:
// the mirrors' own view). It fails with an UpstreamError
// *readmodel.Error when js's streams cannot be read or are not mirrors.
// Safe for concurrent use.
func Mirrors(ctx context.Context, js, hub jetstream.JetStream) ([]MirrorState, bool, error) {
	var out []MirrorState
	for _, name := range []string{StateStream, SalesStream} {
		s, err := js.Stream(ctx, name)
		if err != nil {
			return nil, false, readmodel.Wrap(readmodel.UpstreamError, err, "stream "+name)
		}
		info := s.CachedInfo()
		if info.Mirror == nil {
			return nil, false, readmodel.Errorf(readmodel.UpstreamError, "stream %s is not a mirror", name)
		}
		m := MirrorState{Stream: name, Head: info.State.LastSeq, Behind: info.Mirror.Lag, SinceContact: info.Mirror.Active}
		if m.SinceContact >= 0 {
			m.SinceContactSeconds = m.SinceContact.Seconds()
		} else {
			m.SinceContactSeconds = -1
		}
		if info.Mirror.Error != nil {
			m.Error = info.Mirror.Error.Error()
		}
		out = append(out, m)
	}
	if hub == nil {
		return out, false, nil
	}
	h, err := Heads(ctx, hub)
	if err != nil {
		return out, false, nil
	}
	for i, head := range []uint64{h.State, h.Sales} {
		out[i].HubHead = head
		out[i].Behind = 0
		if head > out[i].Head {
			out[i].Behind = head - out[i].Head
		}
	}
	return out, true, nil
}

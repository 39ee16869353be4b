// Package bus carries readmodel messages over NATS JetStream: the stream
// layout, subjects with encoded ids, the wire encoding, an idempotent
// asynchronous publisher and an embedded server for single-machine use.
//
// Streams. StateStream is compacted: MaxMsgsPerSubject=1 keeps only the
// latest message of each subject, so replaying it from the start rebuilds
// current state at bounded size. SalesStream is append-only. Every publish
// carries Nats-Msg-Id = Message.ID, and the streams' duplicate window
// (DefaultDuplicates, longer than a publish's retries) drops
// retried publishes.
//
// Subjects never contain raw ids: collection ids are base32hex-encoded
// (unpadded, so the alphabet is [0-9A-V]) and empty parts become "-", so any
// id content — dots, wildcards, spaces, NUL — yields a valid literal
// subject.
package bus

import (
	"bytes"
	"context"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	gojson "github.com/goccy/go-json"

	"github.com/marketd/marketd/readmodel"
)

// StateStream is the compacted state stream.
//
// WARNING: renaming it means every node's saved position no longer matches
// any stream, and every node re-consumes from scratch.
const StateStream = "MARKETD_STATE"

// SalesStream is the append-only sales stream.
//
// WARNING: renaming it means every node re-consumes from scratch.
const SalesStream = "MARKETD_SALES"

// Subject prefixes of the two streams.
const (
	statePrefix = "marketd.state"
	salesPrefix = "marketd.sales"
)

// DefaultDuplicates is the default duplicate window: the span in which a
// publish retried after a failed ack is recognised. Message IDs are unique
// per cycle, so the window only has to cover Publisher's retries (for up
// to retryBudget after a Flush begins); a duplicate stored after it
// costs nothing but its apply, which is idempotent (a state subject keeps
// its last message, a sale is indexed once by its SaleKey). The server
// holds every ID of the window in memory: at 100,000 collections the
// first cycle publishes about a million messages, and a 15-minute window
// held them all (about 150 MB of heap, and GC time to scan it).
const DefaultDuplicates = 2 * time.Minute

// MaxMessageBytes is the largest encoded message ingest should publish: a
// quarter of the NATS default max payload (1 MiB), leaving room for headers
// and for servers configured below the default. Larger sets are chunked
// (token buckets) or trimmed (listing rows beyond what the snapshot needs).
const MaxMessageBytes = 256 << 10

var idEncoding = base32.HexEncoding.WithPadding(base32.NoPadding)

// EncodeToken encodes an arbitrary id as one subject token: base32hex
// without padding, "-" for the empty string.
func EncodeToken(id string) string {
	if id == "" {
		return "-"
	}
	return idEncoding.EncodeToString([]byte(id))
}

// DecodeToken reverses EncodeToken.
func DecodeToken(tok string) (string, error) {
	if tok == "-" {
		return "", nil
	}
	b, err := idEncoding.DecodeString(tok)
	if err != nil {
		return "", readmodel.Wrap(readmodel.BadRequest, err, "bad subject token")
	}
	return string(b), nil
}

// Subject returns the subject msg is published on:
//
//	marketd.state.<kind>.<source>.<collection>[.<bucket>]   state kinds
//	marketd.state.polled.<source>.-.<poll>                  a poll's last success
//	marketd.sales.<collection>                              sales
//
// The kind and source are fixed vocabulary but are encoded too when they are
// not plain lowercase words, so hostile input can never change a subject's
// shape. The result is one subject per compacted state (last value wins).
func Subject(msg *readmodel.Message) string {
	coll := EncodeToken(msg.CollectionID)
	if msg.Kind == readmodel.KindSales {
		return salesPrefix + "." + coll
	}
	s := statePrefix + "." + word(string(msg.Kind)) + "." + word(string(msg.Source)) + "." + coll
	if msg.Kind == readmodel.KindTokens {
		s += "." + strconv.FormatUint(uint64(msg.Bucket), 10)
	}
	if msg.Kind == readmodel.KindPolled && msg.Polled != nil {
		s += "." + EncodeToken(msg.Polled.Poll) // two polls of one source keep one message each
	}
	return s
}

// word returns s when it is a non-empty run of [a-z-], else its encoding.
func word(s string) string {
	if s == "" {
		return "-"
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 'a' || c > 'z') && c != '-' {
			return "x" + EncodeToken(s)
		}
	}
	return s
}

// StreamFor names the stream that carries msg.
func StreamFor(msg *readmodel.Message) string {
	if msg.Kind == readmodel.KindSales {
		return SalesStream
	}
	return StateStream
}

// The wire form is JSON, as encoding/json writes it, written and read
// with github.com/goccy/go-json; a large state message sends it in one
// zstd frame (see compressWire). Encode writes exactly encoding/json's
// bytes (TestEncodeMatchesStd, FuzzEncode) at under half the cost
// (BenchmarkEncode), and encoding was about a fifth of ingest's CPU at
// 100,000 collections.
// Decode runs goccy's validity scan first (its decoder skips unknown
// fields without checking them), so it accepts what encoding/json
// accepts and reads it to the same values (TestDecodeMatchesStd,
// FuzzDecode) at about a third of the cost; decoding was the projector's
// largest single cost in a replay.

// Encode returns msg's wire form: its JSON, zstd-compressed when it goes
// to the state stream and is at least compressMin bytes (see
// compressWire). It fails with a BadRequest *readmodel.Error when msg is
// not a valid message (see Validate) or its JSON is over maxWireJSON.
func Encode(msg *readmodel.Message) ([]byte, error) {
	buf, err := wireInto(new(bytes.Buffer), msg)
	if err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// encodeInto is Encode into buf (reset first): the Publisher reuses its
// buffers, where Marshal would allocate a copy of every message (at
// 100,000 collections, a sixteenth of all the bytes a first cycle
// allocates).
func encodeInto(buf *bytes.Buffer, msg *readmodel.Message) error {
	if err := Validate(msg); err != nil {
		return err
	}
	if err := marshalInto(buf, msg); err != nil {
		return readmodel.Wrap(readmodel.BadRequest, err, "encode message")
	}
	if buf.Len() > maxWireJSON {
		return readmodel.Errorf(readmodel.BadRequest, "message %q: %d bytes of JSON exceeds %d; chunk or trim it", msg.ID, buf.Len(), maxWireJSON)
	}
	return nil
}

// marshalInto writes msg's JSON into buf (reset first), unvalidated: the
// bytes encoding/json.Marshal writes (TestEncodeMatchesStd, FuzzEncode).
func marshalInto(buf *bytes.Buffer, msg *readmodel.Message) error {
	buf.Reset()
	if err := gojson.NewEncoder(buf).Encode(msg); err != nil {
		return err
	}
	buf.Truncate(buf.Len() - 1) // Encode ends with a newline, Marshal does not
	return nil
}

// Decode parses a wire message. It fails with a BadRequest
// *readmodel.Error for anything that is not a valid message; it never
// panics.
func Decode(b []byte) (m *readmodel.Message, err error) {
	defer func() {
		if p := recover(); p != nil { // a decoder bug must not take the node down
			m, err = nil, readmodel.Errorf(readmodel.BadRequest, "decode message: decoder panic: %v", p)
		}
	}()
	if bytes.HasPrefix(b, zstdMagic) {
		jb := jsonPool.Get().(*[]byte)
		defer jsonPool.Put(jb)
		if b, err = wireJSON(b, *jb); err != nil {
			return nil, err
		}
		*jb = b[:0] // the frame's JSON, in *jb's array or a larger one
	}
	m = new(readmodel.Message)
	if gojson.Valid(b) { // the fast decoder skips unknown fields without checking them
		err = gojson.Unmarshal(b, m)
	} else {
		err = json.Unmarshal(b, m) // encoding/json decides, and says why
	}
	if err != nil {
		return nil, readmodel.Wrap(readmodel.BadRequest, err, "decode message")
	}
	if err := Validate(m); err != nil {
		return nil, err
	}
	return m, nil
}

// Validate checks that msg has an ID, a known Kind and the payload its
// Kind names.
func Validate(msg *readmodel.Message) error {
	if msg == nil || msg.ID == "" {
		return readmodel.Errorf(readmodel.BadRequest, "message without id")
	}
	ok := false
	switch msg.Kind {
	case readmodel.KindCollection:
		ok = msg.Collection != nil && msg.CollectionID != ""
	case readmodel.KindStats:
		ok = msg.Stats != nil && msg.CollectionID != ""
	case readmodel.KindAnalytics:
		ok = msg.Analytics != nil && msg.CollectionID != ""
	case readmodel.KindListings:
		_, src := readmodel.ParseSource(string(msg.Source))
		ok = src && msg.CollectionID != ""
	case readmodel.KindTokens:
		ok = msg.CollectionID != ""
	case readmodel.KindRates:
		ok = true
	case readmodel.KindStatus:
		_, src := readmodel.ParseSource(string(msg.Source))
		ok = src && msg.Status != nil
	case readmodel.KindSales:
		ok = msg.CollectionID != ""
	case readmodel.KindPolled:
		ok = msg.Polled != nil && msg.Polled.Poll != ""
	}
	if !ok {
		return readmodel.Errorf(readmodel.BadRequest, "message %q: kind %q without its payload", msg.ID, msg.Kind)
	}
	return nil
}

// translate turns a NATS error into a *readmodel.Error.
func translate(err error, what string) error {
	if err == nil {
		return nil
	}
	var re *readmodel.Error
	if errors.As(err, &re) {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return readmodel.Wrap(readmodel.UpstreamError, err, what+": "+err.Error())
	}
	return readmodel.Wrap(readmodel.UpstreamError, err, fmt.Sprintf("%s failed", what))
}

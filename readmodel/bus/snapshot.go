package bus

import (
	"context"
	"errors"
	"io"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/marketd/marketd/readmodel"
)

// ViewsBucket is the JetStream object store that holds the tier's views
// snapshot: one object (viewsObject), a whole view store as
// store.WriteSnapshot writes it, replaced by each publish. A node with an
// empty view store restores it and applies the streams after its
// positions, instead of applying them from their start (docs/tier.md).
//
// WARNING: renaming it leaves the old bucket's snapshot unread and makes
// nodes that join before the next publish apply the streams from their
// start. Nothing is re-consumed by nodes that have views.
const ViewsBucket = "MARKETD_VIEWS"

// viewsObject is the snapshot's name in ViewsBucket.
const viewsObject = "views"

// snapshotChunk is the size of one object-store chunk message: larger than
// nats.go's 128 KiB default (fewer messages for a snapshot of gigabytes),
// well under the server's 1 MiB payload limit.
const snapshotChunk = 512 << 10

// SnapshotMeta describes the views snapshot in ViewsBucket.
type SnapshotMeta struct {
	Schema  string    `json:"schema"`  // the store schema it was written with (store.SnapshotSchema)
	Node    string    `json:"node"`    // the node that published it
	Created time.Time `json:"created"` // when its publish began
	// State and Sales are the stream positions the publishing node had
	// applied when its publish began: the snapshot holds at least these.
	State    uint64    `json:"state"`
	Sales    uint64    `json:"sales"`
	Size     uint64    `json:"bytes"`    // as stored
	Modified time.Time `json:"modified"` // when the store finished storing it
}

func (m SnapshotMeta) metadata() map[string]string {
	return map[string]string{
		"schema":  m.Schema,
		"node":    m.Node,
		"created": m.Created.UTC().Format(time.RFC3339Nano),
		"state":   strconv.FormatUint(m.State, 10),
		"sales":   strconv.FormatUint(m.Sales, 10),
	}
}

func metaOf(info *jetstream.ObjectInfo) SnapshotMeta {
	md := info.Metadata
	m := SnapshotMeta{Schema: md["schema"], Node: md["node"], Size: info.Size, Modified: info.ModTime}
	m.Created, _ = time.Parse(time.RFC3339Nano, md["created"])
	m.State, _ = strconv.ParseUint(md["state"], 10, 64)
	m.Sales, _ = strconv.ParseUint(md["sales"], 10, 64)
	return m
}

// Snapshots reads and publishes the views snapshot. Errors are
// UpstreamError *readmodel.Error values; safe for concurrent use.
type Snapshots struct {
	js       jetstream.JetStream
	replicas int
}

// NewSnapshots returns the views snapshot of js's ViewsBucket; a publish
// creates the bucket with replicas (0 means 1) if it does not exist.
func NewSnapshots(js jetstream.JetStream, replicas int) *Snapshots {
	if replicas <= 0 {
		replicas = 1
	}
	return &Snapshots{js: js, replicas: replicas}
}

// ErrNoSnapshot says the bucket or its snapshot does not exist (yet).
var ErrNoSnapshot = errors.New("no views snapshot")

// bucket returns ViewsBucket, or ErrNoSnapshot when it does not exist.
func (s *Snapshots) bucket(ctx context.Context) (jetstream.ObjectStore, error) {
	obs, err := s.js.ObjectStore(ctx, ViewsBucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, ErrNoSnapshot
	}
	if err != nil {
		return nil, readmodel.Wrap(readmodel.UpstreamError, err, "views snapshot bucket")
	}
	return obs, nil
}

// Latest describes the snapshot published last, or ErrNoSnapshot.
func (s *Snapshots) Latest(ctx context.Context) (SnapshotMeta, error) {
	obs, err := s.bucket(ctx)
	if err != nil {
		return SnapshotMeta{}, err
	}
	info, err := obs.GetInfo(ctx, viewsObject)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return SnapshotMeta{}, ErrNoSnapshot
	}
	if err != nil {
		return SnapshotMeta{}, readmodel.Wrap(readmodel.UpstreamError, err, "views snapshot info")
	}
	return metaOf(info), nil
}

// Open returns a reader of the snapshot published last and what it is, or
// ErrNoSnapshot. The reader fails at its end (an UpstreamError) if the
// bytes read do not match the digest the publish recorded; the caller
// closes it.
func (s *Snapshots) Open(ctx context.Context) (io.ReadCloser, SnapshotMeta, error) {
	obs, err := s.bucket(ctx)
	if err != nil {
		return nil, SnapshotMeta{}, err
	}
	// nats.go bounds a Get whose context has no deadline by the client's
	// default timeout (5 s), for the whole object: a restore of the large
	// market, reading as fast as it writes, was cut off after 13 s.
	readCtx, cancel := orDeadline(ctx, SnapshotReadTimeout)
	res, err := obs.Get(readCtx, viewsObject)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		cancel()
		return nil, SnapshotMeta{}, ErrNoSnapshot
	}
	if err != nil {
		cancel()
		return nil, SnapshotMeta{}, readmodel.Wrap(readmodel.UpstreamError, err, "get views snapshot")
	}
	info, err := res.Info()
	if err != nil {
		_ = res.Close()
		cancel()
		return nil, SnapshotMeta{}, readmodel.Wrap(readmodel.UpstreamError, err, "views snapshot info")
	}
	return translatingReader{ObjectResult: res, cancel: cancel}, metaOf(info), nil
}

// SnapshotReadTimeout bounds reading a snapshot opened with a context
// that has no deadline of its own.
var SnapshotReadTimeout = 30 * time.Minute

// SnapshotWriteTimeout bounds publishing a snapshot with a context that
// has no deadline of its own.
var SnapshotWriteTimeout = 30 * time.Minute

// Publish stores the snapshot r yields as the tier's, replacing the one
// before once it is whole: a reader of the old one that is cut off by the
// replacement fails (and a joining node retries or replays). meta.Size
// and meta.Modified are filled in from the store's answer.
//
// A ctx without a deadline gets SnapshotWriteTimeout: nats.go otherwise
// gives each chunk's acknowledgement the client's default timeout (5 s),
// and a large node's scheduled publish (3.9 GB at 100,000 collections,
// inside a 3 GiB memory cgroup) failed with "timeout waiting for ack"
// after five minutes of a server busy with the node's own faults.
func (s *Snapshots) Publish(ctx context.Context, meta SnapshotMeta, r io.Reader) (SnapshotMeta, error) {
	ctx, cancel := orDeadline(ctx, SnapshotWriteTimeout)
	defer cancel()
	obs, err := s.js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{
		Bucket:      ViewsBucket,
		Description: "marketd views snapshot: a node with an empty view store starts from it",
		Storage:     jetstream.FileStorage,
		Replicas:    s.replicas,
		Compression: false, // the snapshot is zstd frames already
	})
	if err != nil {
		return meta, readmodel.Wrap(readmodel.UpstreamError, err, "views snapshot bucket")
	}
	info, err := obs.Put(ctx, jetstream.ObjectMeta{
		Name:        viewsObject,
		Description: "marketd view store snapshot",
		Metadata:    meta.metadata(),
		Opts:        &jetstream.ObjectMetaOptions{ChunkSize: snapshotChunk},
	}, r)
	if err != nil {
		var re *readmodel.Error
		if errors.As(err, &re) {
			return meta, err // the snapshot's own (store) error, as it is
		}
		return meta, readmodel.Wrap(readmodel.UpstreamError, err, "put views snapshot")
	}
	return metaOf(info), nil
}

// orDeadline returns ctx bounded by d when it has no deadline of its own
// (nats.go bounds such a context by the client's default timeout).
func orDeadline(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, d)
}

// translatingReader turns the object reader's NATS errors (a digest
// mismatch, a chunk gone) into UpstreamError values.
type translatingReader struct {
	jetstream.ObjectResult
	cancel context.CancelFunc
}

func (t translatingReader) Close() error {
	err := t.ObjectResult.Close()
	t.cancel()
	return err
}

func (t translatingReader) Read(p []byte) (int, error) {
	n, err := t.ObjectResult.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		err = readmodel.Wrap(readmodel.UpstreamError, err, "read views snapshot")
	}
	return n, err
}

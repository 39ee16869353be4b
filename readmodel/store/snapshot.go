package store

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"hash/crc32"
	"io"
	"os"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/ristretto/v2/z"
	"github.com/klauspost/compress/zstd"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/marketd/marketd/readmodel"
)

// A snapshot is a whole store as one byte stream, so a node can start from
// another node's views instead of applying the streams from their start
// (a node joining a tier: DESIGN's regional cache tier, docs/tier.md). It
// is read in one Badger transaction, so it is consistent, positions
// included: a store restored from it resumes the streams after them, as
// the node it came from would have.
//
//	header   "marketd views\x00", byte 1 (the format), uvarint length and
//	         the store's schema (Schema plus the records' fingerprint)
//	frame    uvarint raw length (> 0), uvarint compressed length, a zstd
//	         frame (with its checksum) of records, in key order:
//	         uvarint key length, key, uvarint value length, value,
//	         uvarint expiry (unix seconds, 0: none)
//	trailer  uvarint 0, uvarint records, 4 bytes big-endian CRC-32C of
//	         every frame's raw bytes
//
// Superseded listing snapshots (o/l/) are left out, as a replay's copy
// leaves them (CopyTo): they only serve cursors this node signed.
//
// Measured on a stopped store of 10,000 collections x 100 tokens (1.09 M
// records, 577 MB of keys and values): written in 3.3 s as 404 MB (the
// token blocks, feed blocks and packed inputs are compressed already),
// restored in 3.1 s into a store of 601 MB, with the same digest. The
// same market applied from the streams takes about 30 s.
//
// Where the store is larger than the page cache a node has, the reads in
// key order are reads of the value log at random (its values sit in the
// order they were written). At 100,000 collections (a 6.5 GB store) inside
// a 3 GiB memory cgroup, with the kernel's readahead on the mapped value
// log, the snapshot read the disk at 970 MB/s and came out at 1 MB/s:
// over an hour. Advised random access while a snapshot reads
// (advise_linux.go): 2 min 53 s for 10.4 M records, 5.6 GB raw, 3.7 GB
// written (the medium store inside 400 MiB: 38.5 s before, 14.6 s
// after). Readers in parallel over key ranges, tried, were no faster
// (8 readers: 16.8 s at the medium size, 32: 20.6 s). The restore of that
// snapshot inside 3 GiB ran for more than ten minutes, the kernel busy
// reclaiming the dirty pages of Badger's mapped writes; written back every
// 256 MiB (syncWritten) it took 27.6 s (47 s uncapped, unsynced).

const snapshotMagic = "marketd views\x00"

const snapshotFormat = 1

// snapshotFrame is how many raw bytes a frame holds (a frame ends after
// the record that crosses it); a frame read is refused above
// maxSnapshotFrame.
const (
	snapshotFrame    = 1 << 20
	maxSnapshotFrame = 64 << 20
)

// ErrSnapshotSchema is returned by RestoreSnapshot for a snapshot of
// another schema: the node rebuilds from the streams instead.
var ErrSnapshotSchema = errors.New("snapshot of another store schema")

var errCorruptSnapshot = errors.New("corrupt views snapshot")

// SnapshotInfo describes a snapshot written or restored.
type SnapshotInfo struct {
	Schema    string
	Records   int64
	RawBytes  int64 // keys and values, before compression
	Positions map[string]StreamPos
}

// notePosition records the stream position record k, v holds, if it is one.
func (info *SnapshotInfo) notePosition(k, v []byte) {
	if !bytes.HasPrefix(k, pPosition) {
		return
	}
	var p StreamPos
	if json.Unmarshal(v, &p) == nil {
		info.Positions[string(k[len(pPosition):])] = p
	}
}

// SnapshotSchema is the schema a snapshot of this build's stores carries:
// only a store of the same schema can be restored from it.
func SnapshotSchema() string { return schema }

// SnapshotOptions tunes WriteSnapshot.
type SnapshotOptions struct {
	// Yield, when set, is called before each frame is read (about 1 MiB
	// of views): background work gives way to reads (internal/pace).
	Yield func()
}

var snapshotEncoder = func() *zstd.Encoder {
	e, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1), zstd.WithEncoderCRC(true))
	if err != nil {
		panic(err) // only for invalid options
	}
	return e
}()

// WriteSnapshot writes every view, input and position of s to w as one
// consistent snapshot (see above) and returns what it wrote. It reads one
// Badger transaction while the projector goes on writing; an error of w is
// returned as it is, a read error as an Internal (or damage) error. Safe
// for concurrent use with everything but Close.
func (s *Store) WriteSnapshot(ctx context.Context, w io.Writer, opts SnapshotOptions) (SnapshotInfo, error) {
	info := SnapshotInfo{Schema: schema, Positions: map[string]StreamPos{}}
	bw := bufio.NewWriterSize(w, 256<<10)
	head := append([]byte(snapshotMagic), snapshotFormat)
	head = binary.AppendUvarint(head, uint64(len(schema)))
	head = append(head, schema...)
	if _, err := bw.Write(head); err != nil {
		return info, err
	}
	crc := crc32.New(crc32.MakeTable(crc32.Castagnoli))
	var raw, comp []byte
	var werr error
	flush := func() {
		if len(raw) == 0 || werr != nil {
			return
		}
		crc.Write(raw)
		comp = snapshotEncoder.EncodeAll(raw, comp[:0])
		var hdr [2 * binary.MaxVarintLen64]byte
		n := binary.PutUvarint(hdr[:], uint64(len(raw)))
		n += binary.PutUvarint(hdr[n:], uint64(len(comp)))
		if _, werr = bw.Write(hdr[:n]); werr == nil {
			_, werr = bw.Write(comp)
		}
		info.RawBytes += int64(len(raw))
		raw = raw[:0]
	}
	s.adviseSettled() // as it is, but for a file opened since the last advice
	err := s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{PrefetchValues: true, PrefetchSize: 256})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			item := it.Item()
			k := item.Key()
			if bytes.HasPrefix(k, pOldListings) {
				continue
			}
			if len(raw) == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
				if opts.Yield != nil {
					opts.Yield()
				}
			}
			raw = binary.AppendUvarint(raw, uint64(len(k)))
			raw = append(raw, k...)
			err := item.Value(func(v []byte) error {
				raw = binary.AppendUvarint(raw, uint64(len(v)))
				raw = append(raw, v...)
				info.notePosition(k, v)
				return nil
			})
			if err != nil {
				return err
			}
			raw = binary.AppendUvarint(raw, item.ExpiresAt())
			info.Records++
			if len(raw) >= snapshotFrame {
				flush()
				if werr != nil {
					return werr
				}
			}
		}
		flush()
		return werr
	})
	if werr != nil {
		return info, werr
	}
	if err != nil {
		if ctx.Err() != nil {
			return info, ctx.Err()
		}
		return info, internal(err, "snapshot")
	}
	tail := binary.AppendUvarint([]byte{0}, uint64(info.Records))
	tail = binary.BigEndian.AppendUint32(tail, crc.Sum32())
	if _, err := bw.Write(tail); err != nil {
		return info, err
	}
	return info, bw.Flush()
}

// RestoreSnapshot builds a store in dir, which must not exist or be empty,
// from a snapshot read from r, and closes it: the caller opens it. Badger's
// StreamWriter writes the sorted records straight into tables, without
// transactions. A snapshot of another schema is ErrSnapshotSchema (wrapped,
// before anything is written); a damaged or truncated one, or r's error, is
// returned, and dir then holds a partial build the caller removes. The
// snapshot's positions are in the store it builds.
func RestoreSnapshot(ctx context.Context, dir string, r io.Reader, opts Options) (info SnapshotInfo, err error) {
	br := bufio.NewReaderSize(r, 256<<10)
	got, err := readSnapshotHeader(br)
	if err != nil {
		return info, err
	}
	info.Schema, info.Positions = got, map[string]StreamPos{}
	if got != schema {
		return info, readmodel.Wrap(readmodel.Internal, ErrSnapshotSchema, "snapshot schema "+got+", this build's "+schema)
	}
	s, sw, err := openStreamed(ctx, dir, opts, "restore snapshot")
	if err != nil {
		return info, err
	}
	defer func() {
		if cerr := s.Close(context.Background()); err == nil && cerr != nil {
			err = cerr
		}
	}()
	defer sw.Cancel()
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(maxSnapshotFrame))
	if err != nil {
		return info, internal(err, "restore snapshot: decoder")
	}
	defer dec.Close()
	crc := crc32.New(crc32.MakeTable(crc32.Castagnoli))
	var comp, raw, last []byte
	// One buffer, reused after each write (StreamWriter.Write copies what
	// it keeps), sized so that a batch never grows it: a new 4 MiB buffer
	// per batch, grown to 8, was a seventh of a restore's CPU (profiled).
	buf := z.NewBuffer(2*restoreBatch, "marketd.RestoreSnapshot")
	defer func() { _ = buf.Release() }()
	var synced int64
	for {
		if err := ctx.Err(); err != nil {
			return info, err
		}
		rawLen, err := binary.ReadUvarint(br)
		if err != nil {
			return info, corruptSnapshot(err)
		}
		if rawLen == 0 {
			break
		}
		compLen, err := binary.ReadUvarint(br)
		if err != nil || rawLen > maxSnapshotFrame || compLen > maxSnapshotFrame {
			return info, corruptSnapshot(err)
		}
		comp = grow(comp, int(compLen))
		if _, err := io.ReadFull(br, comp); err != nil {
			return info, corruptSnapshot(err)
		}
		raw, err = dec.DecodeAll(comp, raw[:0])
		if err != nil || uint64(len(raw)) != rawLen {
			return info, corruptSnapshot(err)
		}
		crc.Write(raw)
		info.RawBytes += int64(len(raw))
		for rest := raw; len(rest) > 0; {
			k, v, exp, n, ok := snapshotRecord(rest)
			if !ok || bytes.Compare(k, last) <= 0 {
				return info, corruptSnapshot(nil)
			}
			rest = rest[n:]
			last = append(last[:0], k...)
			appendKV(buf, k, v, exp)
			info.Records++
			info.notePosition(k, v)
		}
		if buf.LenNoPadding() >= restoreBatch {
			if err := sw.Write(buf); err != nil {
				return info, internal(err, "restore snapshot: write")
			}
			buf.Reset()
			if info.RawBytes-synced >= restoreSyncEvery {
				syncWritten()
				synced = info.RawBytes
			}
		}
	}
	records, err := binary.ReadUvarint(br)
	if err != nil || records != uint64(info.Records) {
		return info, corruptSnapshot(err)
	}
	var sum [4]byte
	if _, err := io.ReadFull(br, sum[:]); err != nil || binary.BigEndian.Uint32(sum[:]) != crc.Sum32() {
		return info, corruptSnapshot(err)
	}
	if err := sw.Write(buf); err != nil {
		return info, internal(err, "restore snapshot: write")
	}
	if err := sw.Flush(); err != nil {
		return info, internal(err, "restore snapshot: flush")
	}
	if err := s.checkSchema(); err != nil {
		return info, err
	}
	return info, nil
}

// restoreBatch is how many bytes of records a restore hands Badger's
// StreamWriter at a time.
const restoreBatch = 4 << 20

// appendKV appends the record (k, v, exp) to buf as one badger pb.KV at
// version 1: the bytes badger.KVToBuffer writes (TestAppendKVMatchesProto),
// without building the message and marshalling it through reflection
// (profiled: about a ninth of a restore's CPU). Fields go in number order
// with zero values omitted, as proto3 marshals them: key (1), value (2),
// version (4), expires_at (5).
func appendKV(buf *z.Buffer, k, v []byte, exp uint64) {
	const key, value, version, expiresAt = 1, 2, 4, 5
	n := protowire.SizeTag(version) + protowire.SizeVarint(1)
	if len(k) > 0 {
		n += protowire.SizeTag(key) + protowire.SizeBytes(len(k))
	}
	if len(v) > 0 {
		n += protowire.SizeTag(value) + protowire.SizeBytes(len(v))
	}
	if exp != 0 {
		n += protowire.SizeTag(expiresAt) + protowire.SizeVarint(exp)
	}
	b := buf.SliceAllocate(n)[:0:n] // the appends below fill it exactly
	if len(k) > 0 {
		b = protowire.AppendTag(b, key, protowire.BytesType)
		b = protowire.AppendBytes(b, k)
	}
	if len(v) > 0 {
		b = protowire.AppendTag(b, value, protowire.BytesType)
		b = protowire.AppendBytes(b, v)
	}
	b = protowire.AppendTag(b, version, protowire.VarintType)
	b = protowire.AppendVarint(b, 1)
	if exp != 0 {
		b = protowire.AppendTag(b, expiresAt, protowire.VarintType)
		b = protowire.AppendVarint(b, exp)
	}
}

// readSnapshotHeader reads a snapshot's header and returns its schema.
func readSnapshotHeader(br *bufio.Reader) (string, error) {
	head := make([]byte, len(snapshotMagic)+1)
	if _, err := io.ReadFull(br, head); err != nil || string(head[:len(snapshotMagic)]) != snapshotMagic || head[len(snapshotMagic)] != snapshotFormat {
		return "", corruptSnapshot(err)
	}
	n, err := binary.ReadUvarint(br)
	if err != nil || n > 1<<10 {
		return "", corruptSnapshot(err)
	}
	s := make([]byte, n)
	if _, err := io.ReadFull(br, s); err != nil {
		return "", corruptSnapshot(err)
	}
	return string(s), nil
}

// snapshotRecord parses the record at the start of b; n is its length.
func snapshotRecord(b []byte) (k, v []byte, exp uint64, n int, ok bool) {
	kl, a := binary.Uvarint(b)
	if a <= 0 || kl == 0 || kl > uint64(len(b)-a) {
		return nil, nil, 0, 0, false
	}
	k, n = b[a:a+int(kl)], a+int(kl)
	vl, a := binary.Uvarint(b[n:])
	if a <= 0 || vl > uint64(len(b)-n-a) {
		return nil, nil, 0, 0, false
	}
	v, n = b[n+a:n+a+int(vl)], n+a+int(vl)
	exp, a = binary.Uvarint(b[n:])
	if a <= 0 {
		return nil, nil, 0, 0, false
	}
	return k, v, exp, n + a, true
}

func corruptSnapshot(err error) error {
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		err = errCorruptSnapshot
	} else {
		err = errors.Join(errCorruptSnapshot, err)
	}
	return readmodel.Wrap(readmodel.Internal, err, "restore snapshot")
}

func grow(b []byte, n int) []byte {
	if cap(b) < n {
		return make([]byte, n)
	}
	return b[:n]
}

// openStreamed opens a new store in dir, which must not exist or be
// empty, for a build that writes it whole through Badger's StreamWriter
// (RestoreSnapshot, WriteMemory), and prepares the writer; what names the
// build in errors. The caller cancels the writer and closes the store.
// Errors are *readmodel.Error (Internal) or Open's.
func openStreamed(ctx context.Context, dir string, opts Options, what string) (*Store, *badger.StreamWriter, error) {
	if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
		return nil, nil, readmodel.Errorf(readmodel.Internal, "%s: %s is not empty", what, dir)
	}
	opts.GCInterval = -1 // nothing to collect, and Prepare drops what Open wrote
	s, err := Open(ctx, dir, opts)
	if err != nil {
		return nil, nil, err
	}
	sw := s.db.NewStreamWriter()
	if err := sw.Prepare(); err != nil {
		_ = s.Close(context.Background())
		return nil, nil, internal(err, what+": prepare")
	}
	return s, sw, nil
}

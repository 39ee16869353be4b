package bus

import (
	"bytes"
	"sync"

	"github.com/klauspost/compress/zstd"

	"github.com/marketd/marketd/readmodel"
)

// Wire compression.
//
// A state message of compressMin bytes or more goes on the wire as its
// JSON in one zstd frame; every other message, and every message a
// publisher before this one wrote, is plain JSON. Decode tells the two
// apart by the frame's magic number (JSON starts with '{' or space), so
// streams written before compression, and other publishers writing JSON,
// stay readable.
//
// Why: the state stream keeps one message per subject, so the server
// removes a subject's previous message on every publish, and to remove it
// loads the whole 4 MB block that holds it (its per-subject index and
// message cache, which it drops again right after). In a steady cycle at
// 100,000 collections those loads were about a tenth of the node's CPU
// while ingest published, and they scale with the stream's size in
// bytes, not with the number of messages published. Compressed, the
// state stream holds the same messages in a fraction of the blocks. The
// server's own stream compression does not help here: it compresses
// whole blocks, so each of those loads also decompressed 4 MB (measured:
// 22% of a cycle's CPU instead of 8%; see StreamConfigs). The sales
// stream only appends and keeps its server-side compression.
//
// JSON of a state message compresses about 3× with S2 and 4.5× with
// zstd at its fastest level, one message at a time (token and listing
// messages repeat their contract, collection id and field names).

// compressMin is the smallest JSON a state message is compressed from:
// status and small documents stay plain, where a frame's header and the
// work would not pay.
const compressMin = 1024

// maxWireJSON bounds a message's JSON, compressed or not: the decoder
// refuses frames that would decompress to more, so a corrupt or hostile
// frame cannot make a consumer allocate without limit.
const maxWireJSON = 8 << 20

// zstdMagic starts every zstd frame (RFC 8878, 3.1.1).
var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

// compressWire reports whether msg, whose JSON is n bytes, is sent
// compressed.
func compressWire(msg *readmodel.Message, n int) bool {
	return n >= compressMin && StreamFor(msg) == StateStream
}

// wireEncoder and wireDecoder are shared: EncodeAll and DecodeAll are
// safe for concurrent use.
var (
	wireEncoder = sync.OnceValue(func() *zstd.Encoder {
		e, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithLowerEncoderMem(true))
		if err != nil {
			panic(err) // only for invalid options
		}
		return e
	})
	wireDecoder = sync.OnceValue(func() *zstd.Decoder {
		d, err := zstd.NewReader(nil, zstd.WithDecoderMaxMemory(maxWireJSON), zstd.WithDecoderLowmem(true))
		if err != nil {
			panic(err) // only for invalid options
		}
		return d
	})
)

// wireJSON returns the JSON of wire bytes b: b itself, or the JSON its
// zstd frame holds, decompressed into dst's spare capacity (a new buffer
// when it has too little). A frame that does not decompress, or would be
// over maxWireJSON, is a BadRequest *readmodel.Error.
func wireJSON(b, dst []byte) ([]byte, error) {
	if !bytes.HasPrefix(b, zstdMagic) {
		return b, nil
	}
	j, err := wireDecoder().DecodeAll(b, dst[:0])
	if err != nil {
		return nil, readmodel.Wrap(readmodel.BadRequest, err, "decode message: decompress")
	}
	return j, nil
}

// jsonPool holds Decode's buffers for decompressed frames: the decoded
// message copies what it keeps, so a buffer serves the next message. At
// 100,000 collections a cycle decompressed about 1 GB of JSON.
var jsonPool = sync.Pool{New: func() any { return new([]byte) }}

// wireInto writes msg's wire form (see Encode) into buf and returns the
// buffer holding it: buf, or a pooled buffer with the frame (buf then
// went back to the pool). On error it returns buf.
func wireInto(buf *bytes.Buffer, msg *readmodel.Message) (*bytes.Buffer, error) {
	if err := encodeInto(buf, msg); err != nil {
		return buf, err
	}
	if compressWire(msg, buf.Len()) {
		buf = compressInto(buf)
	}
	return buf, nil
}

// compressInto replaces buf's JSON by its zstd frame, using a pooled
// buffer, and returns the buffer now holding the wire bytes (buf went
// back to the pool).
func compressInto(buf *bytes.Buffer) *bytes.Buffer {
	out := bufs.Get().(*bytes.Buffer)
	out.Reset()
	out.Grow(buf.Len() / 2)
	z := wireEncoder().EncodeAll(buf.Bytes(), out.AvailableBuffer())
	*out = *bytes.NewBuffer(z) // adopt the frame, written in place when it fit: no copy
	bufs.Put(buf)
	return out
}

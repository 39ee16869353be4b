package store

import (
	"encoding/binary"
	"slices"
	"sync"

	"github.com/klauspost/compress/zstd"

	"github.com/marketd/marketd/readmodel"
)

// A block of a collection's change feed (key e/e/<cid><k>, see events.go)
// holds the events seq k*feedBlock+1 .. (k+1)*feedBlock, or a run of them:
//
//	value    uvarint start (the index in the block of its first stored
//	         event: 0 unless retention cut the append that began it),
//	         then segments, oldest first
//	segment  uvarint n (its events, at least 1), uvarint length, then a
//	         zstd frame (against eventDictText, with a checksum) of n
//	         events, each lp(record) (evrec.go; schema 16 had type bit,
//	         lp(id), lp(JSON body); the dictionary is still the JSON one
//	         it was made for, which records gain little from)
//
// The first write of a block is its base (the key above). An append to
// the open (last) block writes a part: a value of the same form holding
// the appended events only, under the block's key and one byte, the
// block's index of the part's last event (partKey); each part's start
// says where the one before it ends, so the newest (named by the feed's
// head) leads back to the base. Rewriting the open block, base and
// segments, on every append was 97 MB/min of the 348 MB/min of value log
// the soak wrote (5,000 collections, a cycle every 5 s; the block's events
// written again some 32 times on average); a part is the new events'
// bytes. A block that fills is sealed: its events are compressed again as
// one segment in its base and its parts deleted, so most of a long feed is
// in whole blocks, which share the repeated collection id, address,
// sellers and field names that a single event could not. A base written
// with several segments (before parts) reads the same.
//
// Measured on a replay of 10,000 collections x 100 tokens (694,683
// events, ~834 bytes of JSON each): one key per event with an S2 block
// against eventDict took 296 MB live (63 B of key and 364 B of value an
// event); blocks of 64 take 95.6 MB (138 B an event), of 32 97.5 MB, and
// the replay used less CPU (fewer keys to write and compact). zstd's
// fastest level over whole blocks kept 131 B an event against the
// dictionary, 137 without; S2 over the block 218. The price is a live
// append of one event: rewriting the open block (up to ~10 KB) and a
// dictionary frame took ~60 us a transaction where one key took ~17 us;
// five events a transaction ~50 us either way. With parts an append of
// one event took 46 us instead of 58 (BenchmarkAppendEvents, this
// machine), of five 55 us either way; a read of the open block reads its
// parts too.

// feedBlock is how many events a block of the change feed holds.
const feedBlock = 64

// blockOf is the block of event seq (from 1).
func blockOf(seq uint64) uint64 { return (seq - 1) / feedBlock }

// feedFam is the key prefix of collection cid's blocks: a block's key
// is a family's prefix and k, a part's one byte more. The market's log
// (market.go) is a family of its own, pMarket.
func feedFam(cid string) []byte { return key(pEvent, cid, "") }

// famBlockKey is the key of the k-th block of the family whose prefix is
// fam.
func famBlockKey(fam []byte, k uint64) []byte {
	return binary.BigEndian.AppendUint64(append(make([]byte, 0, len(fam)+9), fam...), k)
}

// famPartKey is the key of the part of the open block k of family fam
// that ends with the block's last-th event.
func famPartKey(fam []byte, k, last uint64) []byte { return append(famBlockKey(fam, k), byte(last)) }

// blockKey is the key of collection cid's k-th block.
func blockKey(cid string, k uint64) []byte { return famBlockKey(feedFam(cid), k) }

// partKey is the key of the part of collection cid's open block k that
// ends with the block's last-th event.
func partKey(cid string, k, last uint64) []byte { return famPartKey(feedFam(cid), k, last) }

// openParts returns the parts of family fam's open block k that hold
// its events end..last (those after its base's), oldest first, read with
// get: from the part ending at last back to the one starting at end, each
// saying where it starts. A part missing, or one that does not end where
// the next starts, is errCorruptBlock.
func openParts(get func(k []byte) ([]byte, bool, error), fam []byte, k, end, last uint64) ([][]byte, error) {
	var parts [][]byte
	for last+1 > end {
		v, ok, err := get(famPartKey(fam, k, last))
		if err != nil {
			return nil, err
		}
		start, n, shapeOK := blockShape(v)
		if !ok || !shapeOK || start+n != last+1 || start < end {
			return nil, errCorruptBlock()
		}
		parts = append(parts, v)
		last = start - 1 // start >= end >= 1: the base holds an event
	}
	slices.Reverse(parts)
	return parts, nil
}

// storedEvent is an event read from a block: its type bit and its record
// (evrec.go), which aliases the decoded segment.
type storedEvent struct {
	typ uint8
	rec []byte
}

// maxSegment bounds a decoded segment of n events.
func maxSegment(n uint64) uint64 {
	return n * (maxEventBody + binary.MaxVarintLen64)
}

// eventEncoder and eventDecoder are shared: EncodeAll and DecodeAll are
// safe for concurrent use.
var (
	eventEncoder = sync.OnceValue(func() *zstd.Encoder {
		e, err := zstd.NewWriter(nil,
			zstd.WithEncoderLevel(zstd.SpeedFastest),
			zstd.WithEncoderDictRaw(1, []byte(eventDictText)),
			zstd.WithEncoderConcurrency(2),
			zstd.WithLowerEncoderMem(true),
			zstd.WithSingleSegment(true), // the frame states its size: decodeSegment checks it before allocating
			zstd.WithEncoderCRC(true))    // a garbled segment is an error, not wrong bytes
		if err != nil {
			panic(err) // only for invalid options
		}
		return e
	})
	eventDecoder = sync.OnceValue(func() *zstd.Decoder {
		d, err := zstd.NewReader(nil,
			zstd.WithDecoderDictRaw(1, []byte(eventDictText)),
			zstd.WithDecoderMaxMemory(maxSegment(feedBlock)),
			zstd.WithDecoderLowmem(true))
		if err != nil {
			panic(err) // only for invalid options
		}
		return d
	})
)

// appendSegment appends a segment of event records recs (at least one)
// to block value v.
func appendSegment(v []byte, recs [][]byte) []byte {
	n := 0
	for _, r := range recs {
		n += binary.MaxVarintLen64 + len(r)
	}
	raw := make([]byte, 0, n)
	for _, r := range recs {
		raw = appendRawEvent(raw, r)
	}
	return appendRawSegment(v, uint64(len(recs)), raw)
}

// appendRawEvent appends event record r to a segment's uncompressed
// events raw, as appendSegment lays them out: lp(r).
func appendRawEvent(raw, r []byte) []byte {
	raw = binary.AppendUvarint(raw, uint64(len(r)))
	return append(raw, r...)
}

// appendRawSegment appends to block value v a segment of the n events
// laid out in raw (appendRawEvent), compressed.
func appendRawSegment(v []byte, n uint64, raw []byte) []byte {
	frame := eventEncoder().EncodeAll(raw, nil)
	v = binary.AppendUvarint(v, n)
	v = binary.AppendUvarint(v, uint64(len(frame)))
	return append(v, frame...)
}

// newBlock returns the value of a block whose first stored event is the
// start-th of the block, holding the event records recs.
func newBlock(start uint64, recs [][]byte) []byte {
	return appendSegment(binary.AppendUvarint(nil, start), recs)
}

// blockShape reads a block value's start and how many events it holds
// without decoding them; ok is false for a value whose framing is
// damaged (a damaged frame is found when the block is read or sealed).
func blockShape(v []byte) (start, n uint64, ok bool) {
	start, w := binary.Uvarint(v)
	if w <= 0 || start >= feedBlock {
		return 0, 0, false
	}
	v = v[w:]
	for len(v) > 0 {
		c, l, rest, ok := segmentHead(v)
		if !ok || start+n+c > feedBlock {
			return 0, 0, false
		}
		n += c
		v = rest[l:]
	}
	return start, n, n > 0
}

// segmentHead reads a segment's event count and frame length; rest starts
// at the frame.
func segmentHead(v []byte) (n, l uint64, rest []byte, ok bool) {
	n, w := binary.Uvarint(v)
	if w <= 0 || n == 0 || n > feedBlock {
		return 0, 0, nil, false
	}
	v = v[w:]
	l, w = binary.Uvarint(v)
	if w <= 0 || l > uint64(len(v)-w) {
		return 0, 0, nil, false
	}
	return n, l, v[w:], true
}

// errCorruptBlock is what a damaged block reads as (a "corrupt ..."
// Internal error: heal.go counts it as damage).
func errCorruptBlock() error { return readmodel.Errorf(readmodel.Internal, "corrupt event block") }

// decodeBlock returns the start of block value v and its events, oldest
// first (their bodies alias new buffers, never v). A damaged value, one
// that would decode to more than its events may hold, or a segment whose
// checksum fails is an error (errCorruptBlock), never a panic.
func decodeBlock(v []byte) (uint64, []storedEvent, error) {
	start, w := binary.Uvarint(v)
	if w <= 0 || start >= feedBlock {
		return 0, nil, errCorruptBlock()
	}
	v = v[w:]
	var evs []storedEvent
	for len(v) > 0 {
		n, l, rest, ok := segmentHead(v)
		if !ok || start+uint64(len(evs))+n > feedBlock {
			return 0, nil, errCorruptBlock()
		}
		frame := rest[:l]
		v = rest[l:]
		var h zstd.Header
		if err := h.Decode(frame); err != nil || !h.HasFCS || h.FrameContentSize > maxSegment(n) {
			return 0, nil, errCorruptBlock()
		}
		raw, err := eventDecoder().DecodeAll(frame, make([]byte, 0, h.FrameContentSize))
		if err != nil || uint64(len(raw)) != h.FrameContentSize {
			return 0, nil, errCorruptBlock()
		}
		for i := uint64(0); i < n; i++ {
			e, r, ok := nextEvent(raw)
			if !ok {
				return 0, nil, errCorruptBlock()
			}
			evs = append(evs, e)
			raw = r
		}
		if len(raw) != 0 {
			return 0, nil, errCorruptBlock()
		}
	}
	if len(evs) == 0 {
		return 0, nil, errCorruptBlock()
	}
	return start, evs, nil
}

// nextEvent reads one event of a decoded segment and returns the rest.
func nextEvent(raw []byte) (storedEvent, []byte, bool) {
	n, w := binary.Uvarint(raw)
	if w <= 0 || n == 0 || n > maxEventBody || n > uint64(len(raw)-w) {
		return storedEvent{}, nil, false
	}
	rec := raw[w : w+int(n) : w+int(n)]
	return storedEvent{typ: rec[0], rec: rec}, raw[w+int(n):], true
}

package ingest

import (
	"encoding/binary"
	"encoding/json"
	"hash/maphash"
	"strconv"
	"sync"
	"time"

	"github.com/marketd/marketd/readmodel"
)

// contentHash is the change-detection hash of any JSON-encodable payload.
func contentHash(v any) [16]byte {
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte(err.Error())
	}
	return sum16(b)
}

func sum16(b []byte) [16]byte {
	var h hash128
	h.reset()
	h.write(b)
	return h.sum16()
}

// hashSeeds seed the change-detection hash. They are drawn per process,
// which is all the hashes need: ingest keeps them in memory and compares
// them within the process (a restarted ingest republishes once). Being
// secret, they also keep an upstream from choosing rows that collide.
var hashSeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

// hash128 is the change-detection hash: two 64-bit maphash sums of the
// same bytes under independent seeds. It replaced a truncated SHA-256,
// which was about 3% of a cycle's CPU at 10,000 collections: change
// detection needs no cryptographic hash, only one that a change does not
// collide with by chance (2^-128 per comparison here).
type hash128 struct{ a, b maphash.Hash }

func (h *hash128) reset() {
	h.a.SetSeed(hashSeeds[0])
	h.b.SetSeed(hashSeeds[1])
}

func (h *hash128) write(p []byte) {
	_, _ = h.a.Write(p) // never fails
	_, _ = h.b.Write(p)
}

func (h *hash128) sum16() [16]byte {
	var s [16]byte
	binary.LittleEndian.PutUint64(s[:8], h.a.Sum64())
	binary.LittleEndian.PutUint64(s[8:], h.b.Sum64())
	return s
}

// fieldHasher writes fields, each terminated, into a hash128 through a
// small buffer: the bulk kinds (listings, tokens) hash this way instead of
// through JSON. A cycle at 100,000 collections hashes about 6.5 million
// rows; hashing through one buffer per collection allocated about a
// twelfth of the cycle's bytes. The digest is that of the concatenated
// fields, whatever the flush points.
type fieldHasher struct {
	h        hash128
	buf      []byte
	pollTime time.Time
}

// hasherFlushAt is the buffered length at which a row's fields go to the
// hash (the buffer's capacity leaves room for the next row's).
const hasherFlushAt = 4 << 10

var hasherPool = sync.Pool{New: func() any {
	return &fieldHasher{buf: make([]byte, 0, 2*hasherFlushAt)}
}}

func newFieldHasher(pollTime time.Time) *fieldHasher {
	f := hasherPool.Get().(*fieldHasher)
	f.h.reset()
	f.buf = f.buf[:0]
	f.pollTime = pollTime
	return f
}

// sum returns the digest of everything written and releases f.
func (f *fieldHasher) sum() [16]byte {
	f.h.write(f.buf)
	h := f.h.sum16()
	hasherPool.Put(f)
	return h
}

// row ends a row: the buffer goes to the hash once it is long enough.
func (f *fieldHasher) row() {
	if len(f.buf) >= hasherFlushAt {
		f.h.write(f.buf)
		f.buf = f.buf[:0]
	}
}

func (f *fieldHasher) s(v string) { f.buf = append(append(f.buf, v...), 0) }
func (f *fieldHasher) b(v bool) {
	if v {
		f.buf = append(f.buf, 1)
	} else {
		f.buf = append(f.buf, 2)
	}
}
func (f *fieldHasher) t(v time.Time) {
	if v.IsZero() {
		f.buf = append(f.buf, 'z')
		return
	}
	f.buf = binary.BigEndian.AppendUint64(append(f.buf, 't'), uint64(v.UnixNano()))
}
func (f *fieldHasher) tp(v *time.Time) {
	if v == nil {
		f.buf = append(f.buf, 'n')
		return
	}
	f.t(*v)
}
func (f *fieldHasher) ip(v *int64) {
	if v == nil {
		f.buf = append(f.buf, 'n')
		return
	}
	f.s(strconv.FormatInt(*v, 10))
}

// fieldHasher is a readmodel.FieldVisitor: a row's Fields method hands it
// every field, each written terminated. A listing's timestamp equal to
// pollTime (the poll-time default) is left out so it does not count as a
// change.

func (f *fieldHasher) Str(_ string, p *string)         { f.s(*p) }
func (f *fieldHasher) Bool(_ string, p *bool)          { f.b(*p) }
func (f *fieldHasher) Int64Ptr(_ string, p **int64)    { f.ip(*p) }
func (f *fieldHasher) TimePtr(_ string, p **time.Time) { f.tp(*p) }
func (f *fieldHasher) Time(name string, p *time.Time) {
	if name == "timestamp" && p.Equal(f.pollTime) {
		f.t(time.Time{})
	} else {
		f.t(*p)
	}
}
func (f *fieldHasher) Listing(_ string, p **readmodel.ListingRow) {
	if *p == nil {
		f.buf = append(f.buf, 'n')
		return
	}
	f.buf = append(f.buf, 'o')
	f.listing(*p)
}

// listing writes every field of r and ends it.
func (f *fieldHasher) listing(r *readmodel.ListingRow) {
	r.Fields(f)
	f.buf = append(f.buf, '|')
}

func hashListings(rows []readmodel.ListingRow, pollTime time.Time) [16]byte {
	f := newFieldHasher(pollTime)
	for i := range rows {
		f.listing(&rows[i])
		f.row()
	}
	return f.sum()
}

// hashTokens is the content hash of a bucket of docs among buckets: a
// change of the bucket count republishes every bucket (the projector
// trusts what a bucket stored only while the count stays).
func hashTokens(docs []readmodel.TokenDoc, buckets int, pollTime time.Time) [16]byte {
	f := newFieldHasher(pollTime)
	f.buf = binary.AppendUvarint(f.buf, uint64(buckets))
	for i := range docs {
		docs[i].Fields(f)
		f.buf = append(f.buf, '#')
		f.row()
	}
	return f.sum()
}

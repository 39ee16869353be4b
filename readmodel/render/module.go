package render

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/marketd/marketd/readmodel"
)

// View modules. A view kept per collection can be one module: a file of
// this package that declares, in one ViewSpec registered by RegisterView
// (from its init), its name, its key family, its record (encode and
// decode), how a render of the collection derives it, and, when it is
// served as it is, its route and body. The projector derives every
// registered module after each collection render (projector/views.go),
// the store keeps its records under its family with its generic read and
// write (store/module.go), the API reads it by name (httpapi.Reader's
// View) and serves it at its route (httpapi/views.go); none of them names
// a module. The floor history (floorhistory.go) is one.

// Part is a part of a collection's views the projector renders; a module
// is derived after the renders of the parts it names.
type Part uint8

// The parts a module can be derived after.
const (
	PartDetail   Part = 1 << iota // the detail and the browse entries
	PartListings                  // the listing snapshot
	PartFloor                     // the floor
)

// Rendered is a collection as the projector has just rendered it: what a
// module derives its record from. Never modified by a module.
type Rendered struct {
	ID string
	// At is when the messages behind the render were observed: a node
	// that applies the same messages derives the same record.
	At    time.Time
	Parts Part                     // the parts rendered
	Doc   *readmodel.CollectionDoc // nil: the collection has no document yet
	// Listings is the listing snapshot the listings and the floor were
	// rendered from (PartListings or PartFloor); nil otherwise.
	Listings *Snapshot
	// AskFloorRaw is the floor's askFloor as rendered (PartFloor), raw
	// base units; "" when it has none.
	AskFloorRaw string
}

// ViewSpec declares a view module whose record is a T. Name, Family,
// Parts, Derive, Encode and Decode are required; Path, Summary, MaxAge
// and Body only for a module served as it is.
type ViewSpec[T any] struct {
	Name string // unique: the API reads the module by it
	// Family is the store's key prefix of its records (one per
	// collection, keyed by its canonical id): "h/<x>/" for node-local
	// history, outside `marketd digest` (what this node observed; a
	// replay of the compacted streams cannot rebuild it), or "v/m/<x>/"
	// for a view a replay rebuilds, inside the digest. Families of
	// modules never prefix one another; the store keeps nothing else
	// under h/ or v/m/.
	Family string
	Parts  Part // the renders after which it is derived
	// Derive returns the record after render r from the stored one (nil:
	// none) and whether it changed (an unchanged record is not written).
	// It may modify and return rec; it must not keep r.
	Derive func(r *Rendered, rec *T) (next *T, changed bool)
	// Encode and Decode are the record's bytes; the store keeps the
	// record's version beside them. A Decode error is damage: the node
	// rebuilds its views.
	Encode func(rec *T) []byte
	Decode func(b []byte) (*T, error)
	// Size approximates a decoded record's bytes in the store's read
	// cache; nil: its encoding's length.
	Size func(rec *T) int64

	// Path, when set, serves the module as it is at this route pattern
	// under "/v1/collections/:id/" (Fiber's syntax):
	// {"data": Body(...)}, its ETag from the record's version, in the
	// item rate bucket, cached MaxAge seconds at the edge; Summary is its
	// line in the API index. A module with parameters has a handler of
	// its own in httpapi instead (the floor history's).
	Path    string
	Summary string
	MaxAge  int
	// Body renders the data object of collection cid on chain c from its
	// record (nil: none stored yet). It must be valid JSON.
	Body func(cid string, c readmodel.Chain, rec *T) []byte
}

// ViewModule is a registered module, its record's type erased: what the
// store, the projector and the API use. Safe for concurrent use.
type ViewModule interface {
	Name() string
	Family() string
	Parts() Part
	// Derive is ViewSpec.Derive on a record of the module's type (nil:
	// none).
	Derive(r *Rendered, rec any) (next any, changed bool)
	Encode(rec any) []byte
	// Decode returns the record and its approximate size in memory.
	Decode(b []byte) (rec any, size int64, err error)
	Path() string
	Summary() string
	MaxAge() int
	Body(cid string, c readmodel.Chain, rec any) []byte
}

// ViewValue is a module's record for one collection as read for serving.
type ViewValue struct {
	Version uint64 // 0 with a nil Record: none stored yet
	Record  any    // the module's *T; never modified once read
	Size    int64  // approximate bytes held (the store's read cache)
}

// View is a registered module whose record is a T.
type View[T any] struct{ spec ViewSpec[T] }

// Record returns v's record as a *T (nil: none stored, or v is not this
// module's).
func (m *View[T]) Record(v ViewValue) *T {
	r, _ := v.Record.(*T)
	return r
}

// Name, Family, Parts, Path, Summary and MaxAge are the spec's fields;
// Derive, Encode, Decode and Body its functions on a record of any type
// (ViewModule's).
func (m *View[T]) Name() string    { return m.spec.Name }
func (m *View[T]) Family() string  { return m.spec.Family }
func (m *View[T]) Parts() Part     { return m.spec.Parts }
func (m *View[T]) Path() string    { return m.spec.Path }
func (m *View[T]) Summary() string { return m.spec.Summary }
func (m *View[T]) MaxAge() int     { return m.spec.MaxAge }

func (m *View[T]) Derive(r *Rendered, rec any) (any, bool) {
	prev, _ := rec.(*T)
	next, changed := m.spec.Derive(r, prev)
	return next, changed
}

func (m *View[T]) Encode(rec any) []byte { return m.spec.Encode(rec.(*T)) }

func (m *View[T]) Decode(b []byte) (any, int64, error) {
	rec, err := m.spec.Decode(b)
	if err != nil {
		return nil, 0, err
	}
	size := int64(len(b))
	if m.spec.Size != nil {
		size = m.spec.Size(rec)
	}
	return rec, size, nil
}

func (m *View[T]) Body(cid string, c readmodel.Chain, rec any) []byte {
	r, _ := rec.(*T)
	return m.spec.Body(cid, c, r)
}

var (
	viewsMu sync.Mutex                   // serialises registrations
	views   atomic.Pointer[[]ViewModule] // the registered modules, never modified once stored
)

// RegisterView registers the module s declares and returns it. It panics
// when a required field is missing, the name is taken, or the family is
// not under h/ or v/m/, or prefixes (or is prefixed by) another module's:
// registration is a program's, from an init, or a test's. Safe for
// concurrent use with every reader of the modules.
func RegisterView[T any](s ViewSpec[T]) *View[T] {
	if s.Name == "" || s.Parts == 0 || s.Derive == nil || s.Encode == nil || s.Decode == nil || (s.Path != "" && s.Body == nil) {
		panic(fmt.Sprintf("render: view module %q lacks a required field", s.Name))
	}
	if s.Path != "" && !strings.HasPrefix(s.Path, "/v1/collections/:id/") {
		panic(fmt.Sprintf("render: view module %q: its path %q is not under /v1/collections/:id/", s.Name, s.Path))
	}
	if !validFamily(s.Family) {
		panic(fmt.Sprintf("render: view module %q: family %q is not h/<x>/ or v/m/<x>/", s.Name, s.Family))
	}
	viewsMu.Lock()
	defer viewsMu.Unlock()
	cur := Views()
	for _, m := range cur {
		if m.Name() == s.Name {
			panic(fmt.Sprintf("render: view module %q registered twice", s.Name))
		}
		if strings.HasPrefix(m.Family(), s.Family) || strings.HasPrefix(s.Family, m.Family()) {
			panic(fmt.Sprintf("render: view modules %q and %q share the family %q", m.Name(), s.Name, s.Family))
		}
	}
	m := &View[T]{spec: s}
	next := append(append(make([]ViewModule, 0, len(cur)+1), cur...), m)
	views.Store(&next)
	return m
}

// UnregisterView removes the module named name: for a test that
// registered one of its own (at its cleanup).
func UnregisterView(name string) {
	viewsMu.Lock()
	defer viewsMu.Unlock()
	cur := Views()
	next := make([]ViewModule, 0, len(cur))
	for _, m := range cur {
		if m.Name() != name {
			next = append(next, m)
		}
	}
	views.Store(&next)
}

func validFamily(f string) bool {
	for _, under := range []string{"h/", "v/m/"} {
		if x, ok := strings.CutPrefix(f, under); ok && len(x) > 1 && strings.HasSuffix(x, "/") {
			return true
		}
	}
	return false
}

// Views returns the registered modules in their order of registration.
// The slice is never modified.
func Views() []ViewModule {
	if p := views.Load(); p != nil {
		return *p
	}
	return nil
}

// LookupView returns the registered module named name.
func LookupView(name string) (ViewModule, bool) {
	for _, m := range Views() {
		if m.Name() == name {
			return m, true
		}
	}
	return nil, false
}

// RecordWriter appends a module's record: uvarints, varints, strings
// (Str: length first) and flags (one byte, 0 or 1).
type RecordWriter struct{ B []byte }

// Uint, Int, Str and Flag append one value each.
func (w *RecordWriter) Uint(v uint64) { w.B = binary.AppendUvarint(w.B, v) }
func (w *RecordWriter) Int(v int64)   { w.B = binary.AppendVarint(w.B, v) }
func (w *RecordWriter) Str(s string) {
	w.Uint(uint64(len(s)))
	w.B = append(w.B, s...)
}
func (w *RecordWriter) Flag(f bool) {
	b := byte(0)
	if f {
		b = 1
	}
	w.B = append(w.B, b)
}

// RecordReader reads what a RecordWriter wrote. A read past the end or of
// a malformed number marks it bad and returns zero values; Err reports it.
type RecordReader struct {
	b   []byte
	bad bool
}

// NewRecordReader reads b.
func NewRecordReader(b []byte) *RecordReader { return &RecordReader{b: b} }

// ErrCorruptRecord is what RecordReader.Err reports for a record that is
// cut, malformed or longer than what was read.
var ErrCorruptRecord = errors.New("render: corrupt view record")

// Left is how many bytes are left unread.
func (r *RecordReader) Left() int { return len(r.b) }

// Fail marks the record bad (a value out of its range).
func (r *RecordReader) Fail() { r.bad, r.b = true, nil }

// Err is ErrCorruptRecord when a read failed or bytes are left, else nil.
func (r *RecordReader) Err() error {
	if r.bad || len(r.b) != 0 {
		return ErrCorruptRecord
	}
	return nil
}

// Bad reports whether a read failed.
func (r *RecordReader) Bad() bool { return r.bad }

// Uint, Int and Str read one value each (zero when it fails).
func (r *RecordReader) Uint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.Fail()
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *RecordReader) Int() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.Fail()
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *RecordReader) Str() string {
	n := r.Uint()
	if r.bad || n > uint64(len(r.b)) {
		r.Fail()
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

// Flag reads a flag: true for 1, false for any other byte.
func (r *RecordReader) Flag() bool {
	if len(r.b) < 1 {
		r.bad = true
		return false
	}
	f := r.b[0] == 1
	r.b = r.b[1:]
	return f
}

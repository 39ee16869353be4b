package render

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel"
)

func TestRegisterView(t *testing.T) {
	spec := func(name, family, path string) ViewSpec[int] {
		return ViewSpec[int]{
			Name: name, Family: family, Parts: PartFloor, Path: path,
			Derive: func(_ *Rendered, rec *int) (*int, bool) { return rec, false },
			Encode: func(*int) []byte { return nil },
			Decode: func([]byte) (*int, error) { return new(int), nil },
			Body:   func(string, readmodel.Chain, *int) []byte { return []byte("{}") },
		}
	}
	tests := []struct {
		name  string
		spec  ViewSpec[int]
		panic bool
	}{
		{name: "history family", spec: spec("a", "h/test-a/", "")},
		{name: "digest family, served", spec: spec("b", "v/m/test-b/", "/v1/collections/:id/b")},
		{name: "name taken", spec: spec(FloorHistoryView.Name(), "h/test-c/", ""), panic: true},
		{name: "family of another module", spec: spec("d", "h/f/", ""), panic: true},
		{name: "family inside another's", spec: spec("e", "h/f/x/", ""), panic: true},
		{name: "family around another's", spec: spec("f", "h/", ""), panic: true},
		{name: "a view family the store owns", spec: spec("g", "v/c/", ""), panic: true},
		{name: "no trailing slash", spec: spec("h", "h/test-h", ""), panic: true},
		{name: "path outside a collection", spec: spec("i", "h/test-i/", "/v1/i"), panic: true},
		{name: "no derive", spec: func() ViewSpec[int] { s := spec("j", "h/test-j/", ""); s.Derive = nil; return s }(), panic: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.panic {
				assert.Panics(t, func() { RegisterView(tc.spec) })
				_, ok := LookupView(tc.spec.Name)
				assert.Equal(t, tc.spec.Name == FloorHistoryView.Name(), ok, "a refused module is not registered")
				return
			}
			m := RegisterView(tc.spec)
			t.Cleanup(func() { UnregisterView(tc.spec.Name) })
			got, ok := LookupView(tc.spec.Name)
			require.True(t, ok)
			assert.Equal(t, ViewModule(m), got)
			assert.Contains(t, Views(), got)
		})
	}
}

func TestRecordReader(t *testing.T) {
	w := RecordWriter{}
	w.Uint(300)
	w.Int(-5)
	w.Str("floor")
	w.Flag(true)
	r := NewRecordReader(w.B)
	assert.Equal(t, uint64(300), r.Uint())
	assert.Equal(t, int64(-5), r.Int())
	assert.Equal(t, "floor", r.Str())
	assert.True(t, r.Flag())
	assert.NoError(t, r.Err())
	for cut := 0; cut < len(w.B); cut++ {
		r := NewRecordReader(w.B[:cut])
		r.Uint()
		r.Int()
		r.Str()
		r.Flag()
		assert.ErrorIs(t, r.Err(), ErrCorruptRecord, "cut at %d", cut)
	}
	r = NewRecordReader(append(w.B, 0))
	r.Uint()
	r.Int()
	r.Str()
	r.Flag()
	assert.ErrorIs(t, r.Err(), ErrCorruptRecord, "a byte left over")
}

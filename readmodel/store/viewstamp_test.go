package store

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/render"
)

// TestViewWrittenOnlyWhenChanged: a view is rewritten only when its content
// changed (an unchanged one keeps its version), however the store knows what
// it holds: a stamp of this store's commits, a write earlier in the same
// transaction, or, after a reopen, the stored view. A transaction that
// failed, a deleted view and a Reset leave nothing behind that would keep a
// later write out.
func TestViewWrittenOnlyWhenChanged(t *testing.T) {
	const cid = "base:0xabc"
	ctx := context.Background()
	floor := func(body string, version uint64) render.FloorView {
		return render.FloorView{Version: version, Body: render.TimedBody{Head: []byte(body)}}
	}
	errAbort := errors.New("abort")
	type step struct {
		puts   []render.FloorView // in one transaction
		del    bool               // DeleteFloor first, in the same transaction
		fail   bool               // the transaction returns an error
		reset  bool               // Reset instead
		reopen bool               // close and open the store instead
	}
	tests := []struct {
		name  string
		steps []step
		want  *render.FloorView // nil: no floor view
	}{
		{name: "unchanged keeps its version",
			steps: []step{{puts: []render.FloorView{floor(`{"a":1}`, 1)}}, {puts: []render.FloorView{floor(`{"a":1}`, 2)}}},
			want:  &render.FloorView{Version: 1, Body: render.TimedBody{Head: []byte(`{"a":1}`)}}},
		{name: "changed is written",
			steps: []step{{puts: []render.FloorView{floor(`{"a":1}`, 1)}}, {puts: []render.FloorView{floor(`{"a":2}`, 2)}}},
			want:  &render.FloorView{Version: 2, Body: render.TimedBody{Head: []byte(`{"a":2}`)}}},
		{name: "back to an earlier content is written",
			steps: []step{{puts: []render.FloorView{floor(`{"a":1}`, 1)}}, {puts: []render.FloorView{floor(`{"a":2}`, 2)}}, {puts: []render.FloorView{floor(`{"a":1}`, 3)}}},
			want:  &render.FloorView{Version: 3, Body: render.TimedBody{Head: []byte(`{"a":1}`)}}},
		{name: "a failed transaction leaves no trace",
			steps: []step{{puts: []render.FloorView{floor(`{"a":1}`, 1)}}, {puts: []render.FloorView{floor(`{"a":2}`, 2)}, fail: true}, {puts: []render.FloorView{floor(`{"a":2}`, 3)}}},
			want:  &render.FloorView{Version: 3, Body: render.TimedBody{Head: []byte(`{"a":2}`)}}},
		{name: "deleted, then the same content again",
			steps: []step{{puts: []render.FloorView{floor(`{"a":1}`, 1)}}, {del: true}, {puts: []render.FloorView{floor(`{"a":1}`, 2)}}},
			want:  &render.FloorView{Version: 2, Body: render.TimedBody{Head: []byte(`{"a":1}`)}}},
		{name: "deleted and written in one transaction",
			steps: []step{{puts: []render.FloorView{floor(`{"a":1}`, 1)}}, {del: true, puts: []render.FloorView{floor(`{"a":1}`, 2)}}},
			want:  &render.FloorView{Version: 2, Body: render.TimedBody{Head: []byte(`{"a":1}`)}}},
		{name: "deleted",
			steps: []step{{puts: []render.FloorView{floor(`{"a":1}`, 1)}}, {del: true}}},
		{name: "twice in one transaction, unchanged the second time",
			steps: []step{{puts: []render.FloorView{floor(`{"a":1}`, 1), floor(`{"a":1}`, 2)}}},
			want:  &render.FloorView{Version: 1, Body: render.TimedBody{Head: []byte(`{"a":1}`)}}},
		{name: "twice in one transaction, changed the second time",
			steps: []step{{puts: []render.FloorView{floor(`{"a":1}`, 1)}}, {puts: []render.FloorView{floor(`{"a":2}`, 2), floor(`{"a":1}`, 3)}}},
			want:  &render.FloorView{Version: 3, Body: render.TimedBody{Head: []byte(`{"a":1}`)}}},
		{name: "after a reset the same content is written",
			steps: []step{{puts: []render.FloorView{floor(`{"a":1}`, 1)}}, {reset: true}, {puts: []render.FloorView{floor(`{"a":1}`, 2)}}},
			want:  &render.FloorView{Version: 2, Body: render.TimedBody{Head: []byte(`{"a":1}`)}}},
		{name: "after a reopen, unchanged keeps its version",
			steps: []step{{puts: []render.FloorView{floor(`{"a":1}`, 1)}}, {reopen: true}, {puts: []render.FloorView{floor(`{"a":1}`, 2)}}},
			want:  &render.FloorView{Version: 1, Body: render.TimedBody{Head: []byte(`{"a":1}`)}}},
		{name: "after a reopen, read once, unchanged twice",
			steps: []step{{puts: []render.FloorView{floor(`{"a":1}`, 1)}}, {reopen: true}, {puts: []render.FloorView{floor(`{"a":1}`, 2)}}, {puts: []render.FloorView{floor(`{"a":1}`, 3)}}},
			want:  &render.FloorView{Version: 1, Body: render.TimedBody{Head: []byte(`{"a":1}`)}}},
		{name: "after a reopen, read by a failed transaction",
			steps: []step{{puts: []render.FloorView{floor(`{"a":1}`, 1)}}, {reopen: true}, {puts: []render.FloorView{floor(`{"a":2}`, 2)}, fail: true}, {puts: []render.FloorView{floor(`{"a":2}`, 3)}}},
			want:  &render.FloorView{Version: 3, Body: render.TimedBody{Head: []byte(`{"a":2}`)}}},
		{name: "after a reopen, changed is written",
			steps: []step{{puts: []render.FloorView{floor(`{"a":1}`, 1)}}, {reopen: true}, {puts: []render.FloorView{floor(`{"a":2}`, 2)}}},
			want:  &render.FloorView{Version: 2, Body: render.TimedBody{Head: []byte(`{"a":2}`)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s, err := Open(ctx, dir, Options{MemTableSize: 8 << 20})
			require.NoError(t, err)
			t.Cleanup(func() { _ = s.Close(ctx) })
			for _, st := range tt.steps {
				switch {
				case st.reset:
					require.NoError(t, s.Reset(ctx))
				case st.reopen:
					require.NoError(t, s.Close(ctx))
					s, err = Open(ctx, dir, Options{MemTableSize: 8 << 20})
					require.NoError(t, err)
				default:
					err := s.Update(ctx, func(tx *Tx) error {
						if st.del {
							tx.DeleteFloor(cid)
						}
						for _, v := range st.puts {
							tx.PutFloor(cid, v)
						}
						if st.fail {
							return errAbort
						}
						return nil
					})
					if st.fail {
						require.Error(t, err)
					} else {
						require.NoError(t, err)
					}
				}
			}
			got, err := s.Floor(ctx, cid)
			if tt.want == nil {
				assert.Equal(t, readmodel.NotFound, readmodel.ErrorCode(err))
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want.Version, got.Version)
			assert.Equal(t, string(tt.want.Body.Head), string(got.Body.Head))
		})
	}
}

// TestListingsStampedAcrossTransactions: a listing snapshot rewritten
// unchanged keeps its version, and one changed after it was served keeps
// the superseded snapshot readable by version, when the store knows the
// stored snapshot only by its stamp.
func TestListingsStampedAcrossTransactions(t *testing.T) {
	ctx := context.Background()
	s := mustOpen(t)
	put := func(token string) uint64 { return mustPutListing(t, s, "c", token) }
	first := put("1")
	put("1")
	cur, err := s.Listings(ctx, "c", 0)
	require.NoError(t, err)
	assert.Equal(t, first, cur.Version, "unchanged: the stored snapshot keeps its version")
	second := put("2")
	cur, err = s.Listings(ctx, "c", 0)
	require.NoError(t, err)
	assert.Equal(t, second, cur.Version)
	old, err := s.Listings(ctx, "c", first)
	require.NoError(t, err)
	assert.Equal(t, first, old.Version, "the served snapshot it superseded stays readable")
}

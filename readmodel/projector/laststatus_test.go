package projector_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/projector"
)

// TestFailingStatusKeepsTheLastGoodTime: a failing poll status that does
// not know when its source last answered well (an ingest that restarted)
// keeps the time the views knew, so the last good rows stay servable for
// the retention after it; one that knows, or a source never good, is
// taken as it comes.
func TestFailingStatusKeepsTheLastGoodTime(t *testing.T) {
	t1 := t0.Add(time.Hour)
	for _, tc := range []struct {
		name string
		msgs []*readmodel.Message
		want time.Time
	}{
		{name: "after a success", want: t0, msgs: []*readmodel.Message{
			statusMsg(readmodel.SourceCollectionIndex, "", true, t0),
			statusMsg(readmodel.SourceCollectionIndex, "", false, time.Time{}),
		}},
		{name: "after a failure that knew", want: t0, msgs: []*readmodel.Message{
			statusMsg(readmodel.SourceCollectionIndex, "", false, t0),
			statusMsg(readmodel.SourceCollectionIndex, "", false, time.Time{}),
		}},
		{name: "its own time wins", want: t1, msgs: []*readmodel.Message{
			statusMsg(readmodel.SourceCollectionIndex, "", true, t0),
			statusMsg(readmodel.SourceCollectionIndex, "", false, t1),
		}},
		{name: "never good", want: time.Time{}, msgs: []*readmodel.Message{
			statusMsg(readmodel.SourceCollectionIndex, "", false, time.Time{}),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := mustEnv(t)
			for _, m := range tc.msgs {
				e.run(m) // one at a time: the state stream keeps a subject's latest only
			}
			st, ok, err := projector.SourceStatus(context.Background(), e.st, readmodel.SourceCollectionIndex, "")
			require.NoError(t, err)
			require.True(t, ok)
			assert.False(t, st.OK)
			assert.True(t, tc.want.Equal(st.LastGoodAt), "last good %v, want %v", st.LastGoodAt, tc.want)
		})
	}
}

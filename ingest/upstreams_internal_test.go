package ingest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/ingest/source"
	"github.com/marketd/marketd/readmodel"
)

// TestUpstreamsRegistration: every source has pollers, each poller
// belongs to the source it is registered under and polls under its own
// name, and exactly one poll is the collection list. What each poller
// must do is TestPollerContract's.
func TestUpstreamsRegistration(t *testing.T) {
	names := map[string]bool{}
	lists := 0
	for _, s := range readmodel.Sources {
		mk, ok := upstreams[s]
		require.True(t, ok, "source %s has no registered poller", s)
		ps := mk(source.NewClient(s, "http://127.0.0.1:1/"+string(s), 0, nil))
		require.NotEmpty(t, ps, "source %s", s)
		for _, p := range ps {
			sp := p.Spec()
			assert.Equal(t, s, sp.Source, "poller %s", sp.Name)
			assert.False(t, names[sp.Name], "poll name %s used twice", sp.Name)
			names[sp.Name] = true
			if sp.Collections == source.Lists {
				lists++
				assert.True(t, sp.First, "the collection list is polled first")
			}
			if sp.Status == source.PerCollection {
				assert.Equal(t, source.Checked, sp.Collections, "poller %s: per-collection statuses need checked collections", sp.Name)
			}
		}
	}
	assert.Len(t, upstreams, len(readmodel.Sources), "a registered upstream is not in readmodel.Sources")
	assert.Equal(t, 1, lists)
}

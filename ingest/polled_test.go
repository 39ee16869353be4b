package ingest_test

import (
	"context"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/marketd/marketd/readmodel"
)

// TestPolledEveryCycle: each successful poll says so every cycle, changed
// or not, after its statuses; a failing poll does not.
func TestPolledEveryCycle(t *testing.T) {
	e := MustEnv(t, nil)
	polls := func() []string {
		var out []string
		for _, m := range e.pub.takePolled() {
			require.NotNil(t, m.Polled)
			assert.Equal(t, m.ObservedAt, m.Polled.At, "the cycle's start, as LastGoodAt")
			out = append(out, m.Polled.Poll)
		}
		sort.Strings(out)
		return out
	}
	all := append([]string(nil), readmodel.Polls...)
	sort.Strings(all)

	_, err := e.in.RunCycle(context.Background())
	require.NoError(t, err)
	e.pub.take()
	assert.Equal(t, all, polls(), "first cycle: every poll")

	_, err = e.in.RunCycle(context.Background())
	require.NoError(t, err)
	assert.Empty(t, e.pub.take(), "nothing changed")
	assert.Equal(t, all, polls(), "an unchanged cycle still says every poll succeeded")

	e.fault(t, readmodel.SourceOrderBook, "error")
	_, err = e.in.RunCycle(context.Background())
	require.NoError(t, err)
	got := polls()
	assert.NotContains(t, got, string(readmodel.SourceOrderBook), "a failed poll is not a success")
	assert.Len(t, got, len(all)-1)
}

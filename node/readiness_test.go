package node

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestMarkReadyCallsOnReadyOnce: the serving memory limit is set when the
// node is first ready, not again when readiness is recorded a second time.
func TestMarkReadyCallsOnReadyOnce(t *testing.T) {
	calls := 0
	r := NewReadiness(func() { calls++ })
	assert.False(t, r.Marked())
	r.MarkReady()
	r.MarkReady()
	assert.True(t, r.Marked())
	assert.Equal(t, 1, calls)
}

// TestReadinessOrder: a check of Require comes first, then the reason
// given until the node is first ready, then a check of RequireServing.
func TestReadinessOrder(t *testing.T) {
	var bus, lag string
	r := NewReadiness(nil)
	r.Require(func() string { return bus })
	r.RequireServing(func() string { return lag })
	steps := []struct {
		name   string
		do     func()
		reason string // "" ready
	}{
		{"before anything", func() {}, "starting"},
		{"waiting for a first cycle", func() { r.Until(Fixed("first ingest cycle not yet published")) }, "first ingest cycle not yet published"},
		{"a serving check does not count before", func() { lag = "behind" }, "first ingest cycle not yet published"},
		{"a required check comes first", func() { bus = "bus unreachable" }, "bus unreachable"},
		{"marked, the bus still down", func() { r.MarkReady() }, "bus unreachable"},
		{"the bus back, lagging", func() { bus = "" }, "behind"},
		{"caught up", func() { lag = "" }, ""},
	}
	for _, s := range steps {
		s.do()
		ok, reason := r.Readiness()
		assert.Equal(t, s.reason == "", ok, s.name)
		assert.Equal(t, s.reason, reason, s.name)
		assert.Equal(t, ok, r.Ready(), s.name)
	}
}

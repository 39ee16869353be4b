package main

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/marketd/marketd/internal/pace"
)

// yieldOf is the Yield the projector and ingest call between units of
// work: gate's, or nil (their default) when this process serves no reads.
func yieldOf(gate *pace.Gate) func() {
	if gate == nil {
		return nil
	}
	return gate.Yield
}

// registerPaceMetrics exposes how long background work gave way to reads.
func registerPaceMetrics(reg *prometheus.Registry, gate *pace.Gate) {
	reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "marketd_background_paused_seconds_total",
		Help: "Time ingest and the projector slept to let arriving reads run first, summed over their goroutines."},
		func() float64 { return gate.Stats().Paused.Seconds() }))
	reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "marketd_background_pauses_total",
		Help: "Times ingest or the projector slept to let arriving reads run first."},
		func() float64 { return float64(gate.Stats().Pauses) }))
}

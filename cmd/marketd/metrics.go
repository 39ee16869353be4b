package main

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// newRegistry is a long-running role's metrics: the Go runtime's, the
// process's and marketd_build_info.
func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	registerBuildInfo(reg)
	return reg
}

// registerBuildInfo exposes marketd_build_info{version, revision,
// goversion} 1, Prometheus' _info convention.
func registerBuildInfo(reg *prometheus.Registry) {
	b := readBuildInfo()
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "marketd_build_info",
		Help:        "Build of this binary: version, VCS revision and Go version; always 1.",
		ConstLabels: prometheus.Labels{"version": b.Version, "revision": b.Revision, "goversion": b.GoVersion},
	})
	g.Set(1)
	reg.MustRegister(g)
}

package httpapi

import (
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// httpMetrics are the API's own metrics: request counts and latency
// histograms by route pattern (never the raw path) and status, and rate
// limit rejections by bucket.
type httpMetrics struct {
	requests    *prometheus.CounterVec
	latency     *prometheus.HistogramVec
	rateLimited *prometheus.CounterVec
}

func newHTTPMetrics(reg *prometheus.Registry) (*httpMetrics, error) {
	m := &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "marketd_http_requests_total",
			Help: "Public API requests by route pattern and HTTP status.",
		}, []string{"route", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "marketd_http_request_duration_seconds",
			Help:    "Public API request latency by route pattern and HTTP status.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1},
		}, []string{"route", "status"}),
		rateLimited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "marketd_http_rate_limited_total",
			Help: "Requests answered 429 by rate bucket.",
		}, []string{"bucket"}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.latency, m.rateLimited} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// routeObservers caches the metric children of one route per status, so a
// request does no label formatting or map lookup beyond the first.
type routeObservers struct {
	m     *httpMetrics
	route string
	mu    sync.RWMutex
	by    map[int]statusObservers
}

type statusObservers struct {
	count   prometheus.Counter
	latency prometheus.Observer
}

func (m *httpMetrics) route(pattern string) *routeObservers {
	return &routeObservers{m: m, route: pattern, by: make(map[int]statusObservers)}
}

// observe records one request of this route that ended with status,
// started at start.
func (o *routeObservers) observe(status int, start time.Time) {
	o.mu.RLock()
	so, ok := o.by[status]
	o.mu.RUnlock()
	if !ok {
		st := strconv.Itoa(status)
		so = statusObservers{
			count:   o.m.requests.WithLabelValues(o.route, st),
			latency: o.m.latency.WithLabelValues(o.route, st),
		}
		o.mu.Lock()
		o.by[status] = so
		o.mu.Unlock()
	}
	so.count.Inc()
	so.latency.Observe(time.Since(start).Seconds())
}

package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"
)

// Admin is what the admin listener needs; each role of cmd/marketd
// implements it over the parts it runs, answering an error for what it
// lacks (an ingest action on a node without ingest, a snapshot on one
// without views). Its methods are called concurrently.
type Admin interface {
	// Readiness reports whether the node is ready and, when it is not,
	// why (the bus is unreachable, the projector stalled, the views lag
	// the streams by more than one cycle, ...).
	Readiness() (ready bool, reason string)
	// RunIngest runs one ingest cycle and returns once the projector (if
	// the node has one) has applied it, with a JSON-encodable summary. An
	// error (for example a role without ingest) is answered 503.
	RunIngest(ctx context.Context) (any, error)
	// RunFullIngest is RunIngest with a cycle that publishes every row,
	// skipping nothing as unchanged, so that a damaged state stream heals;
	// with purge, the state stream's messages are removed first (its
	// damaged blocks with them).
	RunFullIngest(ctx context.Context, purge bool) (any, error)
	// PublishSnapshot writes the node's views as the tier's views
	// snapshot now and returns a JSON-encodable description of it.
	PublishSnapshot(ctx context.Context) (any, error)
	// Sources returns per-source status (last success, last failure, error
	// class), JSON-encodable.
	Sources(ctx context.Context) (any, error)
}

// AdminServer is the admin listener (DESIGN: 127.0.0.1:8081, never the
// public port):
//
//	GET  /healthz        200 {"ok":true}
//	GET  /readyz         200 {"ready":true}, or 503 {"ready":false[,"reason":...]}
//	GET  /metrics        Prometheus text format of the registry
//	POST /admin/ingest   200 JSON summary of one ingest cycle; 503 on error, 504 past its deadline;
//	                     ?full=true republishes every row, &purge=true after purging the
//	                     state stream
//	GET  /admin/sources  200 JSON per-source status; 503 on error
//	POST /admin/snapshot 200 JSON description of the views snapshot it published; 503 on
//	                     error or on a node without views
//	GET  /debug/pprof/   Go runtime profiles (heap, CPU, goroutines), for operators
//
// It is a plain net/http server. Serve with Listen, stop with Shutdown.
type AdminServer struct {
	a   Admin
	log zerolog.Logger
	srv *http.Server
	mux *http.ServeMux
}

// NewAdmin builds the admin listener over a, serving reg at /metrics (nil
// reg serves a registry of its own), to which it adds marketd_ready.
func NewAdmin(a Admin, reg *prometheus.Registry, log zerolog.Logger) *AdminServer {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	s := &AdminServer{a: a, log: log.With().Str("component", "admin").Logger(), mux: http.NewServeMux()}
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeAdminJSON(w, http.StatusOK, map[string]bool{"ok": true})
	})
	s.mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if ready, reason := a.Readiness(); !ready {
			body := map[string]any{"ready": false}
			if reason != "" {
				body["reason"] = reason
			}
			writeAdminJSON(w, http.StatusServiceUnavailable, body)
			return
		}
		writeAdminJSON(w, http.StatusOK, map[string]bool{"ready": true})
	})
	// What /readyz answers, for alerting (deploy/prometheus). A second
	// admin server on the same registry keeps the first one's gauge.
	_ = reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "marketd_ready",
		Help: "1 when the node is ready (/readyz answers 200), else 0; /readyz says why not."},
		func() float64 {
			if ready, _ := a.Readiness(); ready {
				return 1
			}
			return 0
		}))
	s.mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	// Profiles are safe here: the admin listener is loopback-only by default.
	s.mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	s.mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	s.mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	s.mux.HandleFunc("POST /admin/ingest", func(w http.ResponseWriter, r *http.Request) {
		full, ok1 := adminBool(r.URL.Query().Get("full"))
		purge, ok2 := adminBool(r.URL.Query().Get("purge"))
		switch {
		case !ok1 || !ok2 || (purge && !full):
			writeAdminJSON(w, http.StatusBadRequest, errorBody{Error: errorObject{Code: "bad_request", Message: "full and purge must be true or false, and purge needs full"}})
		case !full:
			s.answer(w, "ingest", func() (any, error) { return a.RunIngest(r.Context()) })
		default:
			s.answer(w, "ingest", func() (any, error) { return a.RunFullIngest(r.Context(), purge) })
		}
	})
	s.mux.HandleFunc("POST /admin/snapshot", func(w http.ResponseWriter, r *http.Request) {
		s.answer(w, "snapshot", func() (any, error) { return a.PublishSnapshot(r.Context()) })
	})
	s.mux.HandleFunc("GET /admin/sources", func(w http.ResponseWriter, r *http.Request) {
		s.answer(w, "sources", func() (any, error) { return a.Sources(r.Context()) })
	})
	s.srv = &http.Server{
		Handler:           s.mux,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       75 * time.Second,
	}
	return s
}

// Handler returns the admin HTTP handler (for tests).
func (s *AdminServer) Handler() http.Handler { return s.mux }

// Listen serves on ln until Shutdown; it returns nil after a clean
// shutdown.
func (s *AdminServer) Listen(ln net.Listener) error {
	if err := s.srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Shutdown stops the listener and waits for in-flight requests until ctx is
// done.
func (s *AdminServer) Shutdown(ctx context.Context) error { return s.srv.Shutdown(ctx) }

func (s *AdminServer) answer(w http.ResponseWriter, what string, f func() (any, error)) {
	v, err := f()
	if errors.Is(err, context.DeadlineExceeded) {
		s.log.Warn().Err(err).Str("op", what).Msg("admin request ran out of time")
		writeAdminJSON(w, http.StatusGatewayTimeout, errorBody{Error: errorObject{Code: "timeout", Message: err.Error()}})
		return
	}
	if err != nil {
		s.log.Warn().Err(err).Str("op", what).Msg("admin request failed")
		writeAdminJSON(w, http.StatusServiceUnavailable, errorBody{Error: errorObject{Code: "unavailable", Message: err.Error()}})
		return
	}
	writeAdminJSON(w, http.StatusOK, v)
}

// adminBool parses an admin query flag: "" is false.
func adminBool(v string) (value, ok bool) {
	switch v {
	case "", "false", "0":
		return false, true
	case "true", "1":
		return true, true
	}
	return false, false
}

func writeAdminJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"code":"internal","message":"response not encodable"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

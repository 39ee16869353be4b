package node

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/marketd/marketd/readmodel/projector"
)

// rebuildGauges show where a rebuild of the views stands, as the replay
// reports it (projector.Progress); all 0 when none runs.
type rebuildGauges struct {
	done, size        *prometheus.GaugeVec // by unit: messages (apply phases), records (write)
	collections, left prometheus.Gauge
}

// Units of marketd_views_rebuild_done and _size: what the phase counts.
const (
	unitMessages = "messages"
	unitRecords  = "records"
)

func newRebuildGauges() rebuildGauges {
	g := rebuildGauges{
		done: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "marketd_views_rebuild_done",
			Help: "Work the rebuild of the views under way has done in its phase: messages applied (apply phases) or records written (write).",
		}, []string{"unit"}),
		size: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "marketd_views_rebuild_size",
			Help: "The work of the rebuild's phase under way: messages to apply (apply phases) or records to write (write); 0 while unknown.",
		}, []string{"unit"}),
		collections: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "marketd_views_rebuild_collections",
			Help: "Collections the rebuild of the views under way has built so far.",
		}),
		left: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "marketd_views_rebuild_seconds_left",
			Help: "Estimate of the seconds the rebuild's phase under way still takes, at its rate so far; -1 while unknown.",
		}),
	}
	for _, u := range []string{unitMessages, unitRecords} {
		g.done.WithLabelValues(u)
		g.size.WithLabelValues(u)
	}
	return g
}

// set shows pr (the zero Progress: no rebuild).
func (g rebuildGauges) set(pr projector.Progress) {
	unit, other := unitMessages, unitRecords
	if pr.Phase == projector.PhaseWrite {
		unit, other = other, unit
	}
	g.done.WithLabelValues(unit).Set(float64(pr.Done))
	g.size.WithLabelValues(unit).Set(float64(pr.Total))
	g.done.WithLabelValues(other).Set(0)
	g.size.WithLabelValues(other).Set(0)
	g.collections.Set(float64(pr.Collections))
	left := pr.Left.Seconds()
	if pr.Left < 0 {
		left = -1
	}
	g.left.Set(left)
}

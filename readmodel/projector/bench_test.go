package projector_test

import (
	"testing"
	"time"
)

// BenchmarkApply measures the apply rate (messages/s) of one large cycle
// from a real NATS stream into a real Badger store.
func BenchmarkApply(b *testing.B) {
	e := mustEnv(b)
	msgs := cycle(300, 1)
	e.publish(msgs...)
	b.ResetTimer()
	var total int
	var elapsed time.Duration
	for i := 0; i < b.N; i++ {
		_, p := e.mustNode(b.TempDir())
		start := time.Now()
		n, err := p.ApplyAvailable(b.Context())
		if err != nil {
			b.Fatal(err)
		}
		elapsed += time.Since(start)
		total += n
	}
	b.ReportMetric(float64(total)/elapsed.Seconds(), "msgs/s")
}

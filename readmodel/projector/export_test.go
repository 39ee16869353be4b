package projector

// SetAfterSweepBatch makes Sweep call f after each of its batches, once it
// released the write lock. Set it before sweeping.
func SetAfterSweepBatch(p *Projector, f func()) { p.afterSweepBatch = f }

// WriteLockFree reports whether the projector's write lock is free at
// this moment (taking and releasing it).
func WriteLockFree(p *Projector) bool {
	if !p.applyMu.TryLock() {
		return false
	}
	p.applyMu.Unlock()
	return true
}

var ETA = eta

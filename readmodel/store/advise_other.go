//go:build !linux

package store

const (
	adviseRandom = 0
	adviseNormal = 0
)

// adviseValueLog does nothing where /proc/self/maps does not say where
// the value log is mapped.
func (s *Store) adviseValueLog(int) int { return 0 }

const restoreSyncEvery = 1 << 62

func syncWritten() {}

package store

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestAdviseFindsTheValueLog: the snapshot's advice reaches the mapped
// value-log files of this store, and only those.
func TestAdviseFindsTheValueLog(t *testing.T) {
	s := mustOpenSmallLog(t)
	rewriteViews(t, s, 2)
	other := mustOpenSmallLog(t)
	n := s.adviseValueLog(adviseRandom)
	assert.Positive(t, n, "the store's value-log files are mapped")
	assert.Equal(t, n, s.adviseValueLog(adviseNormal))
	assert.Less(t, other.adviseValueLog(adviseNormal), n, "another store's files are not this one's")
}

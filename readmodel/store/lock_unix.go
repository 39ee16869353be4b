//go:build unix

package store

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"

	"github.com/marketd/marketd/readmodel"
)

// LockDir takes the directory lock Badger takes on Open (an exclusive
// flock on dir itself) without opening the store, which would replay its
// value log and allocate its memtables. It fails with an Internal error
// when another store holds dir, in this process or another; while the
// returned release has not been called, no store can be opened on dir.
// A missing dir is not locked and releases as a no-op.
func LockDir(dir string) (release func(), err error) {
	f, err := os.Open(dir)
	if errors.Is(err, os.ErrNotExist) {
		return func() {}, nil
	}
	if err != nil {
		return nil, readmodel.Wrap(readmodel.Internal, err, "open "+dir)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		_ = f.Close()
		return nil, readmodel.Wrap(readmodel.Internal, err, "views in "+dir+" are in use; stop the node first")
	}
	return func() { _ = f.Close() }, nil // closing the descriptor drops its flock
}

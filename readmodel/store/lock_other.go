//go:build !unix

package store

import (
	"context"
	"errors"
	"os"
)

// LockDir reports whether a store can be opened on dir by opening and
// closing one: without flock this platform cannot hold Badger's lock
// from outside a store, so release is a no-op.
func LockDir(dir string) (release func(), err error) {
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return func() {}, nil
	}
	s, err := Open(context.Background(), dir, Options{})
	if err != nil {
		return nil, err
	}
	if err := s.Close(context.Background()); err != nil {
		return nil, err
	}
	return func() {}, nil
}

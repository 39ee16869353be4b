// Package damage damages a Badger directory the ways an operator may find
// a view store after a crash or a failing disk (the rows of the Damaged
// storage table in docs/operating.md), for the tests that check a damaged
// view store heals (readmodel/store, cmd/marketd). scripts/reliability
// does the same with shell tools on a stopped node.
package damage

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// A Case is one kind of damage to a Badger directory.
type Case struct {
	Name string
	Do   func(dir string) error
}

// Cases are the rows of docs/operating.md's Damaged storage table: a table
// removed, truncated or garbled, the MANIFEST emptied, the value log
// truncated or garbled. Each needs a directory Badger closed cleanly (at
// least one table and one value log).
var Cases = []Case{
	{"sst removed", func(dir string) error {
		f, err := first(dir, "*.sst")
		if err != nil {
			return err
		}
		return os.Remove(f)
	}},
	{"MANIFEST emptied", func(dir string) error { return os.Truncate(filepath.Join(dir, "MANIFEST"), 0) }},
	{"sst truncated", func(dir string) error { return truncateHalf(dir, "*.sst") }},
	{"sst garbled", func(dir string) error { return garble(dir, "*.sst") }},
	{"vlog truncated", func(dir string) error { return truncateHalf(dir, "*.vlog") }},
	{"vlog garbled", func(dir string) error { return garble(dir, "*.vlog") }},
}

func first(dir, pattern string) (string, error) {
	m, err := filepath.Glob(filepath.Join(dir, pattern))
	if err != nil {
		return "", err
	}
	if len(m) == 0 {
		return "", fmt.Errorf("no %s in %s", pattern, dir)
	}
	sort.Strings(m)
	return m[0], nil
}

func truncateHalf(dir, pattern string) error {
	f, err := first(dir, pattern)
	if err != nil {
		return err
	}
	fi, err := os.Stat(f)
	if err != nil {
		return err
	}
	return os.Truncate(f, fi.Size()/2)
}

// garble flips bits all through the middle third of the first file
// matching pattern, the same way every time.
func garble(dir, pattern string) error {
	f, err := first(dir, pattern)
	if err != nil {
		return err
	}
	b, err := os.ReadFile(f)
	if err != nil {
		return err
	}
	for i := len(b) / 3; i < 2*len(b)/3; i++ {
		b[i] ^= byte(0x5a + i)
	}
	return os.WriteFile(f, b, 0o644)
}

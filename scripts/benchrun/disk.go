package main

import (
	"io/fs"
	"path/filepath"
	"syscall"
)

// DiskUsage is what a directory tree takes: Apparent sums the files'
// sizes (du --apparent-size), OnDisk their allocated blocks (du): Badger
// preallocates and truncates files, so the two can differ either way.
type DiskUsage struct {
	Apparent int64
	OnDisk   int64
	Files    int
}

// Max is the larger of the two figures: the one a target is judged on.
func (d DiskUsage) Max() int64 { return max(d.Apparent, d.OnDisk) }

// diskUsage walks dir and sums its regular files.
func diskUsage(dir string) (DiskUsage, error) {
	var u DiskUsage
	err := filepath.WalkDir(dir, func(_ string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !e.Type().IsRegular() {
			return nil
		}
		info, err := e.Info()
		if err != nil {
			return nil // removed meanwhile (a compaction)
		}
		u.Files++
		u.Apparent += info.Size()
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			u.OnDisk += st.Blocks * 512
		} else {
			u.OnDisk += info.Size()
		}
		return nil
	})
	return u, err
}

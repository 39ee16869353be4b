//go:build unix

package store

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/ristretto/v2/z"
	"github.com/stretchr/testify/require"
)

// BenchmarkStreamWriterStore measures the fastest write Badger offers a
// build: every record of a real view store, already in memory and sorted,
// written into a fresh store through StreamWriter (as RestoreSnapshot
// writes), with this store's options. It is the floor under any bulk build
// of those views (docs/bulk-build.md). It needs a stopped node's store,
// named by MARKETD_BENCH_STORE (for example data/badger after a medium
// run), and is skipped without one:
//
//	MARKETD_BENCH_STORE=/path/to/data/badger go test -run '^$' \
//	    -bench StreamWriterStore -benchtime 3x ./readmodel/store
//
// Besides ns/op and MB/s it reports the process's CPU seconds per GB of
// keys and values written (Badger's writers run on goroutines of their own).
func BenchmarkStreamWriterStore(b *testing.B) {
	src := os.Getenv("MARKETD_BENCH_STORE")
	if src == "" {
		b.Skip("MARKETD_BENCH_STORE names no store to copy")
	}
	ks, vs, size := loadRecords(b, src)
	b.SetBytes(size)
	var cpu time.Duration
	for b.Loop() {
		b.StopTimer()
		s, err := Open(context.Background(), b.TempDir(), Options{})
		require.NoError(b, err)
		c0 := processCPU()
		b.StartTimer()
		sw := s.db.NewStreamWriter()
		require.NoError(b, sw.Prepare())
		buf := z.NewBuffer(8<<20, "marketd.BenchmarkStreamWriterStore")
		for i := range ks {
			appendKV(buf, ks[i], vs[i], 0)
			if buf.LenNoPadding() >= restoreBatch {
				require.NoError(b, sw.Write(buf))
				buf.Reset()
			}
		}
		require.NoError(b, sw.Write(buf))
		require.NoError(b, sw.Flush())
		require.NoError(b, s.Close(context.Background()))
		b.StopTimer()
		cpu += processCPU() - c0
		_ = buf.Release()
		b.StartTimer()
	}
	b.ReportMetric(cpu.Seconds()/float64(b.N)/(float64(size)/1e9), "cpu-s/GB")
	b.ReportMetric(float64(len(ks)), "records")
}

// loadRecords reads every key and value of the store in dir, in key order.
func loadRecords(b *testing.B, dir string) (ks, vs [][]byte, size int64) {
	db, err := badger.Open(badger.DefaultOptions(dir).WithReadOnly(true).WithLogger(nil))
	require.NoError(b, err)
	defer db.Close()
	require.NoError(b, db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{PrefetchValues: true, PrefetchSize: 256})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			v, err := it.Item().ValueCopy(nil)
			if err != nil {
				return err
			}
			k := it.Item().KeyCopy(nil)
			ks, vs = append(ks, k), append(vs, v)
			size += int64(len(k) + len(v))
		}
		return nil
	}))
	return ks, vs, size
}

// processCPU is the CPU time this process has used, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

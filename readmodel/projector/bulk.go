package projector

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/marketd/marketd/readmodel"
	"github.com/marketd/marketd/readmodel/store"
)

// A replay from the start of the streams (no FromSeq or Since) builds in
// bulk: it applies the streams to a store in memory (store.OpenMemory),
// with the same apply as everywhere else, then writes that store's keys
// once, sorted, into the build directory through Badger's StreamWriter
// (store.WriteMemory), and swaps it in as before. Badger's write path
// (value log, memtables, flushes, compaction) is paid once, not per batch.
//
// The whole store is in memory until it is written: memory is bounded by
// the market, not by a partition of it (docs/bulk-build.md says what
// comes next). A replay whose streams hold more than
// ReplayOptions.BulkLimit bytes applies them in batches into Badger, as
// before, and says so in its progress.

// DefaultBulkLimit is ReplayOptions.BulkLimit's default: the streams'
// stored bytes up to which a replay from the start builds in memory. At
// 10,000 collections x 100 tokens the streams held 158 MB and the build's
// heap peaked at 1.4 GB (docs/bulk-build.md); the large market's 2.3 GB of
// streams would need about 20 GB, so it stays on the batched path.
const DefaultBulkLimit = 512 << 20

// chooseBulk says whether a replay from the start builds in memory: the
// streams' stored bytes are at most the limit. A replay that does not
// says why on progress.
func chooseBulk(ctx context.Context, js jetstream.JetStream, opts ReplayOptions, progress io.Writer) (bool, error) {
	limit := opts.BulkLimit
	if limit == 0 {
		limit = DefaultBulkLimit
	}
	if limit < 0 {
		return false, nil
	}
	var held uint64
	for _, name := range streamNames {
		s, err := js.Stream(ctx, name)
		if err != nil {
			return false, readmodel.Wrap(readmodel.UpstreamError, err, "stream "+name)
		}
		info, err := s.Info(ctx)
		if err != nil {
			return false, readmodel.Wrap(readmodel.UpstreamError, err, "stream info "+name)
		}
		held += info.State.Bytes
	}
	if held <= uint64(limit) {
		return true, nil
	}
	why := fmt.Sprintf("the streams hold %d MB, more than the %d MB a build in memory is allowed (it holds the whole store until it writes it): applying them in batches into Badger instead", held>>20, limit>>20)
	opts.Log.Warn().Uint64("stream_bytes", held).Int64("limit", limit).Msg("replay: " + why)
	if progress != nil {
		fmt.Fprintln(progress, "replay: "+why)
	}
	return false, nil
}

// replayBulk applies the streams into a memory store and writes it into a
// Badger store in build, which it leaves closed. On an error it removes
// build: nothing incomplete is left to swap in.
func replayBulk(ctx context.Context, js jetstream.JetStream, build string, bopts store.Options, opts ReplayOptions, progress io.Writer) (res ReplayResult, err error) {
	start := time.Now()
	mem := store.OpenMemory(bopts)
	defer func() { _ = mem.Close(context.Background()) }()
	res, err = New(js, mem, opts.Projector, opts.Log).replay(ctx, opts, progress, "apply in memory")
	if err != nil {
		return res, err
	}
	res.Bulk = true
	res.Applied = res.Elapsed
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	opts.Log.Info().Int("messages", res.Messages).Int64("apply_ms", res.Applied.Milliseconds()).Uint64("heap_bytes", ms.HeapAlloc).Uint64("heap_sys_bytes", ms.HeapSys).
		Msg("replay: applied the streams in memory; writing the store")
	pr := newProgress(progress, opts.ProgressEvery, 0, nil)
	wstart := time.Now()
	info, err := store.WriteMemory(ctx, build, mem, bopts, store.BuildOptions{Progress: func(records, bytes, total int64) {
		pr.written(records, bytes, total, wstart)
	}})
	if err != nil {
		_ = os.RemoveAll(build)
		return res, err
	}
	pr.written(info.Records, info.RawBytes, info.Records, time.Time{})
	res.Written = time.Since(wstart)
	res.Elapsed = time.Since(start)
	return res, nil
}

// written reports the write phase: records of total written, bytes so
// far; a zero start marks the end.
func (pr *progress) written(records, bytes, total int64, start time.Time) {
	if pr.w == nil {
		return
	}
	final := start.IsZero()
	now := time.Now()
	if !final && now.Sub(pr.last) < pr.every {
		return
	}
	pr.last = now
	pct := 100.0
	if total > 0 {
		pct = 100 * float64(records) / float64(total)
	}
	pr.print(fmt.Sprintf("replay: phase write, %d of %d records (%.0f %%), %d MB", records, total, pct, bytes>>20), final)
}

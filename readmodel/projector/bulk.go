package projector

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"runtime/debug"
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
// comes next). A replay whose streams hold more than its limit
// (bulkLimit) applies them in batches into Badger, as before, and says so
// in its progress.

// DefaultBulkLimit is ReplayOptions.BulkLimit's default: the streams'
// stored bytes up to which a replay from the start builds in memory, where
// the Go runtime has no memory limit. With one (a node or a replay sets it
// from the memory cgroup), the limit is at most a bulkHeapPerStreamByte-th
// of it. At 10,000 collections x 100 tokens the streams held 319 MiB
// (JetStream's count), the build's live heap peaked at 447 MB as the
// apply ended and its heap at 858 MB (docs/bulk-build.md); the large
// market's streams, about ten times that, stay on the batched path.
const DefaultBulkLimit = 512 << 20

// bulkHeapPerStreamByte is the heap a build in memory may take per byte
// of the streams: at the medium size its live heap peaked at 1.3, its
// heap (the collector lets it grow to twice the live heap without a
// memory limit) at 2.6.
const bulkHeapPerStreamByte = 3

// bulkLimit is the streams' bytes up to which a replay builds in memory
// (negative: never), and what decided it.
func bulkLimit(opts ReplayOptions) (int64, string) {
	if opts.BulkLimit != 0 {
		return opts.BulkLimit, "the replay's limit"
	}
	if ml := debug.SetMemoryLimit(-1); ml < math.MaxInt64 && ml/bulkHeapPerStreamByte < DefaultBulkLimit {
		return ml / bulkHeapPerStreamByte, fmt.Sprintf("a %d-th of the Go memory limit", bulkHeapPerStreamByte)
	}
	return DefaultBulkLimit, "the default limit"
}

// chooseBulk says whether a replay from the start builds in memory: the
// streams' stored bytes are at most bulkLimit's. A replay that does not
// says why on progress.
func chooseBulk(ctx context.Context, js jetstream.JetStream, opts ReplayOptions, progress io.Writer) (bool, error) {
	limit, from := bulkLimit(opts)
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
	why := fmt.Sprintf("the streams hold %d MiB, more than the %d MiB a build in memory is allowed (%s; it holds the whole store until it writes it): applying them in batches into Badger instead", held>>20, limit>>20, from)
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
	res, err = New(js, mem, opts.Projector, opts.Log).replay(ctx, opts, progress, PhaseApplyMemory)
	if err != nil {
		return res, err
	}
	res.Bulk = true
	res.Applied = res.Elapsed
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	opts.Log.Info().Int("messages", res.Messages).Int64("apply_ms", res.Applied.Milliseconds()).Uint64("heap_bytes", ms.HeapAlloc).Uint64("heap_sys_bytes", ms.HeapSys).
		Msg("replay: applied the streams in memory; writing the store")
	opts.phase(PhaseWrite)
	pr := newProgress(progress, opts, PhaseWrite, nil)
	pr.colls = res.Collections
	wstart := time.Now()
	info, err := store.WriteMemory(ctx, build, mem, bopts, store.BuildOptions{Progress: func(records, bytes, total int64) {
		pr.written(records, bytes, total, false)
	}})
	if err != nil {
		_ = os.RemoveAll(build)
		return res, err
	}
	pr.written(info.Records, info.RawBytes, info.Records, true)
	res.Written = time.Since(wstart)
	res.Elapsed = time.Since(start)
	return res, nil
}

// written reports the write phase: records of total written, bytes so
// far; final marks the end.
func (pr *progress) written(records, bytes, total int64, final bool) {
	now := time.Now()
	line, report := pr.due(now, final)
	if !line && !report {
		return
	}
	in := eta(records, total-records, now.Sub(pr.start))
	if report {
		pr.report(Progress{Phase: PhaseWrite, Done: records, Total: total, Collections: pr.colls, Left: in})
	}
	if !line {
		return
	}
	pct := 100.0
	if total > 0 {
		pct = 100 * float64(records) / float64(total)
	}
	pr.print(fmt.Sprintf("replay: phase "+PhaseWrite+", %d of %d records (%.0f %%), %d MB, %d collections, %s",
		records, total, pct, bytes>>20, pr.colls, leftText(in)), final)
}

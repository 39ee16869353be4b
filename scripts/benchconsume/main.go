// Command benchconsume measures the raw rate of a JetStream ordered
// consumer: the ceiling that `marketd replay` is compared to by the
// performance harness (scripts/bench).
//
// Modes:
//
//	benchconsume --self N [--size 300]
//	    starts an embedded nats-server (JetStream, temporary store), publishes
//	    N messages of --size bytes to a fresh stream, then reads them back
//	    with an ordered consumer; prints publish and consume rates.
//	benchconsume --url nats://H:P --stream A[,B]
//	    reads every message of existing streams A, B with an ordered
//	    consumer (deliver all) and prints the rate of each and in total.
//	benchconsume --store-dir DIR --stream A[,B]
//	    the same, against an embedded nats-server started on an existing
//	    JetStream store (for example <data-dir>/nats of a stopped marketd).
//
// --json prints one JSON object (Result) instead of text. Every mode is
// bounded by --timeout. Exit status: 0 on success, 2 on bad flags, 1 on any
// failure (server, connection, missing stream, timeout).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// Rate is one measured transfer.
type Rate struct {
	Stream  string  `json:"stream"`
	Op      string  `json:"op"` // "publish" or "consume"
	Msgs    int     `json:"msgs"`
	Bytes   int64   `json:"bytes"`
	Seconds float64 `json:"seconds"`
	PerSec  float64 `json:"msgsPerSec"`
}

// Result is what one invocation measured; Total sums the consume rates.
type Result struct {
	Mode  string `json:"mode"`
	Rates []Rate `json:"rates"`
	Total Rate   `json:"total"`
}

func newRate(stream, op string, msgs int, bytes int64, d time.Duration) Rate {
	r := Rate{Stream: stream, Op: op, Msgs: msgs, Bytes: bytes, Seconds: d.Seconds()}
	if d > 0 {
		r.PerSec = float64(msgs) / d.Seconds()
	}
	return r
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("benchconsume", flag.ContinueOnError)
	fs.SetOutput(stderr)
	self := fs.Int("self", 0, "self-test: publish and consume this many messages on an embedded server")
	size := fs.Int("size", 300, "message size in bytes (self-test)")
	url := fs.String("url", "", "NATS URL of a server holding the streams")
	storeDir := fs.String("store-dir", "", "JetStream store directory to serve with an embedded server")
	streams := fs.String("stream", "MARKETD_STATE,MARKETD_SALES", "comma-separated stream names to read")
	timeout := fs.Duration("timeout", 5*time.Minute, "bound of the whole run")
	asJSON := fs.Bool("json", false, "print the result as one JSON object")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	modes := 0
	for _, set := range []bool{*self > 0, *url != "", *storeDir != ""} {
		if set {
			modes++
		}
	}
	if modes != 1 || *size < 1 {
		fmt.Fprintln(stderr, "benchconsume: give exactly one of --self N, --url URL, --store-dir DIR (and --size >= 1)")
		fs.Usage()
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()

	var (
		res Result
		err error
	)
	switch {
	case *self > 0:
		res, err = selfTest(ctx, *self, *size)
	case *url != "":
		res, err = readURL(ctx, *url, splitList(*streams))
		res.Mode = "url"
	default:
		res, err = readStore(ctx, *storeDir, splitList(*streams))
	}
	if err != nil {
		fmt.Fprintf(stderr, "benchconsume: %v\n", err)
		return 1
	}
	if *asJSON {
		b, _ := json.Marshal(res)
		fmt.Fprintln(stdout, string(b))
		return 0
	}
	for _, r := range res.Rates {
		fmt.Fprintf(stdout, "%-8s %-20s %9d msgs %8.3f s %10.0f msgs/s\n", r.Op, r.Stream, r.Msgs, r.Seconds, r.PerSec)
	}
	t := res.Total
	fmt.Fprintf(stdout, "%-8s %-20s %9d msgs %8.3f s %10.0f msgs/s\n", "consume", "total", t.Msgs, t.Seconds, t.PerSec)
	return 0
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// startServer starts an embedded JetStream server on storeDir, loopback,
// random port, named as marketd's embedded server is.
func startServer(storeDir string) (*server.Server, error) {
	srv, err := server.NewServer(&server.Options{
		ServerName: "marketd-embedded",
		Host:       "127.0.0.1",
		Port:       -1,
		JetStream:  true,
		StoreDir:   storeDir,
		NoSigs:     true,
		NoLog:      true,
	})
	if err != nil {
		return nil, fmt.Errorf("nats-server options: %w", err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(30 * time.Second) {
		srv.Shutdown()
		return nil, errors.New("nats-server not ready after 30s")
	}
	return srv, nil
}

func readStore(ctx context.Context, dir string, streams []string) (Result, error) {
	if _, err := os.Stat(dir); err != nil {
		return Result{}, err
	}
	srv, err := startServer(dir)
	if err != nil {
		return Result{}, err
	}
	defer func() { srv.Shutdown(); srv.WaitForShutdown() }()
	res, err := readURL(ctx, srv.ClientURL(), streams)
	res.Mode = "store-dir"
	return res, err
}

func readURL(ctx context.Context, url string, streams []string) (Result, error) {
	if len(streams) == 0 {
		return Result{}, errors.New("no stream named")
	}
	nc, err := nats.Connect(url, nats.Name("benchconsume"))
	if err != nil {
		return Result{}, fmt.Errorf("connect %s: %w", url, err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return Result{}, err
	}
	var res Result
	for _, name := range streams {
		r, err := consumeAll(ctx, js, name)
		if err != nil {
			return res, err
		}
		res.Rates = append(res.Rates, r)
	}
	res.Total = total(res.Rates)
	return res, nil
}

func total(rs []Rate) Rate {
	var msgs int
	var bytes int64
	var secs float64
	for _, r := range rs {
		if r.Op != "consume" {
			continue
		}
		msgs += r.Msgs
		bytes += r.Bytes
		secs += r.Seconds
	}
	return newRate("total", "consume", msgs, bytes, time.Duration(secs*float64(time.Second)))
}

// consumeAll reads every message the stream holds when it starts, with an
// ordered consumer, and times it from the consumer's creation to the last
// message. Messages published meanwhile are not waited for.
func consumeAll(ctx context.Context, js jetstream.JetStream, name string) (Rate, error) {
	st, err := js.Stream(ctx, name)
	if err != nil {
		return Rate{}, fmt.Errorf("stream %s: %w", name, err)
	}
	want := int(st.CachedInfo().State.Msgs)
	if want == 0 {
		return newRate(name, "consume", 0, 0, 0), nil
	}
	start := time.Now()
	cons, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy})
	if err != nil {
		return Rate{}, fmt.Errorf("ordered consumer on %s: %w", name, err)
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(1000))
	if err != nil {
		return Rate{}, fmt.Errorf("messages of %s: %w", name, err)
	}
	defer it.Stop()
	stopOnDone := context.AfterFunc(ctx, it.Stop)
	defer stopOnDone()
	n := 0
	var bytes int64
	for n < want {
		m, err := it.Next()
		if err != nil {
			if ctx.Err() != nil {
				return Rate{}, fmt.Errorf("stream %s: read %d of %d messages: %w", name, n, want, ctx.Err())
			}
			return Rate{}, fmt.Errorf("stream %s: read %d of %d messages: %w", name, n, want, err)
		}
		n++
		bytes += int64(len(m.Data()))
	}
	return newRate(name, "consume", n, bytes, time.Since(start)), nil
}

// selfTest publishes n messages of size bytes to a fresh stream on a
// temporary embedded server, then consumes them.
func selfTest(ctx context.Context, n, size int) (Result, error) {
	dir, err := os.MkdirTemp("", "benchconsume-*")
	if err != nil {
		return Result{}, err
	}
	defer os.RemoveAll(dir)
	srv, err := startServer(dir)
	if err != nil {
		return Result{}, err
	}
	defer func() { srv.Shutdown(); srv.WaitForShutdown() }()
	nc, err := nats.Connect(srv.ClientURL(), nats.Name("benchconsume"))
	if err != nil {
		return Result{}, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(4096))
	if err != nil {
		return Result{}, err
	}
	const name = "BENCH"
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{"bench.>"}, Storage: jetstream.FileStorage}); err != nil {
		return Result{}, fmt.Errorf("create stream: %w", err)
	}
	pub, err := publishN(ctx, js, name, n, size)
	if err != nil {
		return Result{}, err
	}
	con, err := consumeAll(ctx, js, name)
	if err != nil {
		return Result{}, err
	}
	return Result{Mode: "self", Rates: []Rate{pub, con}, Total: total([]Rate{con})}, nil
}

func publishN(ctx context.Context, js jetstream.JetStream, stream string, n, size int) (Rate, error) {
	payload := make([]byte, size)
	for i := range payload {
		payload[i] = byte('a' + i%26)
	}
	start := time.Now()
	for i := 0; i < n; i++ {
		subj := fmt.Sprintf("bench.%d", i%64)
		// A loaded machine acknowledges slowly: wait for room rather than
		// fail after the default 200 ms stall.
		if _, err := js.PublishAsync(subj, payload, jetstream.WithStallWait(30*time.Second)); err != nil {
			return Rate{}, fmt.Errorf("publish %d: %w", i, err)
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-ctx.Done():
		return Rate{}, fmt.Errorf("publish: %w", ctx.Err())
	}
	d := time.Since(start)
	st, err := js.Stream(ctx, stream)
	if err != nil {
		return Rate{}, err
	}
	if got := st.CachedInfo().State.Msgs; got != uint64(n) {
		return Rate{}, fmt.Errorf("publish: stream holds %d messages, want %d", got, n)
	}
	return newRate(stream, "publish", n, int64(n*size), d), nil
}

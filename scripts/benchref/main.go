// Command benchref is the reference server of the performance harness
// (scripts/bench): a minimal Fiber app that answers every GET with one fixed
// body and the headers marketd sends for it. Whatever rate it reaches on a
// machine is the ceiling of the HTTP stack for a body of that size, which is
// what marketd's prepared-bytes read path is measured against.
//
// Usage:
//
//	benchref --addr 127.0.0.1:9000 --body FILE [--headers FILE]
//	benchref --addr 127.0.0.1:9000 --size 6144
//
// --headers takes a header dump as written by `curl -D FILE` (status line,
// then "Name: value" lines). Of those, the headers marketd sets on a
// success (Content-Type, Cache-Control, CDN-Cache-Control, ETag, Vary and
// the Access-Control-* set) are replayed verbatim on every response;
// framing headers (Date, Content-Length, Server, Connection) are left to
// Fiber as they are for marketd. Without --headers the SPEC's defaults for
// a collection detail are used.
//
// It exits 0 on SIGINT/SIGTERM after a graceful shutdown, 2 on bad flags
// or an unreadable file, 1 when the listener fails.
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/gofiber/fiber/v2"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// header is one replayed response header.
type header struct{ name, value string }

// replayed names the headers copied from a captured marketd response, in
// canonical form; anything else in the dump is ignored.
var replayed = map[string]string{
	"content-type":                 "Content-Type",
	"cache-control":                "Cache-Control",
	"cdn-cache-control":            "CDN-Cache-Control",
	"etag":                         "ETag",
	"vary":                         "Vary",
	"access-control-allow-origin":  "Access-Control-Allow-Origin",
	"access-control-allow-methods": "Access-Control-Allow-Methods",
	"access-control-allow-headers": "Access-Control-Allow-Headers",
	"access-control-max-age":       "Access-Control-Max-Age",
}

// defaultHeaders are used without --headers: a collection detail's.
var defaultHeaders = []header{
	{"Content-Type", "application/json"},
	{"Cache-Control", "public, s-maxage=30, stale-while-revalidate=60"},
	{"CDN-Cache-Control", "public, s-maxage=30, stale-while-revalidate=60"},
	{"ETag", `W/"0123456789abcdef"`},
	{"Access-Control-Allow-Origin", "*"},
	{"Access-Control-Allow-Methods", "GET, OPTIONS"},
	{"Access-Control-Allow-Headers", "Content-Type, Accept"},
	{"Access-Control-Max-Age", "86400"},
}

// parseHeaderDump reads a `curl -D` dump and returns the replayed headers
// in the order they appear. With several responses in one dump (redirects,
// 100-continue) the last one wins. It fails when the dump holds no status
// line.
func parseHeaderDump(r io.Reader) ([]header, error) {
	var hs []header
	seen := false
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if strings.HasPrefix(line, "HTTP/") {
			hs, seen = nil, true
			continue
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		if canon, ok := replayed[strings.ToLower(strings.TrimSpace(name))]; ok {
			hs = append(hs, header{canon, strings.TrimSpace(value)})
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if !seen {
		return nil, errors.New("no HTTP status line in header dump")
	}
	return hs, nil
}

// syntheticBody returns a JSON body of exactly n bytes (n >= 12).
func syntheticBody(n int) []byte {
	const head, tail = `{"data":"`, `"}`
	if n < len(head)+len(tail)+1 {
		n = len(head) + len(tail) + 1
	}
	b := make([]byte, 0, n)
	b = append(b, head...)
	b = append(b, bytes.Repeat([]byte("x"), n-len(head)-len(tail))...)
	return append(b, tail...)
}

// newApp returns the reference app: every GET answers 200 with body and hs.
// The Fiber settings that shape throughput match marketd's public API.
func newApp(body []byte, hs []header) *fiber.App {
	app := fiber.New(fiber.Config{
		AppName:               "benchref",
		DisableStartupMessage: true,
		ReadTimeout:           10 * time.Second,
		WriteTimeout:          10 * time.Second,
		IdleTimeout:           75 * time.Second,
		BodyLimit:             16 << 10,
		ReadBufferSize:        8 << 10,
		WriteBufferSize:       32 << 10, // as marketd (httpapi.writeBufferSize)
	})
	app.Get("/*", func(c *fiber.Ctx) error {
		h := &c.Response().Header
		for _, kv := range hs {
			if kv.name == "Content-Type" {
				h.SetContentType(kv.value)
				continue
			}
			h.Set(kv.name, kv.value)
		}
		c.Status(fiber.StatusOK)
		c.Response().SetBodyRaw(body)
		return nil
	})
	return app
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("benchref", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:9000", "listen address")
	bodyFile := fs.String("body", "", "file whose bytes are the response body")
	size := fs.Int("size", 6144, "synthetic body size in bytes when --body is not given")
	hdrFile := fs.String("headers", "", "`curl -D` header dump of the marketd response to mimic")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	body := syntheticBody(*size)
	if *bodyFile != "" {
		b, err := os.ReadFile(*bodyFile)
		if err != nil {
			fmt.Fprintf(stderr, "benchref: %v\n", err)
			return 2
		}
		body = b
	}
	hs := defaultHeaders
	if *hdrFile != "" {
		f, err := os.Open(*hdrFile)
		if err != nil {
			fmt.Fprintf(stderr, "benchref: %v\n", err)
			return 2
		}
		hs, err = parseHeaderDump(f)
		f.Close()
		if err != nil {
			fmt.Fprintf(stderr, "benchref: %s: %v\n", *hdrFile, err)
			return 2
		}
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(stderr, "benchref: %v\n", err)
		return 1
	}
	app := newApp(body, hs)
	fmt.Fprintf(stdout, "benchref listening on %s body=%d bytes headers=%d\n", ln.Addr(), len(body), len(hs))
	errc := make(chan error, 1)
	go func() { errc <- app.Listener(ln) }()
	select {
	case err := <-errc:
		fmt.Fprintf(stderr, "benchref: %v\n", err)
		return 1
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := app.ShutdownWithContext(sctx); err != nil {
		fmt.Fprintf(stderr, "benchref: shutdown: %v\n", err)
		return 1
	}
	return 0
}

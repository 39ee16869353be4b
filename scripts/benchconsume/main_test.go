package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// MustStore writes a JetStream store in a temp dir holding a compacted
// stream (one message per subject survives, leaving sequence gaps) and an
// append-only one, shuts the server down and returns the directory.
func MustStore(t *testing.T, subjects, updates, sales int) string {
	t.Helper()
	dir := t.TempDir()
	srv, err := startServer(dir)
	require.NoError(t, err)
	defer func() { srv.Shutdown(); srv.WaitForShutdown() }()
	nc, err := nats.Connect(srv.ClientURL())
	require.NoError(t, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	ctx := context.Background()
	_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: "STATE", Subjects: []string{"state.>"}, MaxMsgsPerSubject: 1})
	require.NoError(t, err)
	_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: "SALES", Subjects: []string{"sales.>"}})
	require.NoError(t, err)
	for u := 0; u < updates; u++ {
		for s := 0; s < subjects; s++ {
			_, err := js.Publish(ctx, fmt.Sprintf("state.%d", s), []byte("row"))
			require.NoError(t, err)
		}
	}
	for i := 0; i < sales; i++ {
		_, err := js.Publish(ctx, "sales.x", []byte("sale"))
		require.NoError(t, err)
	}
	return dir
}

func TestRunReadsExistingStore(t *testing.T) {
	dir := MustStore(t, 50, 3, 120)
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"--store-dir", dir, "--stream", "STATE,SALES", "--json"}, &out, &errOut)
	require.Equal(t, 0, code, errOut.String())
	var res Result
	require.NoError(t, json.Unmarshal(out.Bytes(), &res))
	assert.Equal(t, "store-dir", res.Mode)
	require.Len(t, res.Rates, 2)
	assert.Equal(t, "STATE", res.Rates[0].Stream)
	assert.Equal(t, 50, res.Rates[0].Msgs, "compacted stream: last message per subject only")
	assert.Equal(t, 120, res.Rates[1].Msgs)
	assert.Equal(t, 170, res.Total.Msgs)
	assert.Positive(t, res.Total.PerSec)
}

func TestRunSelfTest(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"--self", "2000", "--size", "300", "--json"}, &out, &errOut)
	require.Equal(t, 0, code, errOut.String())
	var res Result
	require.NoError(t, json.Unmarshal(out.Bytes(), &res))
	require.Len(t, res.Rates, 2)
	assert.Equal(t, "publish", res.Rates[0].Op)
	assert.Equal(t, 2000, res.Rates[0].Msgs)
	assert.Equal(t, int64(600000), res.Rates[0].Bytes)
	assert.Equal(t, "consume", res.Rates[1].Op)
	assert.Equal(t, 2000, res.Rates[1].Msgs)
	assert.Equal(t, int64(600000), res.Rates[1].Bytes)
}

func TestRunRejectsBadInput(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want int
	}{
		{"no mode", nil, 2},
		{"two modes", []string{"--self", "10", "--url", "nats://127.0.0.1:1"}, 2},
		{"zero size", []string{"--self", "10", "--size", "0"}, 2},
		{"unknown flag", []string{"--bogus"}, 2},
		{"missing store dir", []string{"--store-dir", "/nonexistent/benchconsume"}, 1},
		{"unreachable url", []string{"--url", "nats://127.0.0.1:1", "--timeout", "5s"}, 1},
		{"no stream named", []string{"--store-dir", "DIR", "--stream", " , "}, 1},
		{"missing stream", []string{"--store-dir", "DIR", "--stream", "NOPE"}, 1},
	}
	dir := MustStore(t, 1, 1, 0)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := make([]string, len(tc.args))
			for i, a := range tc.args {
				if a == "DIR" {
					a = dir
				}
				args[i] = a
			}
			var out, errOut bytes.Buffer
			assert.Equal(t, tc.want, run(context.Background(), args, &out, &errOut))
			assert.NotEmpty(t, errOut.String())
		})
	}
}

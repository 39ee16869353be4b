package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestMixedScript(t *testing.T) {
	got := mixedScript([]string{"/v1/collections", "/v1/collections/a%2Fb/listings?limit=25"})
	assert.Contains(t, got, "  \"/v1/collections\",\n  \"/v1/collections/a%2Fb/listings?limit=25\",\n}")
	assert.Contains(t, got, "i = i % #paths + 1")
	assert.Contains(t, got, `return wrk.format("GET", paths[i])`)
	assert.Equal(t, 1, strings.Count(got, "request = function()"))
}

func TestOverlap(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 3, 0, 0, 0, time.UTC)
	tests := []struct {
		name     string
		cycleEnd time.Duration // after t0
		want     float64
	}{
		{"the cycle outlasts the run", 15 * time.Second, 1},
		{"the cycle ends half way", 5 * time.Second, 0.5},
		{"the cycle ended before the run", -time.Second, 0},
		{"exactly at the end", 10 * time.Second, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.InDelta(t, tc.want, overlap(t0, t0.Add(10*time.Second), t0.Add(tc.cycleEnd)), 1e-9)
		})
	}
	assert.Zero(t, overlap(t0, t0, t0.Add(time.Second)), "a run that did not run")
}

func TestMixedDuration(t *testing.T) {
	tests := []struct {
		name  string
		first *CycleRun
		demo  bool
		want  time.Duration
	}{
		{name: "demo: the wrk duration", first: nil, demo: true, want: 10 * time.Second},
		{name: "a short cycle bounds the run", first: &CycleRun{Wall: 6500 * time.Millisecond}, want: 6 * time.Second},
		{name: "a long cycle does not lengthen it", first: &CycleRun{Wall: time.Minute}, want: 10 * time.Second},
		{name: "never under 2 s", first: &CycleRun{Wall: 300 * time.Millisecond}, want: 2 * time.Second},
		{name: "a failed cycle says nothing", first: &CycleRun{Wall: 3 * time.Second, Err: "status 500"}, want: 10 * time.Second},
		{name: "no cycle", first: nil, want: 10 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, mixedDuration(10*time.Second, tc.first, tc.demo))
		})
	}
}

package main

import (
	"bufio"
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Stat is one wrk run: throughput and latency percentiles.
type Stat struct {
	RPS      float64 // Requests/sec
	P50, P99 time.Duration
	Requests int64 // completed requests
	Non2xx   int64 // "Non-2xx or 3xx responses"
	SockErrs int64 // connect + read + write + timeout
}

// Measured is the runs of one target and their medians (each figure's
// median taken on its own).
type Measured struct {
	Runs   []Stat
	Median Stat
}

// Add appends a run and recomputes the medians.
func (m *Measured) Add(s Stat) {
	m.Runs = append(m.Runs, s)
	m.Median = medianStat(m.Runs)
}

// OK reports whether the target was measured with no failed response.
func (m *Measured) OK() bool {
	if m == nil || len(m.Runs) == 0 {
		return false
	}
	for _, r := range m.Runs {
		if r.Non2xx > 0 || r.SockErrs > 0 || r.Requests == 0 {
			return false
		}
	}
	return true
}

func medianStat(rs []Stat) Stat {
	if len(rs) == 0 {
		return Stat{}
	}
	f := func(get func(Stat) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = get(r)
		}
		return median(v)
	}
	var s Stat
	s.RPS = f(func(r Stat) float64 { return r.RPS })
	s.P50 = time.Duration(f(func(r Stat) float64 { return float64(r.P50) }))
	s.P99 = time.Duration(f(func(r Stat) float64 { return float64(r.P99) }))
	s.Requests = int64(f(func(r Stat) float64 { return float64(r.Requests) }))
	for _, r := range rs {
		s.Non2xx += r.Non2xx
		s.SockErrs += r.SockErrs
	}
	return s
}

// median of v (mean of the middle two for an even count); 0 when empty.
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// parseWrk reads the text wrk prints with --latency. It fails when the
// output has no Requests/sec line or no 50%/99% latency lines.
func parseWrk(out string) (Stat, error) {
	var s Stat
	var haveRPS, have50, have99 bool
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		f := strings.Fields(line)
		switch {
		case strings.HasPrefix(line, "Requests/sec:") && len(f) == 2:
			v, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				return s, fmt.Errorf("wrk: bad Requests/sec %q", f[1])
			}
			s.RPS, haveRPS = v, true
		case len(f) == 2 && (f[0] == "50%" || f[0] == "99%"):
			d, err := parseWrkDuration(f[1])
			if err != nil {
				return s, err
			}
			if f[0] == "50%" {
				s.P50, have50 = d, true
			} else {
				s.P99, have99 = d, true
			}
		case len(f) >= 4 && f[1] == "requests" && f[2] == "in":
			n, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				return s, fmt.Errorf("wrk: bad request count %q", f[0])
			}
			s.Requests = n
		case strings.HasPrefix(line, "Non-2xx or 3xx responses:") && len(f) == 5:
			n, err := strconv.ParseInt(f[4], 10, 64)
			if err != nil {
				return s, fmt.Errorf("wrk: bad non-2xx count %q", f[4])
			}
			s.Non2xx = n
		case strings.HasPrefix(line, "Socket errors:"):
			// Socket errors: connect 0, read 0, write 0, timeout 5
			for i := 2; i+1 < len(f); i += 2 {
				n, err := strconv.ParseInt(strings.TrimSuffix(f[i+1], ","), 10, 64)
				if err != nil {
					return s, fmt.Errorf("wrk: bad socket error count in %q", line)
				}
				s.SockErrs += n
			}
		}
	}
	if !haveRPS || !have50 || !have99 {
		return s, fmt.Errorf("wrk: output lacks Requests/sec or 50%%/99%% latency (run with --latency)")
	}
	return s, nil
}

// parseWrkDuration parses wrk's latency units: us, ms, s, m, h.
func parseWrkDuration(v string) (time.Duration, error) {
	units := []struct {
		suffix string
		unit   time.Duration
	}{{"us", time.Microsecond}, {"ms", time.Millisecond}, {"m", time.Minute}, {"h", time.Hour}, {"s", time.Second}}
	for _, u := range units {
		if num, ok := strings.CutSuffix(v, u.suffix); ok {
			x, err := strconv.ParseFloat(num, 64)
			if err != nil {
				return 0, fmt.Errorf("wrk: bad latency %q", v)
			}
			return time.Duration(x * float64(u.unit)), nil
		}
	}
	return 0, fmt.Errorf("wrk: bad latency %q", v)
}

// WrkOptions are the load parameters of every run.
type WrkOptions struct {
	Core        string // taskset CPU list for wrk ("" = unpinned)
	Threads     int
	Connections int
	Duration    time.Duration
	Script      string // wrk -s Lua script ("" = none)
}

// runWrk runs wrk once against url and parses its output.
func runWrk(ctx context.Context, o WrkOptions, url string) (Stat, string, error) {
	args := []string{"wrk", "-t", strconv.Itoa(o.Threads), "-c", strconv.Itoa(o.Connections),
		"-d", fmt.Sprintf("%ds", int(o.Duration.Round(time.Second)/time.Second)), "--latency"}
	if o.Script != "" {
		args = append(args, "-s", o.Script)
	}
	args = append(args, url)
	if o.Core != "" {
		args = append([]string{"taskset", "-c", o.Core}, args...)
	}
	ctx, cancel := context.WithTimeout(ctx, o.Duration+30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, args[0], args[1:]...).CombinedOutput()
	if err != nil {
		return Stat{}, string(out), fmt.Errorf("wrk %s: %w: %s", url, err, strings.TrimSpace(string(out)))
	}
	s, err := parseWrk(string(out))
	return s, string(out), err
}

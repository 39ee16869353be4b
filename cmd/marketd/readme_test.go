package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/marketd/marketd/config"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReadmeDocumentsEverySetting keeps the README's configuration table
// true: every flag config.Load accepts is named there.
func TestReadmeDocumentsEverySetting(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	readme := string(b)
	for _, name := range config.SettingNames() {
		if strings.HasPrefix(name, "source-") {
			// Per-source settings are documented once as --source-<name>-….
			for _, suffix := range []string{"-url", "-interval", "-timeout"} {
				if strings.HasSuffix(name, suffix) {
					assert.Contains(t, readme, "`--source-<name>"+suffix+"`", name)
				}
			}
			continue
		}
		assert.Contains(t, readme, "`--"+name+"`", "README must document --%s", name)
	}
}

// readmeShell returns the README's shell examples in order, one command
// a line, leaving out the make targets (make run is what the examples run
// against, make test what runs this test).
func readmeShell(t *testing.T, readme string) []string {
	t.Helper()
	var cmds []string
	in := false
	sc := bufio.NewScanner(strings.NewReader(readme))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "```"):
			in = !in && strings.TrimPrefix(line, "```") == "sh"
		case in && line != "" && !strings.HasPrefix(line, "#") && !strings.HasPrefix(line, "make "):
			cmds = append(cmds, line)
		}
	}
	require.NoError(t, sc.Err())
	return cmds
}

var (
	// apiError matches the error body of the public API (SPEC §7).
	apiError = regexp.MustCompile(`"error":\s*\{\s*"code"`)
	// onlyNulls matches an output line that shows nothing but nulls.
	onlyNulls = regexp.MustCompile(`^\s*\[?(null,?)+\]?\s*$`)
)

// TestReadmeExamplesRunVerbatim runs the README's shell examples, as
// written and in order in one bash, against a node started as make run
// starts it (the simulated market at its default size and seed) but on
// free ports, the only change made to them: localhost:8080, :8081 and
// :8090 become the node's API, admin and simulator addresses. Each command
// must succeed, no answer may be an API error, and no value a newcomer is
// shown may be null (an id derived wrongly shows as one). It needs curl,
// jq and bash, and is skipped without them.
func TestReadmeExamplesRunVerbatim(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("the README's examples need %s, which is not on PATH (.ci/run installs it): %v", tool, err)
		}
	}
	b, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	cmds := readmeShell(t, string(b))
	require.GreaterOrEqual(t, len(cmds), 10, "the README's examples: %q", cmds)

	m := MustRunMain(t)
	host := func(u string) string { return strings.TrimPrefix(u, "http://") }
	addrs := strings.NewReplacer("localhost:8080", host(m.API), "localhost:8081", host(m.Admin), "localhost:8090", host(m.Sim))
	for _, c := range cmds {
		require.Contains(t, c, "localhost:80", "every example talks to the node: %s", c)
	}
	// Each command is echoed before it runs, and its output ended by a
	// line of its own (not every answer ends with a newline).
	var script strings.Builder
	script.WriteString("set -euo pipefail\n")
	for _, c := range cmds {
		script.WriteString("echo '>>> " + strings.ReplaceAll(c, "'", `'\''`) + "'\n")
		script.WriteString(addrs.Replace(c) + "\n")
		script.WriteString("printf '\\n<<<\\n'\n")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script.String())
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "the examples stopped at the last command shown:\n%s", out)

	ran := 0
	var current string
	for line := range strings.SplitSeq(string(out), "\n") {
		switch {
		case strings.HasPrefix(line, ">>> "):
			current, ran = strings.TrimPrefix(line, ">>> "), ran+1
		case line == "<<<":
		default:
			assert.NotRegexp(t, apiError, line, "an API error from: %s", current)
			assert.NotRegexp(t, onlyNulls, line, "only nulls from: %s", current)
		}
	}
	assert.Equal(t, len(cmds), ran, "every example ran:\n%s", out)
	assert.Contains(t, string(out), `{"ready":true}`)
	assert.Regexp(t, `\["solana_[0-9a-z]+","[1-9A-HJ-NP-Za-km-z]{32,44}"\]`, string(out), "the batch found the Solana token by its case-kept collection mint")
}

package main

import (
	"os"
	"strings"
	"testing"

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

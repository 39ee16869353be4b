// Package e2e holds make e2e's checks (scripts/e2e): the Go half in
// e2e_test.go (build tag e2e), the browser page and runner, the TypeScript
// client and the pinned npm tools (package.json, package-lock.json).
package e2e

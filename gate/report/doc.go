// Package report holds the typed results gymtrace's faces print: the
// shapes of the CLI's --json outputs (docs/json.md) and of the MCP tools'
// answers, built here once from the gate packages' results, so that a
// command and a tool given the same capture say the same numbers in the
// same keys.
//
// It may import model and the gate packages; never receiver, tui or
// cmd/gymtrace. What only a file reader knows (bad lines) is a shape here
// and is filled by the caller.
package report

// Package mcpserver serves gymtrace's analyses over the Model Context
// Protocol: every tool keyed by rollout, over a live store or loaded
// captures, each answering with the result type gate/report shapes for the
// CLI's --json, bounded (limit, cursor, truncated) and computed on a
// snapshot, so a call never blocks ingest.
//
// It is a face, as tui is: it may import model and gate; never receiver,
// tui or cmd/gymtrace. Tool calls share one what-if engine, which is not
// safe for concurrent use, so calls are served one at a time.
package mcpserver

package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/nemo-gym/gymtrace/gate/evidence"
	"github.com/nemo-gym/gymtrace/gate/report"
	"github.com/nemo-gym/gymtrace/mcpserver"
)

func cmdMCP(args []string) int { return runMCP(args, os.Stderr) }

// runMCP serves loaded captures to one MCP client on stdin and stdout.
// stdout carries the protocol alone: every message goes to stderr.
func runMCP(args []string, stderr io.Writer) int {
	// Only -h writes to stdout, before the protocol would start on it.
	su := newSetup("mcp", os.Stdout, stderr, "usage: gymtrace mcp [--spec S] [--gym-version V] [--evidence PATH] FILE...\n\n"+
		"Serves the captures' rollouts to an MCP client over stdio (the client starts this command):\n"+
		"status, list_rollouts, get_rollout, get_spans, check, explain, critical_path, cohort, groups, ...\n"+
		"A live store is served by serve and demo with --mcp-addr.\n\n")
	su.settingFlags("spec", "the span_groups the capture was made with, which check and preview compare against")
	su.variantFlags("the capture; default: detected from the capture, else the newest")
	su.evidenceFlag()
	files, code, done := su.parse(args)
	if done {
		return code
	}
	if len(files) == 0 {
		return su.failUsage("no capture files given")
	}
	c, err := su.open(files, readOptions{listBad: stderr})
	if err != nil {
		return su.fail("%v", err)
	}
	defer c.store.Close()
	spec, source, _ := su.setting()
	bad := badLines(c.frep)
	cfg := mcpserver.Config{
		Source: c.store, Registry: c.reg, Variant: c.vc.json(),
		Setting: report.Setting{Spec: spec, Source: source}, BadLines: &bad,
	}
	// The files were written after the run: read once.
	set, err := su.readEvidence()
	if err != nil {
		return su.fail("%v", err)
	}
	if set != nil {
		cfg.Evidence = func() (*evidence.Set, bool, error) { return set, false, nil }
	}
	srv := mcpserver.New(cfg)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := srv.RunStdio(ctx); err != nil && ctx.Err() == nil {
		return su.fail("%v", err)
	}
	return exitOK
}

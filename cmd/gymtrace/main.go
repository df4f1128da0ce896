// Command gymtrace receives NeMo Gym's OpenTelemetry spans, builds
// per-rollout trace trees and previews what a span_groups spec would produce.
// This package only parses flags and wires the other packages together.
package main

import (
	"fmt"
	"os"

	"github.com/nemo-gym/gymtrace/gate/filter"
)

// Exit codes shared by every subcommand.
const (
	exitOK     = 0
	exitBroken = 1 // check: a join is broken
	exitUsage  = 2 // bad input or usage
)

type command struct {
	run     func(args []string) int
	summary string
}

var commands = map[string]command{
	"serve":     {cmdServe, "receive OTLP on 127.0.0.1:4317/4318 and open the TUI (the default)"},
	"demo":      {cmdDemo, "run a simulated NeMo Gym fleet against the receivers and open the TUI"},
	"open":      {cmdOpen, "load captures (OTLP JSON lines, console logs) into the TUI"},
	"preview":   {cmdPreview, "what-if report: what a span_groups spec would produce from a capture"},
	"check":     {cmdCheck, "join check of a capture (--baseline: hold it to a golden one): exit 0 intact, 1 broken, 2 bad input"},
	"groups":    {cmdGroups, "list span groups, presets and classification rules"},
	"diff":      {cmdDiff, "compare two rollouts span by span (also across captures, or under two specs); --cohort: groups of rollouts"},
	"recommend": {cmdRecommend, "search the span_groups specs that fit a budget, joins intact, for the one that keeps most"},
	"path":      {cmdPath, "a rollout's critical path: the spans that own its wall time, and which process holds it"},
	"mcp":       {cmdMCP, "serve captures to an MCP client over stdio: rollouts, checks, previews as tools"},
	"export":    {cmdExport, "write rollouts of a capture (optionally as under a spec) as OTLP/JSON lines"},
}

var order = []string{"serve", "demo", "open", "preview", "recommend", "check", "diff", "path", "export", "mcp", "groups"}

func usage() {
	fmt.Fprintf(os.Stderr, "usage: gymtrace [command] [flags]\n\ncommands:\n")
	for _, name := range order {
		fmt.Fprintf(os.Stderr, "  %-9s %s\n", name, commands[name].summary)
	}
	fmt.Fprintf(os.Stderr, "\nRun 'gymtrace COMMAND -h' for a command's flags, 'gymtrace help filters' for --where.\n")
}

func main() {
	args := os.Args[1:]
	name := "serve"
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		name, args = args[0], args[1:]
	}
	if name == "help" && len(args) > 0 && args[0] == "filters" {
		fmt.Println("--where and the TUI's / filter select rollouts:\n" + filter.Help)
		os.Exit(exitOK)
	}
	if name == "help" {
		usage()
		os.Exit(exitOK)
	}
	cmd, ok := commands[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "gymtrace: unknown command %q\n\n", name)
		usage()
		os.Exit(exitUsage)
	}
	os.Exit(cmd.run(args))
}

// Command gymtrace receives NeMo Gym's OpenTelemetry spans, builds
// per-rollout trace trees and previews what a span_groups spec would produce.
// This package only parses flags and wires the other packages together.
package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/nemo-gym/gymtrace/gate/filter"
)

// Exit codes shared by every subcommand.
const (
	exitOK     = 0
	exitBroken = 1 // check: a join is broken
	exitUsage  = 2 // bad input or usage
)

type command struct {
	name    string
	run     func(args []string) int
	summary string
}

// commands is every command in the order help lists them; dispatch and
// help both read it, so a new command is one entry here.
var commands = []command{
	{"serve", cmdServe, "receive OTLP on 127.0.0.1:4317/4318 and open the TUI (the default)"},
	{"demo", cmdDemo, "run a simulated NeMo Gym fleet against the receivers and open the TUI"},
	{"open", cmdOpen, "load captures (OTLP JSON lines, console logs) into the TUI"},
	{"preview", cmdPreview, "what-if report: what a span_groups spec would produce from a capture"},
	{"recommend", cmdRecommend, "search the span_groups specs that fit a budget, joins intact, for the one that keeps most"},
	{"check", cmdCheck, "join check of a capture (--baseline: hold it to a golden one): exit 0 intact, 1 broken, 2 bad input"},
	{"diff", cmdDiff, "compare two rollouts span by span (also across captures, or under two specs); --cohort: groups of rollouts"},
	{"path", cmdPath, "a rollout's critical path: the spans that own its wall time, and which process holds it"},
	{"export", cmdExport, "write rollouts of a capture (optionally as under a spec) as OTLP/JSON lines"},
	{"mcp", cmdMCP, "serve captures to an MCP client over stdio: rollouts, checks, previews as tools"},
	{"groups", cmdGroups, "list span groups, presets and classification rules"},
}

// lookup returns the command called name.
func lookup(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// usage lists the commands: on stdout when asked for, on stderr after a
// mistake.
func usage(w io.Writer) {
	fmt.Fprintf(w, "usage: gymtrace [command] [flags]\n\ncommands:\n")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "\nRun 'gymtrace help COMMAND' (or 'gymtrace COMMAND -h') for a command's flags, 'gymtrace help filters' for --where.\n")
}

func main() {
	os.Exit(dispatch(os.Args[1:], os.Stdout, os.Stderr))
}

// dispatch runs the command args name (serve when the line starts with a
// flag, or is empty) and returns its exit code. Help asked for goes to
// stdout with exit 0; a command or topic that does not exist is a usage
// error (stderr, exit 2).
func dispatch(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "-h", "-help", "--help":
			usage(stdout)
			return exitOK
		}
	}
	name := "serve"
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		name, args = args[0], args[1:]
	}
	if name == "help" {
		return help(args, stdout, stderr)
	}
	cmd, ok := lookup(name)
	if !ok {
		fmt.Fprintf(stderr, "gymtrace: unknown command %q\n\n", name)
		usage(stderr)
		return exitUsage
	}
	return cmd.run(args)
}

// help answers "gymtrace help [TOPIC]": the command list, a command's
// usage and flags, or the filter language.
func help(args []string, stdout, stderr io.Writer) int {
	switch {
	case len(args) == 0:
		usage(stdout)
		return exitOK
	case len(args) > 1:
		fmt.Fprintf(stderr, "gymtrace help: one topic at a time, got %q\n", strings.Join(args, " "))
		return exitUsage
	case args[0] == "filters":
		fmt.Fprintln(stdout, "--where and the TUI's / filter select rollouts:\n"+filter.Help)
		return exitOK
	}
	cmd, ok := lookup(args[0])
	if !ok {
		fmt.Fprintf(stderr, "gymtrace help: no command or topic %q (want filters or one of the commands)\n\n", args[0])
		usage(stderr)
		return exitUsage
	}
	return cmd.run([]string{"-h"})
}

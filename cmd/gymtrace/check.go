package main

import (
	"encoding/json"

	"fmt"
	"io"
	"os"
	"time"

	"github.com/nemo-gym/gymtrace/gate/report"
	"github.com/nemo-gym/gymtrace/gate/rollouts"
	"github.com/nemo-gym/gymtrace/gate/whatif"
)

func cmdCheck(args []string) int { return runCheck(args, os.Stdout, os.Stderr) }

// checkJSON is the documented schema of `check --json` (docs/json.md),
// shared with the MCP check tool.
type checkJSON = report.Check

type hopJSON = report.Hop

func runCheck(args []string, stdout, stderr io.Writer) int {
	su := newSetup("check", stdout, stderr, "usage: gymtrace check [--spec SPEC] [--grace D] [--json] FILE...\n"+
		"       gymtrace check --baseline GOLDEN [--tolerance 10%] [--json] FILE...\n\n"+
		"Checks that every rollout of a capture is one trace across processes; with --baseline, holds the\n"+
		"capture to a golden capture's telemetry (joins, spans and bytes per rollout, names, orphans, secrets).\n"+
		"Exit status: 0 intact (the contract holds), 1 broken, 2 bad input or usage.\n\n")
	fs := su.fs
	su.settingFlags("spec", "the span_groups the capture was made with, for advice")
	su.variantFlags("the capture; default: detected from the capture, else the newest")
	grace := fs.Duration("grace", 0, "rollouts whose spans arrived within this of the capture's last span are pending, not broken (files are complete: 0)")
	asJSON := fs.Bool("json", false, "print the report as JSON (schema: the README's JSON output section)")
	where := whereFlag(fs)
	su.evidenceFlag()
	cf := addContractFlags(fs)
	files, code, done := su.parse(args)
	if done {
		return code
	}
	fail := su.fail
	if len(files) == 0 {
		return su.failUsage("no capture files given")
	}
	if *cf.baseline != "" {
		return runContract(su, cf, files, *where, *asJSON, stdout)
	}
	if *grace < 0 {
		return fail("--grace %v: want a duration >= 0", *grace)
	}
	c, err := su.open(files, readOptions{})
	if err != nil {
		return fail("%v", err)
	}
	defer c.store.Close()
	specText, source, _ := su.setting()
	snap, frep, vc, reg := c.snap, c.frep, c.vc, c.reg
	ev, err := su.joinEvidence(reg, snap)
	if err != nil {
		return fail("%v", err)
	}
	if snap, err = selectWhere(reg, snap, *where, ev); err != nil {
		return fail("%v", err)
	}
	// Every rollout of a file arrived at load time, so any grace > 0 keeps
	// them all pending: files are complete, hence the default of 0.
	rep := whatif.NewEngine(reg).Check(snap, time.Now(), *grace)
	out := report.NewCheck(vc.json(), reg, rep, report.Setting{Spec: specText, Source: source}, badLines(frep))
	ev = rejoin(ev, rep.Structure)
	out.Evidence, out.RolloutEvidence = evidenceSummary(ev), rolloutEvidence(ev, rep.Structure)
	toks := tokenReport(rep.Structure)
	hops := rep.HopSummary()
	code = exitOK
	if !rep.Intact {
		code = exitBroken
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return fail("%v", err)
		}
		return code
	}
	status := "intact"
	if !rep.Intact {
		status = "BROKEN"
	}
	fmt.Fprintf(stdout, "%s: %d spans, %d rollouts, %d traces; %d joined, %d split, %d pending\n",
		status, rep.Spans, rep.Rollouts, rep.Traces, rep.Joined, rep.Split, rep.Pending)
	if out.BadLines.Count > 0 {
		fmt.Fprintf(stdout, "skipped %d lines that are not spans (%d unreadable)\n", out.BadLines.Count, out.BadLines.Bad)
	}
	for _, h := range hops {
		fmt.Fprintf(stdout, "  %s %s: %s\n", whatif.HopName(h, "->", keepName), hopCounts(h), h.Reason)
	}
	if n := out.ContextLeaks; n > 0 {
		// The sum of the context_leak rows above, the figure JSON and the
		// TUI give: not a join break.
		fmt.Fprintf(stdout, "context leaks: %d %s in %d %s, not join breaks\n", n, plural(n, "span", "spans"),
			out.ContextLeakRollouts, plural(out.ContextLeakRollouts, "rollout", "rollouts"))
	}
	writeTokensText(stdout, toks)
	writeEvidenceText(stdout, ev)
	if len(out.SplitRollouts) > 0 {
		fmt.Fprintf(stdout, "split rollouts: %s\n", joinMax(out.SplitRollouts, 10))
	}
	if out.SpecWarning != "" {
		fmt.Fprintf(stdout, "note: spec %q (%s): %s\n", specText, source, out.SpecWarning)
	}
	fmt.Fprintf(stdout, "variant: %s\n", vc)
	return code
}

func keepName(s string) string { return s }

// hopCounts is a hop's counts in text reports: spans, and the rollouts it
// was found in when it names any.
func hopCounts(b whatif.BreakSum) string {
	if b.Rollouts == 0 {
		return fmt.Sprintf("x%d", b.Spans)
	}
	return fmt.Sprintf("x%d in %d %s", b.Spans, b.Rollouts, plural(b.Rollouts, "rollout", "rollouts"))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func joinMax(xs []string, n int) string {
	s := ""
	for i, x := range xs {
		if i == n {
			return s + fmt.Sprintf(", … %d more", len(xs)-n)
		}
		if i > 0 {
			s += ", "
		}
		s += x
	}
	return s
}

// trafficJSON is the part of `check --json` and `preview --json` about what
// is not a rollout.
type trafficJSON = report.Traffic

func trafficOf(st *rollouts.Structure) trafficJSON { return report.TrafficOf(st) }

package main

import (
	"encoding/json"

	"fmt"
	"github.com/nemo-gym/gymtrace/gate/evidence"
	"io"
	"os"
	"sort"
	"time"

	"github.com/nemo-gym/gymtrace/gate/rollouts"
	"github.com/nemo-gym/gymtrace/gate/whatif"
)

func cmdCheck(args []string) int { return runCheck(args, os.Stdout, os.Stderr) }

// checkJSON is the documented schema of `check --json` (docs/json.md).
type checkJSON struct {
	variantJSON
	Spans           int          `json:"spans"`
	Rollouts        int          `json:"rollouts"`
	Traces          int          `json:"traces"`
	Intact          bool         `json:"intact"`
	RolloutsJoined  int          `json:"rollouts_joined"`
	RolloutsSplit   int          `json:"rollouts_split"`
	RolloutsPending int          `json:"rollouts_pending"`
	BrokenHops      []hopJSON    `json:"broken_hops"`
	BadLines        badLinesJSON `json:"bad_lines"`
	SplitRollouts   []string     `json:"split_rollouts"`
	Spec            string       `json:"spec"`
	SpecSource      string       `json:"spec_source"`
	SpecWarning     string       `json:"spec_warning"`
	// Tokens and RolloutTokens are present only when spans report token
	// usage (a model backend with GenAI tracing).
	Tokens        *tokenTotalJSON        `json:"tokens,omitempty"`
	RolloutTokens map[string]*tokensJSON `json:"rollout_tokens,omitempty"`
	// With --evidence: what Gym's files say, and of each rollout joined.
	Evidence        *evidence.SummaryJSON            `json:"evidence,omitempty"`
	RolloutEvidence map[string]*evidence.RolloutJSON `json:"rollout_evidence,omitempty"`
	trafficJSON
}

type hopJSON struct {
	FromService string `json:"from_service"`
	ToService   string `json:"to_service"`
	SpanName    string `json:"span_name"`
	Cause       string `json:"cause"` // the reason's stable code
	Reason      string `json:"reason"`
	Fix         string `json:"fix,omitempty"`
	Count       int    `json:"count"`
	Rollouts    int    `json:"rollouts"`
}

func runCheck(args []string, stdout, stderr io.Writer) int {
	su := newSetup("check", stderr, "usage: gymtrace check [--spec SPEC] [--grace D] [--json] FILE...\n"+
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
	res := reg.Resolve(specText)
	warning := whatif.SpecWarning(res.Set)
	if e := res.Effect(); e != "" {
		warning = e
		if w := whatif.SpecWarning(res.Set); w != "" && !res.Off {
			warning += "; " + w
		}
	}
	// Every rollout of a file arrived at load time, so any grace > 0 keeps
	// them all pending: files are complete, hence the default of 0.
	rep := whatif.NewEngine(reg).Check(snap, time.Now(), *grace)

	out := checkJSON{
		Spans: rep.Spans, Rollouts: rep.Rollouts, Traces: rep.Traces, Intact: rep.Intact,
		RolloutsJoined: rep.Joined, RolloutsSplit: rep.Split, RolloutsPending: rep.Pending,
		BrokenHops: []hopJSON{}, BadLines: badLines(frep), SplitRollouts: []string{},
		Spec: specText, SpecSource: source, SpecWarning: warning, variantJSON: vc.json(),
		trafficJSON: trafficOf(rep.Structure),
	}
	ev = rejoin(ev, rep.Structure)
	out.Evidence, out.RolloutEvidence = evidenceSummary(ev), rolloutEvidence(ev, rep.Structure)
	toks := tokenReport(rep.Structure)
	out.Tokens = tokenTotal(toks)
	for id, t := range toks.PerRollout {
		if out.RolloutTokens == nil {
			out.RolloutTokens = map[string]*tokensJSON{}
		}
		out.RolloutTokens[id] = tokensOut(t)
	}
	hops := rep.HopSummary()
	for _, h := range hops {
		out.BrokenHops = append(out.BrokenHops, hopJSON{h.FromService, h.ToService, h.SpanName, h.Cause.Code(), h.Reason, h.Cause.Fix(), h.Spans, h.Rollouts})
	}
	for id, rc := range rep.ByRollout {
		if rc.Status == whatif.Split {
			out.SplitRollouts = append(out.SplitRollouts, id)
		}
	}
	sort.Strings(out.SplitRollouts)
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
// is not a rollout: run-level traffic, unattributed fragments, context leaks.
type trafficJSON struct {
	RunTraffic            runTrafficJSON `json:"run_traffic"`
	UnattributedFragments int            `json:"unattributed_fragments"`
	ContextLeaks          int            `json:"context_leaks"`
	ContextLeakDetails    []leakJSON     `json:"context_leak_details"`
}

type runTrafficJSON struct {
	Spans  int            `json:"spans"`
	Traces int            `json:"traces"`
	Kinds  map[string]int `json:"kinds"`
}

type leakJSON struct {
	Service string `json:"service"`
	Span    string `json:"span"`
	Count   int    `json:"count"`
	Cause   string `json:"cause"`
}

func trafficOf(st *rollouts.Structure) trafficJSON {
	if st == nil {
		return trafficJSON{RunTraffic: runTrafficJSON{Kinds: map[string]int{}}, ContextLeakDetails: []leakJSON{}}
	}
	t := st.Traffic()
	out := trafficJSON{
		RunTraffic:            runTrafficJSON{Spans: t.RunSpans, Traces: t.RunTraces, Kinds: t.RunKinds},
		UnattributedFragments: t.Unattributed,
		ContextLeaks:          t.LeakSpans,
		ContextLeakDetails:    []leakJSON{},
	}
	for _, l := range t.Leaks {
		out.ContextLeakDetails = append(out.ContextLeakDetails, leakJSON{l.Service, l.Name, l.Count, rollouts.LeakCause})
	}
	return out
}

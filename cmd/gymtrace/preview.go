package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/gate/report"
	"github.com/nemo-gym/gymtrace/gate/whatif"
	"github.com/nemo-gym/gymtrace/receiver"
)

func cmdPreview(args []string) int { return runPreview(args, os.Stdout, os.Stderr) }

// badLinesJSON is the bad_lines object of --json outputs.
type badLinesJSON = report.BadLines

func badLines(rep receiver.FileReport) badLinesJSON {
	out := badLinesJSON{Count: rep.Skipped + rep.BadLines, Skipped: rep.Skipped, Bad: rep.BadLines, Samples: []string{},
		SpansRejected: rep.Decode.Rejected, RejectedReason: rep.Decode.Reason, ValuesRepaired: rep.Decode.ValuesRepaired}
	samples := append(append([]receiver.BadLine(nil), rep.BadSamples...), rep.SkippedSamples...)
	sort.SliceStable(samples, func(i, j int) bool {
		if samples[i].File != samples[j].File {
			return samples[i].File < samples[j].File
		}
		return samples[i].Line < samples[j].Line
	})
	for _, b := range samples {
		out.Samples = append(out.Samples, b.String())
	}
	return out
}

// previewJSON is the documented schema of `preview --json` (docs/json.md),
// shared with the MCP preview tool; its parts are gate/report's.
type (
	previewJSON        = report.Preview
	previewResultJSON  = report.PreviewResult
	groupJSON          = report.GroupFigures
	rolloutJSON        = report.RolloutFigures
	breakJSON          = report.Hop
	gapJSON            = report.Gap
	previewCurrentJSON = report.PreviewCurrent
)

func round2(f float64) float64 { return report.Round2(f) }

func groupNames(reg *groups.Registry, gs []groups.Group) []string { return report.GroupNames(reg, gs) }

func runPreview(args []string, stdout, stderr io.Writer) int {
	su := newSetup("preview", stdout, stderr, "usage: gymtrace preview --spec SPEC [--current SPEC] [--rollouts N] [--json] FILE...\n\n"+
		"What a span_groups spec would produce from a capture (best captured with span_groups: all).\n\n")
	fs := su.fs
	spec := fs.String("spec", "", "span_groups spec to preview (required), e.g. per_rollout or default,sandbox")
	su.settingFlags("current", "the setting in force, shown side by side")
	su.variantFlags("the capture; default: detected from the capture, else the newest")
	rollouts := fs.Int("rollouts", 10000, "project spans and bytes to this many rollouts")
	asJSON := fs.Bool("json", false, "print the report as JSON (schema: the README's JSON output section)")
	where := whereFlag(fs)
	su.evidenceFlag()
	wf := addWorthFlags(fs)
	files, code, done := su.parse(args)
	if done {
		return code
	}
	if *spec == "" {
		return su.failUsage("--spec is required")
	}
	if len(files) == 0 {
		return su.failUsage("no capture files given")
	}
	budget, err := wf.check()
	if err != nil {
		return su.fail("%v", err)
	}
	if *rollouts < 0 {
		return su.fail("--rollouts %d: want a count >= 0", *rollouts)
	}
	// The variant decides what the spec means: --gym-version, else what
	// the whole capture shows.
	c, err := su.open(files, readOptions{})
	if err != nil {
		return su.fail("%v", err)
	}
	defer c.store.Close()
	curSpec, curSource, _ := su.setting()
	snap, frep, vc, reg := c.snap, c.frep, c.vc, c.reg
	ev, err := su.joinEvidence(reg, snap)
	if err != nil {
		return su.fail("%v", err)
	}
	if snap, err = selectWhere(reg, snap, *where, ev); err != nil {
		return su.fail("%v", err)
	}
	pa := report.PreviewArgs{Spec: *spec, Current: report.Setting{Spec: curSpec, Source: curSource}, Rollouts: *rollouts,
		SpanCost: *wf.spanCost, Budget: budget, Rate: *wf.rate, Evidence: ev}
	run := report.RunPreview(whatif.NewEngine(reg), snap, pa)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(report.NewPreview(vc.json(), run, pa, badLines(frep))); err != nil {
			return su.fail("%v", err)
		}
		return exitOK
	}
	res, set, cur, rep, curV, repV, capV, spread, copySpec, refused := run.Res, run.Res.Set, run.Cur, run.Rep, run.CurV, run.RepV, run.CapV, run.Spread, run.CopySpec, run.Refused
	worth, verdict := run.Worth, run.Verdict
	ev = run.Ev
	writePreviewText(stdout, reg, vc, *spec, res, curSpec, curSource, cur, rep, curV, repV, capV, spread, frep, *rollouts, copySpec, refused)
	writeWorthText(stdout, reg, set, worth, *wf.spanCost, verdict)
	writeEvidenceText(stdout, ev)
	return exitOK
}

func shownGroup(reg *groups.Registry, g groups.Group) bool { return report.ShownGroup(reg, g) }

func nonNil(xs []string) []string { return report.NonNil(xs) }

func writePreviewText(w io.Writer, reg *groups.Registry, vc variantChoice, spec string, res groups.Resolution, curSpec, curSource string, cur, rep *whatif.Report, curV, repV, capV whatif.JoinVerdict, spread *whatif.Spread, frep receiver.FileReport, projectTo int, copySpec string, refused error) {
	fmt.Fprintf(w, "variant: %s\n", vc)
	if e := res.Effect(); e != "" {
		fmt.Fprintf(w, "%s\n", e)
	}
	fmt.Fprintf(w, "capture: %d spans, %d rollouts, %d traces over %.3gs; groups captured: %s\n",
		rep.Input.Spans, rep.Input.Rollouts, rep.Input.Traces, rep.WallSeconds, strings.Join(reg.Names(rep.Input.Captured), ", "))
	if n := frep.Skipped + frep.BadLines; n > 0 {
		fmt.Fprintf(w, "skipped %d lines that are not spans (first: %s)\n", n, firstSample(frep))
	}
	writeTokensText(w, tokenReport(rep.Structure))
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "\tcurrent: %s\tpreview: %s\t\n", curSpec, spec)
	row := func(name string, a, b any) { fmt.Fprintf(tw, "%s\t%v\t%v\t\n", name, a, b) }
	c, r := cur.Result, rep.Result
	row("spans kept", c.Spans, r.Spans)
	row("spans dropped", c.Dropped, r.Dropped)
	row("traces", c.Traces, r.Traces)
	row("largest trace (spans)", c.LargestTrace, r.LargestTrace)
	row("rollouts joined", curV.Joined, repV.Joined)
	row("rollouts split", curV.Split, repV.Split)
	row("spans/rollout p50", c.P50, r.P50)
	row("spans/rollout p99", c.P99, r.P99)
	row("spans/rollout max", c.Max, r.Max)
	row("est. OTLP bytes", c.Bytes, r.Bytes)
	row("spans/s", fmt.Sprintf("%.1f", c.SpansPerSecond), fmt.Sprintf("%.1f", r.SpansPerSecond))
	cs, cb := cur.Project(projectTo)
	ps, pb := rep.Project(projectTo)
	row(fmt.Sprintf("at %d rollouts: spans", projectTo), cs, ps)
	row(fmt.Sprintf("at %d rollouts: bytes", projectTo), cb, pb)
	tw.Flush()
	fmt.Fprintf(w, "(current from %s)\n", curSource)
	if capV.String() != curV.String() {
		// The rows predict each spec as if every process ran it: a capture
		// a process broke reads joined there, so say how it was.
		fmt.Fprintf(w, "as captured: %s (the rows above predict each spec as if every process ran it)\n", capV.String())
	}
	if repV.LowerBound() {
		fmt.Fprintf(w, "note: %s:\n", whatif.LowerBoundNote)
		for _, g := range repV.Gaps {
			fmt.Fprintf(w, "  %s\n", g.String(reg))
		}
	}
	if spread != nil {
		fmt.Fprintf(w, "%s\n", spread.Sentence())
	}
	fmt.Fprintln(w)

	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "group\tcaptured\tkept now\tkept in preview\n")
	for i, gc := range rep.PerGroup {
		if gc.Captured == 0 && gc.Group == groups.Unclassified || !shownGroup(reg, gc.Group) {
			continue
		}
		if gc.Captured == 0 && !rep.Spec.Has(gc.Group) && !cur.Spec.Has(gc.Group) {
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\n", reg.Name(gc.Group), gc.Captured, cur.PerGroup[i].Kept, gc.Kept)
	}
	tw.Flush()
	if len(rep.NotInCapture) > 0 {
		fmt.Fprintf(w, "\nnot in capture (emit spans, none captured: capture with span_groups: all to see them): %s\n", strings.Join(groupNames(reg, rep.NotInCapture), ", "))
	}
	// A span-less group whose metric was captured is shown at work, not
	// listed as emitting nothing.
	var silent []groups.Group
	for _, g := range rep.NoSpans {
		if n, ok := rep.MetricsSeen[g]; ok {
			fmt.Fprintf(w, "%s: metric %s, %d points\n", reg.Name(g), reg.Info(g).Metric, n)
		} else {
			silent = append(silent, g)
		}
	}
	if len(silent) > 0 {
		fmt.Fprintf(w, "no spans (these groups never emit spans in Gym): %s\n", strings.Join(groupNames(reg, silent), ", "))
	}
	br := rep.BreakSummary(nil)
	if len(br) > 0 {
		fmt.Fprintf(w, "\nbroken joins under the preview:\n")
		for _, b := range br {
			fmt.Fprintf(w, "  %s %s: %s\n", whatif.HopName(b, "->", keepName), hopCounts(b), b.Reason)
		}
	}
	if refused != nil {
		fmt.Fprintf(w, "\nno snippet: %v\n", refused)
		return
	}
	use := "to use it"
	if repV.Split > 0 {
		// The snippet follows the broken joins: say it keeps them.
		use = fmt.Sprintf("to use it anyway (it splits %d of %d rollouts, as above)", repV.Split, repV.Joined+repV.Split)
	}
	fmt.Fprintf(w, "\n%s, in the Gym config:\n%s\nor in the environment:\n  %s\n", use, indent(groups.TelemetryYAML(copySpec)), groups.EnvLine(copySpec))
}

func firstSample(rep receiver.FileReport) string {
	all := append(append([]receiver.BadLine(nil), rep.BadSamples...), rep.SkippedSamples...)
	if len(all) == 0 {
		return "none kept"
	}
	sort.SliceStable(all, func(i, j int) bool {
		return all[i].File < all[j].File || all[i].File == all[j].File && all[i].Line < all[j].Line
	})
	return all[0].String()
}

func indent(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = "  " + l
	}
	return strings.Join(lines, "\n")
}

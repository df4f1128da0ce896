package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/nemo-gym/gymtrace/gate/evidence"
	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/gate/report"
	"github.com/nemo-gym/gymtrace/gate/whatif"
	"github.com/nemo-gym/gymtrace/model"
)

func cmdDiff(args []string) int { return runDiff(args, os.Stdout, os.Stderr) }

// diffJSON is the documented schema of `diff --json` (docs/json.md),
// shared with the MCP compare tool.
type (
	diffJSON     = report.Diff
	diffSideJSON = report.DiffSide
	diffSpanJSON = report.DiffSpan
)

func ms(ns int64) float64 { return round2(float64(ns) / 1e6) }

// splitBFrom takes `--b-from FILE...` out of args: every argument after the
// flag up to the next flag is a file of B's capture.
func splitBFrom(args []string) (rest, bFiles []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if v, ok := strings.CutPrefix(strings.TrimLeft(a, "-"), "b-from="); ok && strings.HasPrefix(a, "-") {
			bFiles = append(bFiles, v)
			continue
		}
		if a == "--b-from" || a == "-b-from" {
			for i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				i++
				bFiles = append(bFiles, args[i])
			}
			continue
		}
		rest = append(rest, a)
	}
	return rest, bFiles
}

func runDiff(args []string, stdout, stderr io.Writer) int {
	su := newSetup("diff", stdout, stderr, "usage: gymtrace diff [--json] [--a-spec S] [--b-spec S] ROLLOUT_A ROLLOUT_B FILE... [--b-from FILE...]\n"+
		"       gymtrace diff --cohort FILTER [--baseline FILTER] [--top N] [--json] FILE...\n\n"+
		"Compares two rollouts span by span: operations side by side, spans only one has, the first\n"+
		"place the trees part, error differences. A rollout against itself (same spec) has no difference.\n"+
		"With --cohort, compares a cohort of rollouts with a baseline: the span names, groups, services and\n"+
		"attribute values whose count per rollout, time share or error rate differ most, by effect size.\n\n")
	fs := su.fs
	asJSON := fs.Bool("json", false, "print the comparison as JSON (schema: the README's JSON output section)")
	specA := fs.String("a-spec", "", "compare rollout A as it would be under this span_groups spec")
	specB := fs.String("b-spec", "", "compare rollout B as it would be under this span_groups spec")
	su.variantFlags("A's capture; default: detected from it, else the newest")
	su.evidenceFlag()
	fs.String("b-from", "", "read rollout B from these files (FILE... up to the next flag) instead of A's capture")
	cohortF := fs.String("cohort", "", "compare the rollouts this filter selects with the baseline, feature by feature (FILE... only)")
	baselineF := fs.String("baseline", "", "with --cohort: the baseline's filter (default: every rollout not in the cohort)")
	top := fs.Int("top", 20, "with --cohort: how many rows to print (0: all)")
	args, bFiles := splitBFrom(args)
	pos, code, done := su.parse(args)
	if done {
		return code
	}
	fail := su.fail
	if *cohortF != "" || *baselineF != "" {
		return runCohort(su, *cohortF, *baselineF, *top, *asJSON, pos, len(bFiles) > 0, stdout)
	}
	if len(pos) < 3 {
		return su.failUsage("want ROLLOUT_A ROLLOUT_B and at least one capture file")
	}
	idA, idB, files := pos[0], pos[1], pos[2:]
	// The specs mean what A's Gym variant makes of them.
	c, err := su.open(files, readOptions{})
	if err != nil {
		return fail("%v", err)
	}
	defer c.store.Close()
	snapA, vc, reg := c.snap, c.vc, c.reg
	setA, underA, err := su.appliedFlag(reg, *specA, "a-spec")
	if err != nil {
		return fail("%v", err)
	}
	setB, underB, err := su.appliedFlag(reg, *specB, "b-spec")
	if err != nil {
		return fail("%v", err)
	}
	snapB, filesB := snapA, files
	if len(bFiles) > 0 {
		storeB, s, _, err := loadCaptures(bFiles)
		defer storeB.Close()
		if err != nil {
			return fail("--b-from: %v", err)
		}
		snapB, filesB = s, bFiles
	}
	eng := whatif.NewEngine(reg)
	side := func(snap *model.Snapshot, id string, set groups.Set, under bool, which string) (whatif.DiffSide, error) {
		r, err := findRollout(eng.Structure(snap).Snap, id)
		if err != nil {
			return whatif.DiffSide{}, fmt.Errorf("rollout %s %w", which, err)
		}
		if !under {
			return whatif.RolloutSide(snap, r), nil
		}
		return eng.SpecSide(snap, r, set), nil
	}
	a, err := side(snapA, idA, setA, underA, "A")
	if err != nil {
		return fail("%v", err)
	}
	// The engine caches per snapshot: B from another capture gets its own.
	if snapB != snapA {
		eng = whatif.NewEngine(reg)
	}
	b, err := side(snapB, idB, setB, underB, "B")
	if err != nil {
		return fail("%v", err)
	}
	d := whatif.CompareRollouts(a, b)
	out := report.NewDiff(vc.json(), d, files, filesB, *specA, *specB)
	if ev, err := su.joinEvidence(reg, snapA); err != nil {
		return fail("%v", err)
	} else if ev != nil {
		out.AEvidence = ev.Rollout(a.Rollout)
		if snapB == snapA {
			out.BEvidence = ev.Rollout(b.Rollout)
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return fail("%v", err)
		}
		return exitOK
	}
	writeDiffText(stdout, out)
	return exitOK
}

func writeDiffText(w io.Writer, d diffJSON) {
	side := func(s diffSideJSON) string {
		t := fmt.Sprintf("%s: %d %s, %d %s, %d %s, %.2fms", s.RolloutID, s.Spans, plural(s.Spans, "span", "spans"),
			s.Errors, plural(s.Errors, "error", "errors"), s.Traces, plural(s.Traces, "trace", "traces"), s.DurationMS)
		if s.Spec != "" {
			t += " under " + s.Spec
		}
		return t
	}
	fmt.Fprintf(w, "A %s\nB %s\n\n", side(d.A), side(d.B))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "\tservice\tspan\tA n\tB n\tA err\tB err\tA total\tB total\tA max\tB max\n")
	for _, o := range d.Operations {
		mark := " "
		if o.CountA != o.CountB || o.ErrorsA != o.ErrorsB {
			mark = "≠"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%.2fms\t%.2fms\t%.2fms\t%.2fms\n", mark, shortSvc(o.Service), o.Name,
			o.CountA, o.CountB, o.ErrorsA, o.ErrorsB, o.TotalMSA, o.TotalMSB, o.MaxMSA, o.MaxMSB)
	}
	tw.Flush()
	list := func(title string, ss []diffSpanJSON) {
		if len(ss) == 0 {
			return
		}
		fmt.Fprintf(w, "\n%s (%d):\n", title, len(ss))
		for _, s := range ss {
			msg := ""
			if s.Message != "" {
				msg = ": " + s.Message
			}
			fmt.Fprintf(w, "  %s [%s] %s under %s%s\n", s.Name, shortSvc(s.Service), s.SpanID, pathText(s.Path), msg)
		}
	}
	list("only in A", d.OnlyA)
	list("only in B", d.OnlyB)
	if len(d.Moved) > 0 {
		fmt.Fprintf(w, "\nmoved (%d), on both sides under another parent:\n", len(d.Moved))
		for _, mv := range d.Moved {
			fmt.Fprintf(w, "  %s [%s] %s\n    A under %s\n    B under %s\n", mv.Name, shortSvc(mv.Service), mv.SpanID, pathText(mv.PathA), pathText(mv.PathB))
		}
	}
	list("errors only in A", d.ErrorsOnlyA)
	list("errors only in B", d.ErrorsOnlyB)
	if dv := d.FirstDivergence; dv != nil {
		fmt.Fprintf(w, "\nfirst divergence under %s: A has %s, B has %s\n", pathText(dv.Path), orNothing(dv.A), orNothing(dv.B))
	} else if len(d.ErrorsOnlyA)+len(d.ErrorsOnlyB) == 0 {
		fmt.Fprintf(w, "\nsame spans, same tree, same errors\n")
	}
	for _, e := range []struct {
		side string
		b    *evidence.RolloutJSON
	}{{"A", d.AEvidence}, {"B", d.BEvidence}} {
		if e.b != nil {
			fmt.Fprintf(w, "evidence %s: %s\n", e.side, evidenceText(e.b))
		}
	}
}

func shortSvc(s string) string { return strings.TrimPrefix(s, "nemo-gym/") }

func pathText(p []string) string {
	if len(p) == 0 {
		return "(top)"
	}
	return strings.Join(p, " › ")
}

func orNothing(s string) string {
	if s == "" {
		return "nothing more"
	}
	return s
}

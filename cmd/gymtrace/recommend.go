package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/nemo-gym/gymtrace/gate/advise"
	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/gate/report"
	"github.com/nemo-gym/gymtrace/gate/whatif"
)

func cmdRecommend(args []string) int { return runRecommend(args, os.Stdout, os.Stderr) }

// recommendJSON is the documented schema of `recommend --json` (README.md,
// "Recommend a spec"), shared with the MCP recommend tool.
type recommendJSON = report.Recommend

func runRecommend(args []string, stdout, stderr io.Writer) int {
	su := newSetup("recommend", stdout, stderr, "usage: gymtrace recommend --budget B [--must GROUPS] [--never GROUPS] [--allow-splits] [--json] FILE...\n\n"+
		"Searches the capture's Gym variant's span_groups for the specs that fit a budget, joins intact,\n"+
		"and ranks them by what they keep: rollout wall time covered, error spans, groups.\n"+
		"Exit status: 0 a spec fits, 1 none does, 2 bad input or usage.\n\n")
	fs := su.fs
	su.variantFlags("the capture; default: detected from the capture, else the newest")
	wf := addWorthFlags(fs)
	must := fs.String("must", "", "groups (or presets) every answer keeps, e.g. verify")
	never := fs.String("never", "", "groups (or presets) no answer keeps, e.g. sandbox")
	allowSplits := fs.Bool("allow-splits", false, "accept specs that split rollouts the capture joins")
	runnersUp := fs.Int("runners-up", 3, "how many specs after the best to show")
	asJSON := fs.Bool("json", false, "print the answer as JSON (schema: the README's recommend section)")
	where := whereFlag(fs)
	su.evidenceFlag()
	files, code, done := su.parse(args)
	if done {
		return code
	}
	if *wf.budget == "" {
		return su.failUsage("--budget is required")
	}
	if len(files) == 0 {
		return su.failUsage("no capture files given")
	}
	if *runnersUp < 0 {
		return su.fail("--runners-up %d: want a count >= 0", *runnersUp)
	}
	budget, err := wf.check()
	if err != nil {
		return su.fail("%v", err)
	}
	c, err := su.open(files, readOptions{})
	if err != nil {
		return su.fail("%v", err)
	}
	defer c.store.Close()
	reg := c.reg
	ev, err := su.joinEvidence(reg, c.snap)
	if err != nil {
		return su.fail("%v", err)
	}
	snap, err := selectWhere(reg, c.snap, *where, ev)
	if err != nil {
		return su.fail("%v", err)
	}
	opt := advise.Options{Budget: *budget, Rate: *wf.rate, AllowSplits: *allowSplits, RunnersUp: *runnersUp}
	for _, f := range []struct {
		name, val string
		set       *groups.Set
	}{{"must", *must, &opt.Must}, {"never", *never, &opt.Never}} {
		if strings.TrimSpace(f.val) == "" {
			continue
		}
		if *f.set, err = reg.Parse(f.val); err != nil {
			return su.fail("--%s: %v", f.name, err)
		}
	}
	eng := whatif.NewEngine(reg)
	a, err := advise.Recommend(eng, snap, opt)
	if err != nil {
		return su.fail("--must %q, --never %q: %v", *must, *never, err)
	}
	code = exitOK
	if a.Best == nil {
		code = exitBroken
	}
	wall := eng.Preview(snap, reg.All()).WallSeconds
	if *asJSON {
		out := report.NewRecommend(c.vc.json(), eng, snap, a, opt, *wf.spanCost, badLines(c.frep))
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return su.fail("%v", err)
		}
		return code
	}

	w := stdout
	fmt.Fprintf(w, "variant: %s\n", c.vc)
	fmt.Fprintf(w, "capture: %d spans, %d rollouts over %.3gs\n", snap.Stats.Stored, len(eng.Structure(snap).Rollouts), wall)
	joins := "joins intact"
	if opt.AllowSplits {
		joins = "splits allowed"
	}
	fmt.Fprintf(w, "budget %s, %s; searched %s (%d specs): %d previewed, %d skipped (a subset already missed the budget)\n",
		budget, joins, strings.Join(reg.Names(a.Searched), ", "), a.Space, a.Previewed, a.Pruned)
	if opt.Must != 0 {
		fmt.Fprintf(w, "required: %s\n", strings.Join(reg.Names(opt.Must), ", "))
	}
	if opt.Never != 0 {
		fmt.Fprintf(w, "excluded: %s\n", strings.Join(reg.Names(opt.Never), ", "))
	}
	if a.Free != 0 {
		fmt.Fprintf(w, "in every answer (no spans in Gym, nothing to pay): %s\n", strings.Join(reg.Names(a.Free), ", "))
	}
	if a.Unjudged != 0 {
		fmt.Fprintf(w, "in every answer, not judged (they emit spans, none in the capture: free here, of unknown cost where they emit; capture with span_groups: all to judge them, or --never them): %s\n", strings.Join(reg.Names(a.Unjudged), ", "))
	}
	if a.Best == nil {
		fmt.Fprintf(w, "\nno spec: %s\n", a.Outcome.Text())
		if a.Floor != nil {
			fmt.Fprintf(w, "cheapest: %s, %s\n", reg.Spec(a.Floor.Set), a.Floor.Verdict)
		}
		return code
	}
	b := a.Best
	fmt.Fprintf(w, "\nbest: %s\n  %s\n  keeps %s; %d rollouts joined, %d split\n", reg.Spec(b.Set), b.Verdict, keeps(b), b.RolloutsJoined, b.RolloutsSplit)
	writeWorthText(w, reg, b.Set, eng.Worth(snap, b.Set, *wf.spanCost), *wf.spanCost, nil)
	if spec, err := reg.CopyOut(b.Set); err != nil {
		fmt.Fprintf(w, "\nno snippet: %v\n", err)
	} else {
		fmt.Fprintf(w, "\nto use it, in the Gym config:\n%s\nor in the environment:\n  %s\n", indent(groups.TelemetryYAML(spec)), groups.EnvLine(spec))
	}
	if len(a.RunnersUp) > 0 {
		fmt.Fprintf(w, "\nrunners-up:\n")
		for _, r := range a.RunnersUp {
			fmt.Fprintf(w, "  %s: %s%s; %s %s\n", reg.Spec(r.Set), r.Why(b), tradeText(reg, r), r.Verdict.ValueText(), advise.Unit(*budget))
		}
	}
	return code
}

// keeps is a candidate's worth as the text report says it.
func keeps(c *advise.Candidate) string {
	return fmt.Sprintf("%.1f%% of rollout wall time, %d error %s, %d %s", 100*c.WallShare,
		c.ErrorSpans, plural(c.ErrorSpans, "span", "spans"), c.Groups, plural(c.Groups, "group", "groups"))
}

// tradeText is what a runner-up has instead of the best's groups.
func tradeText(reg *groups.Registry, r advise.RunnerUp) string {
	var parts []string
	if r.Lacks != 0 {
		parts = append(parts, "without "+strings.Join(reg.Names(r.Lacks), ","))
	}
	if r.Adds != 0 {
		parts = append(parts, "with "+strings.Join(reg.Names(r.Adds), ","))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

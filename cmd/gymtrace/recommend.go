package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/nemo-gym/gymtrace/gate/advise"
	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/gate/whatif"
)

func cmdRecommend(args []string) int { return runRecommend(args, os.Stdout, os.Stderr) }

// recommendJSON is the documented schema of `recommend --json` (README.md,
// "Recommend a spec").
type recommendJSON struct {
	variantJSON
	Budget      string   `json:"budget"`
	Must        []string `json:"must"`
	Never       []string `json:"never"`
	AllowSplits bool     `json:"allow_splits"`
	// Outcome: found, must_too_dear, none_fits or none_joins.
	Outcome        string               `json:"outcome"`
	Reason         string               `json:"reason"`
	SearchedGroups []string             `json:"searched_groups"`
	FreeGroups     []string             `json:"free_groups"`
	UnjudgedGroups []string             `json:"unjudged_groups"`
	Space          int                  `json:"space"`
	Previewed      int                  `json:"previewed"`
	Pruned         int                  `json:"pruned"`
	Best           *candidateJSON       `json:"best"`
	RunnersUp      []runnerUpJSON       `json:"runners_up"`
	Floor          *candidateJSON       `json:"floor"`
	Rollouts       int                  `json:"rollouts"`
	WallSeconds    float64              `json:"wall_seconds"`
	BadLines       badLinesJSON         `json:"bad_lines"`
	PerGroup       map[string]groupJSON `json:"per_group"`
}

type candidateJSON struct {
	Spec           string            `json:"spec"`
	Groups         []string          `json:"groups"`
	Budget         *budgetJSON       `json:"budget"`
	Spans          int               `json:"spans"`
	Bytes          int64             `json:"bytes"`
	RolloutsJoined int               `json:"rollouts_joined"`
	RolloutsSplit  int               `json:"rollouts_split"`
	NewSplits      int               `json:"new_splits"`
	WallShare      float64           `json:"wall_share"`
	ErrorSpans     int               `json:"error_spans"`
	GroupsKept     int               `json:"groups_kept"`
	Snippets       map[string]string `json:"snippets"`
}

type runnerUpJSON struct {
	candidateJSON
	WorseBy string   `json:"worse_by"`
	Why     string   `json:"why"`
	Lacks   []string `json:"lacks"`
	Adds    []string `json:"adds"`
}

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
		out := recommendJSON{
			variantJSON: c.vc.json(), Budget: budget.String(), Must: nonNil(reg.Names(opt.Must)), Never: nonNil(reg.Names(opt.Never)),
			AllowSplits: opt.AllowSplits, Outcome: a.Outcome.String(), Reason: a.Outcome.Text(),
			SearchedGroups: nonNil(reg.Names(a.Searched)), FreeGroups: nonNil(reg.Names(a.Free)), UnjudgedGroups: nonNil(reg.Names(a.Unjudged)),
			Space: a.Space, Previewed: a.Previewed, Pruned: a.Pruned, RunnersUp: []runnerUpJSON{},
			Rollouts: len(eng.Structure(snap).Rollouts), WallSeconds: round2(wall), BadLines: badLines(c.frep),
			PerGroup: map[string]groupJSON{},
		}
		if a.Best != nil {
			out.Best = candidateOut(reg, a.Best)
			rep := eng.Preview(snap, a.Best.Set)
			for _, gc := range rep.PerGroup {
				if gc.Captured > 0 && shownGroup(reg, gc.Group) {
					out.PerGroup[reg.Name(gc.Group)] = groupJSON{Captured: gc.Captured, Kept: gc.Kept}
				}
			}
			addWorth(out.PerGroup, reg, eng.Worth(snap, a.Best.Set, *wf.spanCost), *wf.spanCost)
		}
		out.Floor = candidateOut(reg, a.Floor)
		for _, r := range a.RunnersUp {
			out.RunnersUp = append(out.RunnersUp, runnerUpJSON{candidateJSON: *candidateOut(reg, &r.Candidate),
				WorseBy: r.Short.String(), Why: r.Why(a.Best), Lacks: nonNil(reg.Names(r.Lacks)), Adds: nonNil(reg.Names(r.Adds))})
		}
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

func candidateOut(reg *groups.Registry, c *advise.Candidate) *candidateJSON {
	if c == nil {
		return nil
	}
	out := &candidateJSON{
		Spec: reg.Spec(c.Set), Groups: nonNil(reg.Names(c.Set)), Budget: budgetOut(c.Verdict), Spans: c.Spans, Bytes: c.Bytes,
		RolloutsJoined: c.RolloutsJoined, RolloutsSplit: c.RolloutsSplit, NewSplits: c.NewSplits,
		WallShare: round4(c.WallShare), ErrorSpans: c.ErrorSpans, GroupsKept: c.Groups, Snippets: map[string]string{},
	}
	if spec, err := reg.CopyOut(c.Set); err == nil {
		out.Spec = spec
		out.Snippets["yaml"], out.Snippets["env"] = groups.TelemetryYAML(spec), groups.EnvLine(spec)
	}
	return out
}

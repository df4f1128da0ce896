package main

import (
	"encoding/json"
	"fmt"
	"github.com/nemo-gym/gymtrace/gate/evidence"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

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

// previewJSON is the documented schema of `preview --json` (docs/json.md).
type previewJSON struct {
	variantJSON
	// Evidence: what Gym's files say and how they joined, with --evidence.
	Evidence *evidence.SummaryJSON `json:"evidence,omitempty"`
	Spec     string                `json:"spec"`
	Groups   []string              `json:"groups"`
	// TelemetryOff: the variant refuses the spec and Gym switches telemetry
	// off in every process; GymMessage is Gym's own text then, or its
	// warning for the Dropped names.
	TelemetryOff bool                 `json:"telemetry_off"`
	Dropped      []string             `json:"dropped"`
	GymMessage   string               `json:"gym_message"`
	Input        previewInputJSON     `json:"input"`
	Result       previewResultJSON    `json:"result"`
	PerGroup     map[string]groupJSON `json:"per_group"`
	PerRollout   []rolloutJSON        `json:"per_rollout"`
	NotInCapture []string             `json:"not_in_capture"`
	NoSpans      []string             `json:"no_spans"`
	Metrics      map[string]int64     `json:"metrics"`
	WallSeconds  float64              `json:"wall_seconds"`
	Projection   projectionJSON       `json:"projection"`
	Current      *previewCurrentJSON  `json:"current"`
	Snippets     map[string]string    `json:"snippets"`
	// SnippetsRefused says why there are no snippets: the spec is one the
	// variant would not apply as meant.
	SnippetsRefused string       `json:"snippets_refused"`
	BadLines        badLinesJSON `json:"bad_lines"`
	Breaks          []breakJSON  `json:"breaks"`
	Latency         latencyJSON  `json:"latency"`
	Budget          *budgetJSON  `json:"budget"`
	// AsCaptured is the capture's join as it was (check's), beside the
	// predictions, which read it as if every process ran their spec.
	AsCaptured asCapturedJSON `json:"as_captured"`
	// SpansSpread says how far a run under the spec may differ from
	// result.spans in timing-dependent spans (G3); null when exact.
	SpansSpread *spreadJSON `json:"spans_spread"`
	// Tokens: the capture's token usage, when spans report any.
	Tokens *tokenTotalJSON `json:"tokens,omitempty"`
	trafficJSON
}

type asCapturedJSON struct {
	Intact  bool   `json:"intact"`
	Joined  int    `json:"joined"`
	Split   int    `json:"split"`
	Pending int    `json:"pending"`
	Verdict string `json:"verdict"`
}

type spreadJSON struct {
	Note     string `json:"note"`
	Requests int    `json:"requests"`
	Fewer    int    `json:"fewer"`
	More     int    `json:"more"`
	Run      int    `json:"run"`
	SpansMin int    `json:"spans_min"`
	SpansMax int    `json:"spans_max"`
	Rollout  int    `json:"rollout"`
}

type previewInputJSON struct {
	Spans          int      `json:"spans"`
	Rollouts       int      `json:"rollouts"`
	Traces         int      `json:"traces"`
	CapturedGroups []string `json:"captured_groups"`
	Unclassified   int      `json:"unclassified"`
}

type previewResultJSON struct {
	Spans           int         `json:"spans"`
	Dropped         int         `json:"dropped"`
	Traces          int         `json:"traces"`
	Bytes           int64       `json:"bytes"`
	LargestTrace    int         `json:"largest_trace_spans"`
	RolloutsJoined  int         `json:"rollouts_joined"`
	RolloutsSplit   int         `json:"rollouts_split"`
	SpansPerRollout percentiles `json:"spans_per_rollout"`
	SpansPerSecond  float64     `json:"spans_per_second"`
	BytesPerSecond  float64     `json:"bytes_per_second"`
	// SpansLowerBound: the capture lacks spans the spec emits (CaptureGaps),
	// so spans, bytes and traces count at least this many.
	SpansLowerBound bool      `json:"spans_lower_bound"`
	CaptureGaps     []gapJSON `json:"capture_gaps"`
}

type percentiles struct {
	P50 int `json:"p50"`
	P99 int `json:"p99"`
	Max int `json:"max"`
}

type groupJSON struct {
	Captured int             `json:"captured"`
	Kept     int             `json:"kept"`
	Cost     *groupCostJSON  `json:"cost"`
	Worth    *groupWorthJSON `json:"worth"`
}

type rolloutJSON struct {
	RolloutID string         `json:"rollout_id"`
	Spans     int            `json:"spans"`
	Traces    int            `json:"traces"`
	Captured  int            `json:"captured"`
	Joined    bool           `json:"joined"`
	PerGroup  map[string]int `json:"per_group"`
	// SpansMin and SpansMax bound the rollout's spans in a run under the
	// spec when spans_spread is set.
	SpansMin *int `json:"spans_min,omitempty"`
	SpansMax *int `json:"spans_max,omitempty"`
	// Tokens: the rollout's token usage as captured, when its spans
	// report any.
	Tokens *tokensJSON `json:"tokens,omitempty"`
	// Evidence: what Gym's files say of the rollout, with --evidence.
	Evidence *evidence.RolloutJSON `json:"evidence,omitempty"`
}

type breakJSON struct {
	FromService string `json:"from_service"`
	ToService   string `json:"to_service"`
	SpanName    string `json:"span_name"`
	Cause       string `json:"cause"` // the reason's stable code
	Reason      string `json:"reason"`
	Fix         string `json:"fix,omitempty"`
	Count       int    `json:"count"`
	Rollouts    int    `json:"rollouts"`
}

type projectionJSON struct {
	Rollouts int   `json:"rollouts"`
	Spans    int   `json:"spans"`
	Bytes    int64 `json:"bytes"`
}

type previewCurrentJSON struct {
	Spec         string            `json:"spec"`
	Source       string            `json:"source"`
	TelemetryOff bool              `json:"telemetry_off"`
	Dropped      []string          `json:"dropped"`
	Result       previewResultJSON `json:"result"`
}

// gapJSON is a group the spec keeps that a process did not emit when the
// capture was made.
type gapJSON struct {
	Service string `json:"service"`
	Group   string `json:"group"`
	Cause   string `json:"cause"`
}

func resultJSON(reg *groups.Registry, r whatif.Result, v whatif.JoinVerdict) previewResultJSON {
	gaps := []gapJSON{}
	for _, g := range v.Gaps {
		gaps = append(gaps, gapJSON{Service: g.Service, Group: reg.Name(g.Group), Cause: g.Cause.Code()})
	}
	return previewResultJSON{
		Spans: r.Spans, Dropped: r.Dropped, Traces: r.Traces, Bytes: r.Bytes, LargestTrace: r.LargestTrace,
		RolloutsJoined: v.Joined, RolloutsSplit: v.Split, SpansLowerBound: v.LowerBound(), CaptureGaps: gaps,
		SpansPerRollout: percentiles{r.P50, r.P99, r.Max},
		SpansPerSecond:  round2(r.SpansPerSecond), BytesPerSecond: round2(r.BytesPerSecond),
	}
}

func round2(f float64) float64 { return float64(int64(f*100+0.5)) / 100 }

func groupNames(reg *groups.Registry, gs []groups.Group) []string {
	out := []string{}
	for _, g := range gs {
		out = append(out, reg.Name(g))
	}
	sort.Strings(out)
	return out
}

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
	res := reg.Resolve(*spec)
	curRes := reg.Resolve(curSpec)
	set := res.Set
	eng := whatif.NewEngine(reg)
	cur := eng.PreviewResolution(snap, curRes)
	rep := eng.PreviewResolution(snap, res)
	copySpec, refused := reg.CopyOut(set)
	if res.Off {
		refused = fmt.Errorf("%w: %s", groups.ErrNotGymSpec, res.Effect())
	}
	// One joining verdict with the TUI's: the preview read with what the
	// capture itself shows broken.
	chk := eng.Check(snap, time.Now(), 0)
	ev = rejoin(ev, chk.Structure)
	curV, repV := whatif.Verdict(cur, chk), whatif.Verdict(rep, chk)
	capV := whatif.Captured(chk, cur)
	spread := eng.TimingSpread(snap, rep)
	worth := eng.Worth(snap, set, *wf.spanCost)
	var verdict *whatif.BudgetVerdict
	if budget != nil {
		v := budget.Judge(rep, *wf.rate)
		verdict = &v
	}

	if *asJSON {
		out := previewJSON{
			variantJSON:  vc.json(),
			Spec:         *spec,
			Groups:       reg.Names(set),
			TelemetryOff: res.Off,
			Dropped:      nonNil(res.Dropped),
			GymMessage:   res.Message,
			Input: previewInputJSON{
				Spans: rep.Input.Spans, Rollouts: rep.Input.Rollouts, Traces: rep.Input.Traces,
				CapturedGroups: reg.Names(rep.Input.Captured), Unclassified: rep.Input.Unclassified,
			},
			Result:       resultJSON(reg, rep.Result, repV),
			PerGroup:     map[string]groupJSON{},
			PerRollout:   []rolloutJSON{},
			NotInCapture: groupNames(reg, rep.NotInCapture),
			NoSpans:      groupNames(reg, rep.NoSpans),
			Metrics:      map[string]int64{},
			WallSeconds:  round2(rep.WallSeconds),
			Current: &previewCurrentJSON{Spec: curSpec, Source: curSource, TelemetryOff: curRes.Off,
				Dropped: nonNil(curRes.Dropped), Result: resultJSON(reg, cur.Result, curV)},
			Snippets:    map[string]string{},
			BadLines:    badLines(frep),
			Breaks:      []breakJSON{},
			trafficJSON: trafficOf(rep.Structure),
			Evidence:    evidenceSummary(ev),
		}
		if refused != nil {
			out.SnippetsRefused = refused.Error()
		} else {
			out.Snippets["yaml"], out.Snippets["env"] = groups.TelemetryYAML(copySpec), groups.EnvLine(copySpec)
		}
		for g, n := range rep.MetricsSeen {
			out.Metrics[reg.Name(g)] = n
		}
		if out.Groups == nil {
			out.Groups = []string{}
		}
		if out.Input.CapturedGroups == nil {
			out.Input.CapturedGroups = []string{}
		}
		out.Projection.Rollouts = *rollouts
		out.Projection.Spans, out.Projection.Bytes = rep.Project(*rollouts)
		for _, gc := range rep.PerGroup {
			if gc.Group == groups.Unclassified && gc.Captured == 0 || !shownGroup(reg, gc.Group) {
				continue
			}
			out.PerGroup[reg.Name(gc.Group)] = groupJSON{Captured: gc.Captured, Kept: gc.Kept}
		}
		toks := tokenReport(rep.Structure)
		out.Tokens = tokenTotal(toks)
		for _, r := range rep.PerRollout {
			rj := rolloutJSON{Tokens: tokensOut(toks.PerRollout[r.ID]), RolloutID: r.ID, Spans: r.Spans, Traces: r.Traces, Captured: r.Captured, Joined: r.Spans > 0 && !repV.IsSplit(r.ID), PerGroup: map[string]int{}}
			if spread != nil {
				rr := spread.PerRollout[r.ID]
				rj.SpansMin, rj.SpansMax = &rr.Min, &rr.Max
			}
			for _, gc := range r.Groups {
				if gc.Kept > 0 {
					rj.PerGroup[reg.Name(gc.Group)] = gc.Kept
				}
			}
			if ev != nil {
				rj.Evidence = ev.Rollout(r.ID)
			}
			out.PerRollout = append(out.PerRollout, rj)
		}
		out.Breaks = collectBreaks(rep)
		out.Latency = latencyOut(eng.Latency(snap, eng.Structure(snap).Rollouts))
		addWorth(out.PerGroup, reg, worth, *wf.spanCost)
		if verdict != nil {
			out.Budget = budgetOut(*verdict)
		}
		out.AsCaptured = asCapturedJSON{Intact: chk.Intact, Joined: capV.Joined, Split: capV.Split, Pending: capV.Pending, Verdict: capV.String()}
		if spread != nil {
			out.SpansSpread = &spreadJSON{Note: spread.Sentence(), Requests: spread.Requests, Fewer: spread.Fewer, More: spread.More,
				Run: spread.Run, SpansMin: spread.SpansMin, SpansMax: spread.SpansMax, Rollout: spread.Rollout}
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return su.fail("%v", err)
		}
		return exitOK
	}
	writePreviewText(stdout, reg, vc, *spec, res, curSpec, curSource, cur, rep, curV, repV, capV, spread, frep, *rollouts, copySpec, refused)
	writeWorthText(stdout, reg, set, worth, *wf.spanCost, verdict)
	writeEvidenceText(stdout, ev)
	return exitOK
}

// shownGroup: a report lists the variant's groups and the pseudo-groups,
// never the placeholders of built-in groups the variant lacks.
func shownGroup(reg *groups.Registry, g groups.Group) bool {
	return g == groups.Unclassified || g == groups.Ungated || reg.Known(g)
}

func nonNil(xs []string) []string {
	if xs == nil {
		return []string{}
	}
	return xs
}

// collectBreaks lists the hops the spec cuts as gate sums them for every view.
func collectBreaks(rep *whatif.Report) []breakJSON {
	out := []breakJSON{}
	for _, b := range rep.BreakSummary(nil) {
		out = append(out, breakJSON{FromService: b.FromService, ToService: b.ToService, SpanName: b.SpanName, Cause: b.Cause.Code(), Reason: b.Reason, Fix: b.Cause.Fix(), Count: b.Spans, Rollouts: b.Rollouts})
	}
	return out
}

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

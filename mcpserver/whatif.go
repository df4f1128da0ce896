package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nemo-gym/gymtrace/gate/advise"
	"github.com/nemo-gym/gymtrace/gate/evidence"
	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/gate/report"
	"github.com/nemo-gym/gymtrace/gate/whatif"
	"github.com/nemo-gym/gymtrace/model"
)

// Bounds of the what-if tools' lists.
const (
	DefaultRolloutRows = 100 // preview's per_rollout, check's split_rollouts
	MaxRolloutRows     = 1000
	MaxDiffRows        = 500 // each of compare's span lists
	DefaultRunnersUp   = 3
	MaxRunnersUp       = 20
)

// PreviewInput asks what a spec would produce.
type PreviewInput struct {
	Spec        string  `json:"spec" jsonschema:"the span_groups spec to preview, e.g. per_rollout or default,sandbox (groups list its names)"`
	Current     string  `json:"current,omitempty" jsonschema:"the setting to compare with (default: the one in force)"`
	Filter      string  `json:"filter,omitempty" jsonschema:"only rollouts matching this filter (the CLI's --where)"`
	Rollouts    int     `json:"rollouts,omitempty" jsonschema:"project spans and bytes to this many rollouts (default 10000)"`
	Budget      string  `json:"budget,omitempty" jsonschema:"a ceiling to judge the spec against, e.g. 120spans/rollout, 40KB/rollout, 50GB/day"`
	RolloutRate float64 `json:"rollout_rate,omitempty" jsonschema:"rollouts per second for /s and /day budgets (default: the capture's own)"`
	Limit       int     `json:"limit,omitempty" jsonschema:"per_rollout rows, 1-1000 (default 100)"`
	Cursor      string  `json:"cursor,omitempty" jsonschema:"next_cursor of the previous page of per_rollout"`
}

// RecommendInput is a budget and the groups that must and must not be in.
type RecommendInput struct {
	Budget      string  `json:"budget" jsonschema:"the ceiling: spans or bytes per rollout, per second or per day, e.g. 120spans/rollout, 40KB/rollout, 50GB/day"`
	Must        string  `json:"must,omitempty" jsonschema:"groups or presets every answer keeps, e.g. verify"`
	Never       string  `json:"never,omitempty" jsonschema:"groups or presets no answer keeps, e.g. sandbox"`
	AllowSplits bool    `json:"allow_splits,omitempty" jsonschema:"accept specs that split rollouts the capture joins"`
	RunnersUp   int     `json:"runners_up,omitempty" jsonschema:"specs after the best to show, 1-20 (default 3)"`
	RolloutRate float64 `json:"rollout_rate,omitempty" jsonschema:"rollouts per second for /s and /day budgets (default: the capture's own)"`
	Filter      string  `json:"filter,omitempty" jsonschema:"only rollouts matching this filter (the CLI's --where)"`
}

// CompareInput is two rollouts, or one under two specs.
type CompareInput struct {
	A     string `json:"a" jsonschema:"rollout A's id"`
	B     string `json:"b,omitempty" jsonschema:"rollout B's id (default: A again, to compare A under two specs)"`
	ASpec string `json:"a_spec,omitempty" jsonschema:"compare A as it would be under this span_groups spec (default: as captured)"`
	BSpec string `json:"b_spec,omitempty" jsonschema:"compare B as it would be under this span_groups spec (default: as captured)"`
}

func (s *Server) addWhatIfTools(ro *mcp.ToolAnnotations) {
	add := func(name, title, desc string) *mcp.Tool {
		return &mcp.Tool{Name: name, Title: title, Description: desc, Annotations: ro}
	}
	mcp.AddTool(s.srv, add("preview", "Preview a spec",
		"The CLI's `preview --json`: what a span_groups spec would produce from the capture (spans, bytes, traces, rollouts joined and split, per group and per rollout), the hops it breaks, what Gym does with the spec (dropped names, telemetry off), the config snippets, and a budget verdict."), s.preview)
	mcp.AddTool(s.srv, add("recommend", "Recommend a spec",
		"The CLI's `recommend --json`: the span_groups spec that fits a budget with every rollout still joined and keeps most (wall time covered, error spans, groups), with runners-up and why they lost."), s.recommend)
	mcp.AddTool(s.srv, add("compare", "Compare rollouts",
		"The CLI's `diff --json`: two rollouts span by span (or one under two specs): operations side by side, spans only one has, moved spans, error differences, the first place the trees part."), s.compare)
}

// applied resolves a spec argument as the CLI's applied does.
func applied(reg *groups.Registry, arg, spec string) (groups.Set, error) {
	res, _, err := report.Applied(reg, spec, arg+" argument")
	return res.Set, err
}

func (s *Server) preview(_ context.Context, _ *mcp.CallToolRequest, in PreviewInput) (*mcp.CallToolResult, report.Preview, error) {
	if strings.TrimSpace(in.Spec) == "" {
		return nil, report.Preview{}, fmt.Errorf("spec is empty: give a span_groups spec, e.g. per_rollout (the groups tool lists the names)")
	}
	var notes []string
	limit := clamp("limit", in.Limit, DefaultRolloutRows, MaxRolloutRows, &notes)
	pc, from, err := parsePageCursor(in.Cursor, "preview")
	if err != nil {
		return nil, report.Preview{}, err
	}
	if in.Rollouts < 0 {
		return nil, report.Preview{}, fmt.Errorf("rollouts %d: want a count >= 0", in.Rollouts)
	}
	if in.Rollouts == 0 {
		in.Rollouts = 10000
	}
	var budget *whatif.Budget
	if in.Budget != "" {
		b, err := whatif.ParseBudget(in.Budget)
		if err != nil {
			return nil, report.Preview{}, fmt.Errorf("budget: %w", err)
		}
		budget = &b
	}
	if in.RolloutRate < 0 {
		return nil, report.Preview{}, fmt.Errorf("rollout_rate %v: want rollouts per second >= 0", in.RolloutRate)
	}
	v, done, err := s.begin()
	if err != nil {
		return nil, report.Preview{}, err
	}
	defer done()
	cur := s.cfg.Setting
	if in.Current != "" {
		cur = report.Setting{Spec: in.Current, Source: "current argument"}
	}
	snap, ev, err := s.selected(v, in.Filter)
	if err != nil {
		return nil, report.Preview{}, err
	}
	// Kept whole, and paged as asked: the next page reads the same
	// preview.
	m := s.memoFor(v, ev)
	whole := in
	whole.Limit, whole.Cursor = 0, ""
	key := memoKey("preview", whole)
	var out report.Preview
	if r, ok := m.get(key); ok {
		out = r.(report.Preview)
	} else {
		args := report.PreviewArgs{Spec: in.Spec, Current: cur, Rollouts: in.Rollouts, SpanCost: whatif.DefaultSpanCost,
			Budget: budget, Rate: in.RolloutRate, Evidence: ev}
		run := report.RunPreview(v.eng, snap, args)
		// Of the selected rollouts, whatever the spec.
		run.Latency = m.latency[in.Filter]
		if run.Latency == nil {
			run.Latency = v.eng.Latency(snap, v.eng.Structure(snap).Rollouts)
			if len(m.latency) >= maxMemo {
				clear(m.latency)
			}
			m.latency[in.Filter] = run.Latency
		}
		out = report.NewPreview(v.v, run, args, s.badLines())
		m.put(key, out)
	}
	rows := out.PerRollout
	rowKey := func(i int) string { return rows[i].RolloutID }
	if pc != nil {
		var moved []string
		from, moved = pc.resume(v.snap.Seq, len(rows), rowKey, "rollouts")
		notes = append(notes, moved...)
	}
	lo, hi, p := keyedPage(v.snap.Seq, "preview", len(rows), from, limit, rowKey, notes)
	out.PerRollout = rows[lo:hi]
	if p.Truncated || from > 0 || len(p.Notes) > 0 {
		out.Page = &p
	}
	return nil, out, nil
}

// selected is the view's snapshot narrowed by a filter argument, with
// the evidence joined to the whole capture.
func (s *Server) selected(v *view, filterText string) (*model.Snapshot, *evidence.Joined, error) {
	ev := s.joined(v, v.eng.Structure(v.snap))
	f, err := bindFilter("filter", filterText, ev)
	if err != nil {
		return nil, nil, err
	}
	snap := v.snap
	if !f.Empty() {
		snap = v.eng.Select(snap, f)
	}
	return snap, ev, nil
}

func (s *Server) badLines() report.BadLines {
	if s.cfg.BadLines != nil {
		return *s.cfg.BadLines
	}
	return report.BadLines{Samples: []string{}}
}

func (s *Server) recommend(_ context.Context, _ *mcp.CallToolRequest, in RecommendInput) (*mcp.CallToolResult, report.Recommend, error) {
	if strings.TrimSpace(in.Budget) == "" {
		return nil, report.Recommend{}, fmt.Errorf("budget is empty: give a ceiling, e.g. 120spans/rollout, 40KB/rollout or 50GB/day")
	}
	b, err := whatif.ParseBudget(in.Budget)
	if err != nil {
		return nil, report.Recommend{}, fmt.Errorf("budget: %w", err)
	}
	if in.RolloutRate < 0 {
		return nil, report.Recommend{}, fmt.Errorf("rollout_rate %v: want rollouts per second >= 0", in.RolloutRate)
	}
	var notes []string
	opt := advise.Options{Budget: b, Rate: in.RolloutRate, AllowSplits: in.AllowSplits,
		RunnersUp: clamp("runners_up", in.RunnersUp, DefaultRunnersUp, MaxRunnersUp, &notes)}
	v, done, err := s.begin()
	if err != nil {
		return nil, report.Recommend{}, err
	}
	defer done()
	for _, g := range []struct {
		name, val string
		set       *groups.Set
	}{{"must", in.Must, &opt.Must}, {"never", in.Never, &opt.Never}} {
		if strings.TrimSpace(g.val) == "" {
			continue
		}
		if *g.set, err = v.reg.Parse(g.val); err != nil {
			return nil, report.Recommend{}, fmt.Errorf("%s: %w", g.name, err)
		}
	}
	snap, ev, err := s.selected(v, in.Filter)
	if err != nil {
		return nil, report.Recommend{}, err
	}
	m := s.memoFor(v, ev)
	key := memoKey("recommend", in)
	if r, ok := m.get(key); ok {
		return nil, r.(report.Recommend), nil
	}
	a, err := s.advice.Recommend(v.eng, snap, opt)
	if err != nil {
		return nil, report.Recommend{}, fmt.Errorf("must %q, never %q: %w", in.Must, in.Never, err)
	}
	out := report.NewRecommend(v.v, v.eng, snap, a, opt, whatif.DefaultSpanCost, s.badLines())
	if len(notes) > 0 {
		out.Page = &report.Page{Total: len(out.RunnersUp), Notes: notes}
	}
	m.put(key, out)
	return nil, out, nil
}

func (s *Server) compare(_ context.Context, _ *mcp.CallToolRequest, in CompareInput) (*mcp.CallToolResult, report.Diff, error) {
	if in.B == "" {
		in.B = in.A
	}
	v, done, err := s.begin()
	if err != nil {
		return nil, report.Diff{}, err
	}
	defer done()
	side := func(id, spec, which string) (whatif.DiffSide, error) {
		st := v.eng.Structure(v.snap).Snap
		r, err := findRollout(st, id)
		if err != nil {
			return whatif.DiffSide{}, fmt.Errorf("rollout %s: %w", which, err)
		}
		if strings.TrimSpace(spec) == "" {
			return whatif.RolloutSide(v.snap, r), nil
		}
		set, err := applied(v.reg, strings.ToLower(which)+"_spec", spec)
		if err != nil {
			return whatif.DiffSide{}, err
		}
		return v.eng.SpecSide(v.snap, r, set), nil
	}
	a, err := side(in.A, in.ASpec, "A")
	if err != nil {
		return nil, report.Diff{}, err
	}
	b, err := side(in.B, in.BSpec, "B")
	if err != nil {
		return nil, report.Diff{}, err
	}
	out := report.NewDiff(v.v, whatif.CompareRollouts(a, b), nil, nil, in.ASpec, in.BSpec)
	out.A.Files, out.B.Files = []string{}, []string{}
	if ev := s.joined(v, v.eng.Structure(v.snap)); ev != nil {
		out.AEvidence, out.BEvidence = ev.Rollout(a.Rollout), ev.Rollout(b.Rollout)
	}
	var notes []string
	cut := func(name string, xs []report.DiffSpan) []report.DiffSpan {
		if len(xs) > MaxDiffRows {
			notes = append(notes, fmt.Sprintf("%s lists the first %d of %d spans", name, MaxDiffRows, len(xs)))
			return xs[:MaxDiffRows]
		}
		return xs
	}
	out.OnlyA, out.OnlyB = cut("only_a", out.OnlyA), cut("only_b", out.OnlyB)
	out.ErrorsOnlyA, out.ErrorsOnlyB = cut("errors_only_a", out.ErrorsOnlyA), cut("errors_only_b", out.ErrorsOnlyB)
	if len(out.Moved) > MaxDiffRows {
		notes = append(notes, fmt.Sprintf("moved lists the first %d of %d spans", MaxDiffRows, len(out.Moved)))
		out.Moved = out.Moved[:MaxDiffRows]
	}
	if len(notes) > 0 {
		out.Page = &report.Page{Total: len(out.Operations), Truncated: true, Notes: notes}
	}
	return nil, out, nil
}

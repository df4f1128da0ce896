package report

import (
	"fmt"
	"sort"
	"time"

	"github.com/nemo-gym/gymtrace/gate/evidence"
	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/gate/whatif"
	"github.com/nemo-gym/gymtrace/model"
)

// Preview is the documented schema of `preview --json` (docs/json.md).
type Preview struct {
	Variant
	// Evidence: what Gym's files say and how they joined, with --evidence.
	Evidence *evidence.SummaryJSON `json:"evidence,omitempty"`
	Spec     string                `json:"spec"`
	Groups   []string              `json:"groups"`
	// TelemetryOff: the variant refuses the spec and Gym switches telemetry
	// off in every process; GymMessage is Gym's own text then, or its
	// warning for the Dropped names.
	TelemetryOff bool                    `json:"telemetry_off"`
	Dropped      []string                `json:"dropped"`
	GymMessage   string                  `json:"gym_message"`
	Input        PreviewInput            `json:"input"`
	Result       PreviewResult           `json:"result"`
	PerGroup     map[string]GroupFigures `json:"per_group"`
	PerRollout   []RolloutFigures        `json:"per_rollout"`
	NotInCapture []string                `json:"not_in_capture"`
	NoSpans      []string                `json:"no_spans"`
	Metrics      map[string]int64        `json:"metrics"`
	WallSeconds  float64                 `json:"wall_seconds"`
	Projection   Projection              `json:"projection"`
	Current      *PreviewCurrent         `json:"current"`
	Snippets     map[string]string       `json:"snippets"`
	// SnippetsRefused says why there are no snippets: the spec is one the
	// variant would not apply as meant.
	SnippetsRefused string     `json:"snippets_refused"`
	BadLines        BadLines   `json:"bad_lines"`
	Breaks          []Hop      `json:"breaks"`
	Latency         Latency    `json:"latency"`
	Budget          *BudgetFit `json:"budget"`
	// AsCaptured is the capture's join as it was (check's), beside the
	// predictions, which read it as if every process ran their spec.
	AsCaptured AsCaptured `json:"as_captured"`
	// SpansSpread says how far a run under the spec may differ from
	// result.spans in timing-dependent spans (G3); null when exact.
	SpansSpread *Spread `json:"spans_spread"`
	// Tokens: the capture's token usage, when spans report any.
	Tokens *TokenTotal `json:"tokens,omitempty"`
	Traffic
	// Page is set by a face that cut per_rollout (the MCP preview tool);
	// the CLI prints it whole.
	Page *Page `json:"page,omitempty"`
}

type AsCaptured struct {
	Intact  bool   `json:"intact"`
	Joined  int    `json:"joined"`
	Split   int    `json:"split"`
	Pending int    `json:"pending"`
	Verdict string `json:"verdict"`
}

type Spread struct {
	Note     string `json:"note"`
	Requests int    `json:"requests"`
	Fewer    int    `json:"fewer"`
	More     int    `json:"more"`
	Run      int    `json:"run"`
	SpansMin int    `json:"spans_min"`
	SpansMax int    `json:"spans_max"`
	Rollout  int    `json:"rollout"`
}

type PreviewInput struct {
	Spans          int      `json:"spans"`
	Rollouts       int      `json:"rollouts"`
	Traces         int      `json:"traces"`
	CapturedGroups []string `json:"captured_groups"`
	Unclassified   int      `json:"unclassified"`
}

type PreviewResult struct {
	Spans           int         `json:"spans"`
	Dropped         int         `json:"dropped"`
	Traces          int         `json:"traces"`
	Bytes           int64       `json:"bytes"`
	LargestTrace    int         `json:"largest_trace_spans"`
	RolloutsJoined  int         `json:"rollouts_joined"`
	RolloutsSplit   int         `json:"rollouts_split"`
	SpansPerRollout Percentiles `json:"spans_per_rollout"`
	SpansPerSecond  float64     `json:"spans_per_second"`
	BytesPerSecond  float64     `json:"bytes_per_second"`
	// SpansLowerBound: the capture lacks spans the spec emits (CaptureGaps),
	// so spans, bytes and traces count at least this many.
	SpansLowerBound bool  `json:"spans_lower_bound"`
	CaptureGaps     []Gap `json:"capture_gaps"`
}

type Percentiles struct {
	P50 int `json:"p50"`
	P99 int `json:"p99"`
	Max int `json:"max"`
}

type GroupFigures struct {
	Captured int         `json:"captured"`
	Kept     int         `json:"kept"`
	Cost     *GroupCost  `json:"cost"`
	Worth    *GroupWorth `json:"worth"`
}

type RolloutFigures struct {
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
	Tokens *Tokens `json:"tokens,omitempty"`
	// Evidence: what Gym's files say of the rollout, with --evidence.
	Evidence *evidence.RolloutJSON `json:"evidence,omitempty"`
}

type Projection struct {
	Rollouts int   `json:"rollouts"`
	Spans    int   `json:"spans"`
	Bytes    int64 `json:"bytes"`
}

type PreviewCurrent struct {
	Spec         string        `json:"spec"`
	Source       string        `json:"source"`
	TelemetryOff bool          `json:"telemetry_off"`
	Dropped      []string      `json:"dropped"`
	Result       PreviewResult `json:"result"`
}

// Gap is a group the spec keeps that a process did not emit when the
// capture was made.
type Gap struct {
	Service string `json:"service"`
	Group   string `json:"group"`
	Cause   string `json:"cause"`
}

func ResultOf(reg *groups.Registry, r whatif.Result, v whatif.JoinVerdict) PreviewResult {
	gaps := []Gap{}
	for _, g := range v.Gaps {
		gaps = append(gaps, Gap{Service: g.Service, Group: reg.Name(g.Group), Cause: g.Cause.Code()})
	}
	return PreviewResult{
		Spans: r.Spans, Dropped: r.Dropped, Traces: r.Traces, Bytes: r.Bytes, LargestTrace: r.LargestTrace,
		RolloutsJoined: v.Joined, RolloutsSplit: v.Split, SpansLowerBound: v.LowerBound(), CaptureGaps: gaps,
		SpansPerRollout: Percentiles{r.P50, r.P99, r.Max},
		SpansPerSecond:  Round2(r.SpansPerSecond), BytesPerSecond: Round2(r.BytesPerSecond),
	}
}

func GroupNames(reg *groups.Registry, gs []groups.Group) []string {
	out := []string{}
	for _, g := range gs {
		out = append(out, reg.Name(g))
	}
	sort.Strings(out)
	return out
}

// ShownGroup: a report lists the variant's groups and the pseudo-groups,
// never the placeholders of built-in groups the variant lacks.
func ShownGroup(reg *groups.Registry, g groups.Group) bool {
	return g == groups.Unclassified || g == groups.Ungated || reg.Known(g)
}

// Breaks lists the hops the spec cuts as gate sums them for every view.
func Breaks(rep *whatif.Report) []Hop {
	out := []Hop{}
	for _, b := range rep.BreakSummary(nil) {
		out = append(out, Hop{FromService: b.FromService, ToService: b.ToService, SpanName: b.SpanName, Cause: b.Cause.Code(), Reason: b.Reason, Fix: b.Cause.Fix(), Count: b.Spans, Rollouts: b.Rollouts})
	}
	return out
}

type GroupCost struct {
	Spans           int     `json:"spans"`
	Bytes           int64   `json:"bytes"`
	SpansPerRollout float64 `json:"spans_per_rollout"`
	BytesPerRollout float64 `json:"bytes_per_rollout"`
	CPUMSPerRollout float64 `json:"cpu_ms_per_rollout"`
	SpansPerSecond  float64 `json:"spans_per_second"`
	BytesPerSecond  float64 `json:"bytes_per_second"`
	CPUMSPerSecond  float64 `json:"cpu_ms_per_second"`
	SpanCostUS      float64 `json:"span_cost_us"`
}

type GroupWorth struct {
	WallShare     float64 `json:"wall_share"`
	DurationP50MS float64 `json:"duration_p50_ms"`
	DurationP99MS float64 `json:"duration_p99_ms"`
	ErrorSpans    int     `json:"error_spans"`
	ErrorRollouts int     `json:"error_rollouts"`
	KeepsJoins    bool    `json:"keeps_joins"`
	JoinedWith    int     `json:"rollouts_joined_with"`
	JoinedWithout int     `json:"rollouts_joined_without"`
}

type BudgetFit struct {
	Budget      string  `json:"budget"`
	Unit        string  `json:"unit"`
	Per         string  `json:"per"`
	Limit       float64 `json:"limit"`
	Value       float64 `json:"value"`
	Fits        bool    `json:"fits"`
	MissesBy    float64 `json:"misses_by"`
	Headroom    float64 `json:"headroom"`
	RolloutRate float64 `json:"rollout_rate"`
}

// AddWorth fills per_group[g].cost and .worth.
func AddWorth(per map[string]GroupFigures, reg *groups.Registry, ws []whatif.GroupWorth, spanCost time.Duration) {
	for _, w := range ws {
		name := reg.Name(w.Group)
		g, ok := per[name]
		if !ok {
			continue
		}
		g.Cost = &GroupCost{
			Spans: w.Spans, Bytes: w.Bytes,
			SpansPerRollout: Round2(w.SpansPerRollout), BytesPerRollout: Round2(w.BytesPerRollout), CPUMSPerRollout: Round4(w.CPUMSPerRollout),
			SpansPerSecond: Round2(w.SpansPerSecond), BytesPerSecond: Round2(w.BytesPerSecond), CPUMSPerSecond: Round4(w.CPUMSPerSecond),
			SpanCostUS: Round2(float64(spanCost) / float64(time.Microsecond)),
		}
		g.Worth = &GroupWorth{
			WallShare: Round4(w.WallShare), DurationP50MS: MS2(w.P50), DurationP99MS: MS2(w.P99),
			ErrorSpans: w.ErrorSpans, ErrorRollouts: w.ErrorRollouts,
			KeepsJoins: w.KeepsJoins, JoinedWith: w.JoinedWith, JoinedWithout: w.JoinedWithout,
		}
		per[name] = g
	}
}

func BudgetOf(v whatif.BudgetVerdict) *BudgetFit {
	unit := "spans"
	if v.Budget.Bytes {
		unit = "bytes"
	}
	return &BudgetFit{
		Budget: v.Budget.String(), Unit: unit, Per: v.Budget.Per, Limit: Round2(v.Budget.Limit), Value: Round2(v.Value),
		Fits: v.Fits, MissesBy: Round2(v.MissesBy), Headroom: Round2(v.Headroom), RolloutRate: Round2(v.RolloutRate),
	}
}

// Latency is the latency object of `preview --json`: durations by
// operation over the selected rollouts, as captured.
type Latency struct {
	Rollouts  int          `json:"rollouts"`
	Spans     int          `json:"spans"`
	ByName    []LatencyRow `json:"by_name"`
	ByGroup   []LatencyRow `json:"by_group"`
	ByService []LatencyRow `json:"by_service"`
}

type LatencyRow struct {
	Name    string  `json:"name,omitempty"`
	Group   string  `json:"group,omitempty"`
	Service string  `json:"service,omitempty"`
	Count   int     `json:"count"`
	Errors  int     `json:"errors"`
	P50MS   float64 `json:"p50_ms"`
	P90MS   float64 `json:"p90_ms"`
	P99MS   float64 `json:"p99_ms"`
	MaxMS   float64 `json:"max_ms"`
	TotalMS float64 `json:"total_ms"`
	SelfMS  float64 `json:"self_ms"`
}

func LatencyOf(l *whatif.Latency) Latency {
	rows := func(rs []whatif.LatencyRow, set func(*LatencyRow, string)) []LatencyRow {
		out := []LatencyRow{}
		for _, r := range rs {
			j := LatencyRow{Count: r.Count, Errors: r.Errors, P50MS: MS2(r.P50), P90MS: MS2(r.P90), P99MS: MS2(r.P99),
				MaxMS: MS2(r.Max), TotalMS: MS2(r.Total), SelfMS: MS2(r.Self)}
			set(&j, r.Key)
			out = append(out, j)
		}
		return out
	}
	return Latency{
		Rollouts: l.Rollouts, Spans: l.Spans,
		ByName:    rows(l.ByName, func(j *LatencyRow, k string) { j.Name = k }),
		ByGroup:   rows(l.ByGroup, func(j *LatencyRow, k string) { j.Group = k }),
		ByService: rows(l.ByService, func(j *LatencyRow, k string) { j.Service = k }),
	}
}

// MS2 is nanoseconds as milliseconds to two decimals.
func MS2(ns int64) float64 { return Round2(float64(ns) / 1e6) }

// PreviewArgs are what a preview is asked: the spec, the setting in force
// to compare with, the projection, the cost of a span, the budget and the
// rollout rate it is judged at.
type PreviewArgs struct {
	Spec     string
	Current  Setting
	Rollouts int
	SpanCost time.Duration
	Budget   *whatif.Budget
	Rate     float64
	// Evidence is Gym's outcome files joined to the capture, nil without.
	Evidence *evidence.Joined
}

// PreviewRun is a preview computed: the spec and the setting in force
// resolved, their reports and joining verdicts, the capture's own check,
// the timing spread, the per-group worth and the budget verdict. The text
// report and the JSON result both read it.
type PreviewRun struct {
	Reg              *groups.Registry
	Eng              *whatif.Engine
	Snap             *model.Snapshot
	Res, CurRes      groups.Resolution
	Cur, Rep         *whatif.Report
	Chk              *whatif.CheckReport
	CurV, RepV, CapV whatif.JoinVerdict
	Spread           *whatif.Spread
	Worth            []whatif.GroupWorth
	Verdict          *whatif.BudgetVerdict
	CopySpec         string
	Refused          error
	Ev               *evidence.Joined
	// Latency, when set, is the selected rollouts' latency profile, which
	// no spec changes: a face that previews many specs of one snapshot
	// profiles it once. Nil: NewPreview profiles them.
	Latency *whatif.Latency
}

// RunPreview previews p.Spec over snap against p.Current on eng.
func RunPreview(eng *whatif.Engine, snap *model.Snapshot, p PreviewArgs) *PreviewRun {
	reg := eng.Registry()
	r := &PreviewRun{Reg: reg, Eng: eng, Snap: snap, Res: reg.Resolve(p.Spec), CurRes: reg.Resolve(p.Current.Spec)}
	r.Cur = eng.PreviewResolution(snap, r.CurRes)
	r.Rep = eng.PreviewResolution(snap, r.Res)
	r.CopySpec, r.Refused = reg.CopyOut(r.Res.Set)
	if r.Res.Off {
		r.Refused = fmt.Errorf("%w: %s", groups.ErrNotGymSpec, r.Res.Effect())
	}
	// One joining verdict with the TUI's: the preview read with what the
	// capture itself shows broken.
	r.Chk = eng.Check(snap, time.Now(), 0)
	r.Ev = p.Evidence.Within(r.Chk.Structure)
	r.CurV, r.RepV = whatif.Verdict(r.Cur, r.Chk), whatif.Verdict(r.Rep, r.Chk)
	r.CapV = whatif.Captured(r.Chk, r.Cur)
	r.Spread = eng.TimingSpread(snap, r.Rep)
	r.Worth = eng.Worth(snap, r.Res.Set, p.SpanCost)
	if p.Budget != nil {
		v := p.Budget.Judge(r.Rep, p.Rate)
		r.Verdict = &v
	}
	return r
}

func (r *PreviewRun) evidenceSummary() *evidence.SummaryJSON {
	if r.Ev == nil {
		return nil
	}
	s := r.Ev.Summary()
	return &s
}

// NewPreview is the result of `preview --json` and the preview tool.
func NewPreview(v Variant, r *PreviewRun, p PreviewArgs, bad BadLines) Preview {
	out := Preview{
		Variant:      v,
		Spec:         p.Spec,
		Groups:       r.Reg.Names(r.Res.Set),
		TelemetryOff: r.Res.Off,
		Dropped:      NonNil(r.Res.Dropped),
		GymMessage:   r.Res.Message,
		Input: PreviewInput{
			Spans: r.Rep.Input.Spans, Rollouts: r.Rep.Input.Rollouts, Traces: r.Rep.Input.Traces,
			CapturedGroups: r.Reg.Names(r.Rep.Input.Captured), Unclassified: r.Rep.Input.Unclassified,
		},
		Result:       ResultOf(r.Reg, r.Rep.Result, r.RepV),
		PerGroup:     map[string]GroupFigures{},
		PerRollout:   []RolloutFigures{},
		NotInCapture: GroupNames(r.Reg, r.Rep.NotInCapture),
		NoSpans:      GroupNames(r.Reg, r.Rep.NoSpans),
		Metrics:      map[string]int64{},
		WallSeconds:  Round2(r.Rep.WallSeconds),
		Current: &PreviewCurrent{Spec: p.Current.Spec, Source: p.Current.Source, TelemetryOff: r.CurRes.Off,
			Dropped: NonNil(r.CurRes.Dropped), Result: ResultOf(r.Reg, r.Cur.Result, r.CurV)},
		Snippets: map[string]string{},
		BadLines: bad,
		Breaks:   []Hop{},
		Traffic:  TrafficOf(r.Rep.Structure),
		Evidence: r.evidenceSummary(),
	}
	if r.Refused != nil {
		out.SnippetsRefused = r.Refused.Error()
	} else {
		out.Snippets["yaml"], out.Snippets["env"] = groups.TelemetryYAML(r.CopySpec), groups.EnvLine(r.CopySpec)
	}
	for g, n := range r.Rep.MetricsSeen {
		out.Metrics[r.Reg.Name(g)] = n
	}
	if out.Groups == nil {
		out.Groups = []string{}
	}
	if out.Input.CapturedGroups == nil {
		out.Input.CapturedGroups = []string{}
	}
	out.Projection.Rollouts = p.Rollouts
	out.Projection.Spans, out.Projection.Bytes = r.Rep.Project(p.Rollouts)
	for _, gc := range r.Rep.PerGroup {
		if gc.Group == groups.Unclassified && gc.Captured == 0 || !ShownGroup(r.Reg, gc.Group) {
			continue
		}
		out.PerGroup[r.Reg.Name(gc.Group)] = GroupFigures{Captured: gc.Captured, Kept: gc.Kept}
	}
	toks := TokenReport(r.Rep.Structure)
	out.Tokens = TokenTotalOf(toks)
	for _, rr := range r.Rep.PerRollout {
		rj := RolloutFigures{Tokens: TokensOf(toks.PerRollout[rr.ID]), RolloutID: rr.ID, Spans: rr.Spans, Traces: rr.Traces, Captured: rr.Captured, Joined: rr.Spans > 0 && !r.RepV.IsSplit(rr.ID), PerGroup: map[string]int{}}
		if r.Spread != nil {
			sr := r.Spread.PerRollout[rr.ID]
			rj.SpansMin, rj.SpansMax = &sr.Min, &sr.Max
		}
		for _, gc := range rr.Groups {
			if gc.Kept > 0 {
				rj.PerGroup[r.Reg.Name(gc.Group)] = gc.Kept
			}
		}
		if r.Ev != nil {
			rj.Evidence = r.Ev.Rollout(rr.ID)
		}
		out.PerRollout = append(out.PerRollout, rj)
	}
	out.Breaks = Breaks(r.Rep)
	lat := r.Latency
	if lat == nil {
		lat = r.Eng.Latency(r.Snap, r.Eng.Structure(r.Snap).Rollouts)
	}
	out.Latency = LatencyOf(lat)
	AddWorth(out.PerGroup, r.Reg, r.Worth, p.SpanCost)
	if r.Verdict != nil {
		out.Budget = BudgetOf(*r.Verdict)
	}
	out.AsCaptured = AsCaptured{Intact: r.Chk.Intact, Joined: r.CapV.Joined, Split: r.CapV.Split, Pending: r.CapV.Pending, Verdict: r.CapV.String()}
	if r.Spread != nil {
		out.SpansSpread = &Spread{Note: r.Spread.Sentence(), Requests: r.Spread.Requests, Fewer: r.Spread.Fewer, More: r.Spread.More,
			Run: r.Spread.Run, SpansMin: r.Spread.SpansMin, SpansMax: r.Spread.SpansMax, Rollout: r.Spread.Rollout}
	}
	return out
}

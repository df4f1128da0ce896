package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"text/tabwriter"
	"time"

	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/gate/whatif"
)

// worthFlags are the cost and budget flags of preview.
type worthFlags struct {
	spanCost *time.Duration
	budget   *string
	rate     *float64
}

func addWorthFlags(fs *flag.FlagSet) worthFlags {
	return worthFlags{
		spanCost: fs.Duration("span-cost", whatif.DefaultSpanCost, "CPU one enabled span costs the emitting process (default: the OTel Python SDK measured, see BENCHMARKS.md)"),
		budget:   fs.String("budget", "", "a ceiling the previewed spec must fit: spans or bytes per rollout, per second or per day, e.g. 120spans/rollout, 40KB/rollout, 50GB/day"),
		rate:     fs.Float64("rollout-rate", 0, "rollouts per second for /s and /day budgets (default: the capture's own rate)"),
	}
}

// check validates the flags before any file is read.
func (w worthFlags) check() (*whatif.Budget, error) {
	if *w.spanCost < 0 {
		return nil, fmt.Errorf("--span-cost %v: want a duration >= 0", *w.spanCost)
	}
	if *w.rate < 0 || math.IsNaN(*w.rate) || math.IsInf(*w.rate, 0) {
		return nil, fmt.Errorf("--rollout-rate %v: want rollouts per second >= 0", *w.rate)
	}
	if *w.budget == "" {
		return nil, nil
	}
	b, err := whatif.ParseBudget(*w.budget)
	if err != nil {
		return nil, fmt.Errorf("--budget: %w", err)
	}
	return &b, nil
}

type groupCostJSON struct {
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

type groupWorthJSON struct {
	WallShare     float64 `json:"wall_share"`
	DurationP50MS float64 `json:"duration_p50_ms"`
	DurationP99MS float64 `json:"duration_p99_ms"`
	ErrorSpans    int     `json:"error_spans"`
	ErrorRollouts int     `json:"error_rollouts"`
	KeepsJoins    bool    `json:"keeps_joins"`
	JoinedWith    int     `json:"rollouts_joined_with"`
	JoinedWithout int     `json:"rollouts_joined_without"`
}

type budgetJSON struct {
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

// uiWorth is what the TUI's cost and worth view and budget row need.
type uiWorth struct {
	SpanCost time.Duration
	Budget   *whatif.Budget
	Rate     float64
}

// ui validates the flags and returns them for the TUI.
func (w worthFlags) ui() (uiWorth, error) {
	b, err := w.check()
	if err != nil {
		return uiWorth{}, err
	}
	return uiWorth{SpanCost: *w.spanCost, Budget: b, Rate: *w.rate}, nil
}

func round4(f float64) float64 { return math.Round(f*1e4) / 1e4 }

// addWorth fills per_group[g].cost and .worth.
func addWorth(per map[string]groupJSON, reg *groups.Registry, ws []whatif.GroupWorth, spanCost time.Duration) {
	for _, w := range ws {
		name := reg.Name(w.Group)
		g, ok := per[name]
		if !ok {
			continue
		}
		g.Cost = &groupCostJSON{
			Spans: w.Spans, Bytes: w.Bytes,
			SpansPerRollout: round2(w.SpansPerRollout), BytesPerRollout: round2(w.BytesPerRollout), CPUMSPerRollout: round4(w.CPUMSPerRollout),
			SpansPerSecond: round2(w.SpansPerSecond), BytesPerSecond: round2(w.BytesPerSecond), CPUMSPerSecond: round4(w.CPUMSPerSecond),
			SpanCostUS: round2(float64(spanCost) / float64(time.Microsecond)),
		}
		g.Worth = &groupWorthJSON{
			WallShare: round4(w.WallShare), DurationP50MS: ms(w.P50), DurationP99MS: ms(w.P99),
			ErrorSpans: w.ErrorSpans, ErrorRollouts: w.ErrorRollouts,
			KeepsJoins: w.KeepsJoins, JoinedWith: w.JoinedWith, JoinedWithout: w.JoinedWithout,
		}
		per[name] = g
	}
}

func budgetOut(v whatif.BudgetVerdict) *budgetJSON {
	unit := "spans"
	if v.Budget.Bytes {
		unit = "bytes"
	}
	return &budgetJSON{
		Budget: v.Budget.String(), Unit: unit, Per: v.Budget.Per, Limit: round2(v.Budget.Limit), Value: round2(v.Value),
		Fits: v.Fits, MissesBy: round2(v.MissesBy), Headroom: round2(v.Headroom), RolloutRate: round2(v.RolloutRate),
	}
}

// writeWorthText prints the cost and worth table and the budget verdict.
func writeWorthText(w io.Writer, reg *groups.Registry, spec groups.Set, ws []whatif.GroupWorth, spanCost time.Duration, verdict *whatif.BudgetVerdict) {
	fmt.Fprintf(w, "\ncost and worth per group (%v CPU per span):\n", spanCost)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "group\tpreview\tspans/rollout\tbytes/rollout\tcpu ms/rollout\twall share\tp50\tp99\terrors\tjoins\n")
	for _, g := range ws {
		if g.Spans == 0 && !g.KeepsJoins {
			continue
		}
		on := "off"
		if g.Group == groups.Unclassified || spec.Has(g.Group) {
			on = "on"
		}
		joins := "-"
		if g.KeepsJoins {
			joins = fmt.Sprintf("keeps (%d vs %d)", g.JoinedWith, g.JoinedWithout)
		}
		fmt.Fprintf(tw, "%s\t%s\t%.2f\t%.0f\t%.3f\t%.1f%%\t%v\t%v\t%d\t%s\n", reg.Name(g.Group), on,
			g.SpansPerRollout, g.BytesPerRollout, g.CPUMSPerRollout, 100*g.WallShare,
			time.Duration(g.P50).Round(time.Microsecond), time.Duration(g.P99).Round(time.Microsecond), g.ErrorSpans, joins)
	}
	tw.Flush()
	if verdict != nil {
		fmt.Fprintf(w, "\n%s\n", verdict)
	}
}

package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"text/tabwriter"
	"time"

	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/gate/report"
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

type budgetJSON = report.BudgetFit

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

func round4(f float64) float64 { return report.Round4(f) }

// addWorth fills per_group[g].cost and .worth.
func addWorth(per map[string]groupJSON, reg *groups.Registry, ws []whatif.GroupWorth, spanCost time.Duration) {
	report.AddWorth(per, reg, ws, spanCost)
}

func budgetOut(v whatif.BudgetVerdict) *budgetJSON { return report.BudgetOf(v) }

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

package whatif

import (
	"github.com/nemo-gym/gymtrace/gate/groups"
	"sort"
)

// Report shaping shared by every view: the CLI's text and JSON and the TUI
// print the same numbers because they read them from here.

// BreakSum is one hop a spec cuts (caller, callee, the callee's first kept
// span, the reason), with the rollouts it breaks and the spans cut there.
type BreakSum struct {
	FromService, ToService, SpanName, Reason string
	Cause                                    Cause
	Args                                     [2]string // what Cause's words name
	Rollouts, Spans                          int
}

// Short is the hop's cause in a few words, for one-line views.
func (b BreakSum) Short() string { return b.Cause.Short(b.Args[:]...) }

// BreakSummary sums the report's per-rollout breaks, one entry per hop,
// most rollouts first, leaving out the rollouts still arriving (pending):
// their pieces may yet join.
func (r *Report) BreakSummary(pending []string) []BreakSum {
	if r == nil {
		return nil
	}
	wait := make(map[string]bool, len(pending))
	for _, id := range pending {
		wait[id] = true
	}
	type hop struct {
		from, to, span, reason string
		cause                  Cause
	}
	idx := map[hop]int{}
	out := []BreakSum{}
	for _, pr := range r.PerRollout {
		if wait[pr.ID] {
			continue
		}
		seen := map[hop]bool{}
		for _, b := range pr.Breaks {
			h := hop{b.FromService, b.ToService, b.SpanName, b.Reason, b.Cause}
			i, ok := idx[h]
			if !ok {
				i = len(out)
				idx[h] = i
				out = append(out, BreakSum{FromService: h.from, ToService: h.to, SpanName: h.span, Reason: h.reason, Cause: h.cause})
			}
			out[i].Spans += b.Count
			if !seen[h] {
				seen[h] = true
				out[i].Rollouts++
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Rollouts != b.Rollouts {
			return a.Rollouts > b.Rollouts
		}
		if a.Spans != b.Spans {
			return a.Spans > b.Spans
		}
		if a.FromService+a.ToService != b.FromService+b.ToService {
			return a.FromService+a.ToService < b.FromService+b.ToService
		}
		return a.SpanName+a.Reason < b.SpanName+b.Reason
	})
	return out
}

// HopSummary is the capture's own broken hops in the terms of
// BreakSummary, one entry per hop (caller, callee, span, reason) in the
// check's order: Spans is the spans showing it (for a process-level row,
// the process's spans), Rollouts the judged rollouts it was found in.
func (c *CheckReport) HopSummary() []BreakSum {
	if c == nil {
		return nil
	}
	out := make([]BreakSum, 0, len(c.Hops))
	for _, h := range c.Hops {
		out = append(out, BreakSum{FromService: h.FromService, ToService: h.ToService, SpanName: h.SpanName,
			Reason: h.Reason, Cause: h.Cause, Args: h.Args, Rollouts: h.Rollouts, Spans: h.Count})
	}
	return out
}

// HopName is a hop as one phrase, caller to callee and the span: "from →
// to (span)"; arrow and short say how a view writes it, "(no one)" stands
// for a process-level row's missing callee.
func HopName(b BreakSum, arrow string, short func(string) string) string {
	to := b.ToService
	if to == "" {
		to = "(no one)"
	}
	s := short(b.FromService) + " " + arrow + " " + short(to)
	if b.SpanName != "" {
		s += " (" + b.SpanName + ")"
	}
	return s
}

// SpecWarning says why a spec cannot produce joined traces, or "".
func SpecWarning(set groups.Set) string {
	switch {
	case !set.Has(groups.Server) && !set.Has(groups.HTTPClient):
		return "the spec has neither server nor http_client: no process joins another's trace"
	case !set.Has(groups.Server):
		return "the spec lacks server: no process extracts traceparent, every callee starts a new trace"
	case !set.Has(groups.HTTPClient):
		return "the spec lacks http_client: no traceparent is sent, every callee starts a new trace"
	}
	return ""
}

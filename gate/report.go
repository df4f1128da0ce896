package gate

import "sort"

// Report shaping shared by every view: the CLI's text and JSON and the TUI
// print the same numbers because they read them from here.

// BreakSum is one hop a spec cuts (caller, callee, the callee's first kept
// span, the reason), with the rollouts it breaks and the spans cut there.
type BreakSum struct {
	FromService, ToService, SpanName, Reason string
	Rollouts, Spans                          int
}

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
	type hop struct{ from, to, span, reason string }
	idx := map[hop]int{}
	out := []BreakSum{}
	for _, pr := range r.PerRollout {
		if wait[pr.ID] {
			continue
		}
		seen := map[hop]bool{}
		for _, b := range pr.Breaks {
			h := hop{b.FromService, b.ToService, b.SpanName, b.Reason}
			i, ok := idx[h]
			if !ok {
				i = len(out)
				idx[h] = i
				out = append(out, BreakSum{FromService: h.from, ToService: h.to, SpanName: h.span, Reason: h.reason})
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

// SpecWarning says why a spec cannot produce joined traces, or "".
func SpecWarning(set Set) string {
	switch {
	case !set.Has(Server) && !set.Has(HTTPClient):
		return "the spec has neither server nor http_client: no process joins another's trace"
	case !set.Has(Server):
		return "the spec lacks server: no process extracts traceparent, every callee starts a new trace"
	case !set.Has(HTTPClient):
		return "the spec lacks http_client: no traceparent is sent, every callee starts a new trace"
	}
	return ""
}

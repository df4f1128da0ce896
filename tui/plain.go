package tui

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/nemo-gym/gymtrace/gate/rollouts"
	"github.com/nemo-gym/gymtrace/model"
)

// PlainTree prints every rollout of snap as an indented text tree: a header
// line per rollout (id, spans, fragments, traces, errors), then each fragment
// with its spans, children in start-time order. It is the output of
// `gymtrace open --text` and of open when stdout is not a terminal, so it
// holds no colour and no terminal control. The order is fully determined by
// the spans, so the same capture always prints the same text.
func PlainTree(w io.Writer, snap *model.Snapshot) error {
	bw := bufio.NewWriter(w)
	p := plainPrinter{w: bw, snap: snap}
	st := snap.Stats
	fmt.Fprintf(bw, "spans=%d rollouts=%d fragments=%d traces=%d jobs=%d", st.Stored, st.Rollouts, st.Fragments, st.Traces, len(snap.Jobs))
	if st.MetricPoints > 0 || st.LogRecords > 0 {
		fmt.Fprintf(bw, " metric_points=%d log_records=%d", st.MetricPoints, st.LogRecords)
	}
	if st.EvictedSpans > 0 {
		fmt.Fprintf(bw, " evicted_spans=%d", st.EvictedSpans)
	}
	bw.WriteByte('\n')

	jobs := append([]*model.Fragment(nil), snap.Jobs...)
	sort.SliceStable(jobs, func(i, j int) bool { return fragLess(jobs[i], jobs[j]) })
	for _, j := range jobs {
		sp := &j.Spans[0]
		fmt.Fprintf(bw, "\njob trace=%s span=%s\n", j.TraceID, sp.SpanID)
		p.span(sp, 1)
	}

	rolls := append([]*model.Rollout(nil), snap.Rollouts...)
	sort.SliceStable(rolls, func(i, j int) bool {
		if rolls[i].Start != rolls[j].Start {
			return rolls[i].Start < rolls[j].Start
		}
		return rolls[i].ID < rolls[j].ID
	})
	for _, r := range rolls {
		id := r.ID
		if r.Synthetic {
			id += " (no rollout id)"
		}
		fmt.Fprintf(bw, "\nrollout %s spans=%d fragments=%d traces=%d errors=%d duration=%s\n",
			id, r.Spans, len(r.Fragments), r.Traces, r.Errors, plainDur(r.End-r.Start))
		frags := append([]*model.Fragment(nil), r.Fragments...)
		sort.SliceStable(frags, func(i, j int) bool { return fragLess(frags[i], frags[j]) })
		for i, f := range frags {
			fmt.Fprintf(bw, "  fragment %d/%d trace=%s", i+1, len(frags), f.TraceID)
			switch {
			case !f.Job().IsZero():
				fmt.Fprintf(bw, " under job span=%s", f.Job())
			case f.Orphan():
				fmt.Fprintf(bw, " orphan: parent %s not received", f.TopParent)
			}
			bw.WriteByte('\n')
			p.fragment(f)
		}
	}
	return bw.Flush()
}

func fragLess(a, b *model.Fragment) bool {
	if a.Spans[0].Start != b.Spans[0].Start {
		return a.Spans[0].Start < b.Spans[0].Start
	}
	return a.Spans[0].SpanID.String() < b.Spans[0].SpanID.String()
}

type plainPrinter struct {
	w    *bufio.Writer
	snap *model.Snapshot
	kids [][]int32
}

// fragment prints the spans of f as a tree rooted at Spans[0].
func (p *plainPrinter) fragment(f *model.Fragment) {
	n := len(f.Spans)
	if cap(p.kids) < n {
		p.kids = make([][]int32, n)
	}
	kids := p.kids[:n]
	for i := range kids {
		kids[i] = kids[i][:0]
	}
	var roots []int32
	for i := range f.Spans {
		par := f.Spans[i].Parent
		if i == 0 || par < 0 || int(par) >= n || int(par) == i {
			roots = append(roots, int32(i))
			continue
		}
		kids[par] = append(kids[par], int32(i))
	}
	byStart := func(ids []int32) {
		sort.SliceStable(ids, func(a, b int) bool {
			x, y := &f.Spans[ids[a]], &f.Spans[ids[b]]
			if x.Start != y.Start {
				return x.Start < y.Start
			}
			return x.SpanID.String() < y.SpanID.String()
		})
	}
	byStart(roots)
	walkTree(roots, kids, func(i int32, depth int, _ bool) bool {
		p.span(&f.Spans[i], depth+2)
		byStart(kids[i])
		return true
	})
}

// span prints one line: name, service, kind, duration and marks.
func (p *plainPrinter) span(sp *model.Span, depth int) {
	w := p.w
	w.WriteString(strings.Repeat("  ", min(depth, maxIndent)))
	if depth > maxIndent {
		fmt.Fprintf(w, "⋯%d ", depth-2)
	}
	fmt.Fprintf(w, "%s [%s] %s %s", rollouts.DisplayName(p.snap.Interner(), sp), p.snap.ServiceName(sp.Resource), sp.Kind, plainDur(sp.Duration()))
	if sp.Status == model.StatusError {
		w.WriteString(" ERROR")
		if sp.Extra != nil && sp.Extra.StatusMessage != "" {
			fmt.Fprintf(w, " %q", clipText(sp.Extra.StatusMessage, 80))
		}
	}
	if sp.Flags()&model.FlagException != 0 {
		w.WriteString(" exception")
	}
	if sp.Flags()&model.FlagTruncated != 0 {
		w.WriteString(" TRUNCATED")
	}
	if sp.Flags()&model.FlagAttrsCapped != 0 {
		w.WriteString(" attrs-capped")
	}
	w.WriteByte('\n')
}

// clipText keeps the first line of s, at most n runes.
func clipText(s string, n int) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + "…"
	}
	r := []rune(s)
	if len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// plainDur renders nanoseconds with microsecond precision under a second and
// millisecond precision above, e.g. 14.951ms, 2.304s.
func plainDur(ns int64) string {
	d := time.Duration(ns)
	if d <= 0 {
		return "0s"
	}
	if d < time.Second {
		return d.Round(time.Microsecond).String()
	}
	return d.Round(time.Millisecond).String()
}

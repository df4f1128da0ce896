package tui

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/charmbracelet/bubbles/key"
	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/gate/whatif"
	"github.com/nemo-gym/gymtrace/model"
)

// compareView sets two rollouts side by side (whatif.CompareRollouts): the
// marked one (m) as A against the selected one as B; with none marked, or
// the marked one selected, the selected rollout under the current spec (A)
// against itself under the previewed spec (B).
type compareView struct {
	pager
	reg *groups.Registry
	// what the comparison was computed from
	a, b     *model.Rollout
	cur, pre groups.Set
	// the comparison and its sides' labels, laid out again on a resize
	diff   *whatif.Diff
	la, lb string
}

func newCompareView(st *Styles, keys *KeyMap, reg *groups.Registry) *compareView {
	return &compareView{pager: newPager(st, keys, "c/esc back"), reg: reg}
}

func (c *compareView) name() string        { return "compare" }
func (c *compareView) opener() key.Binding { return c.keys.Compare }

// wantsRoom reports that, open and focused, the comparison takes the
// screen's height from the panels beside it: its timings and lists.
func (c *compareView) wantsRoom() bool { return true }

func (c *compareView) setSize(w, h int) {
	c.resize(w, h)
	if c.opened && c.diff != nil {
		c.setLines(c.diffLines(c.diff, c.la, c.lb))
	}
}

func (c *compareView) open(e *env) bool {
	c.opened = true
	c.compute(e)
	c.vp.GotoTop()
	return true
}

// refresh recomputes while open when either side or a spec changed.
func (c *compareView) refresh(e *env) {
	if c.opened && (e.rollout != c.b || e.marked != c.a || e.current != c.cur || e.preview != c.pre) {
		c.compute(e)
	}
}

func (c *compareView) compute(e *env) {
	c.a, c.b, c.cur, c.pre = e.marked, e.rollout, e.current, e.preview
	if e.rollout == nil {
		c.title, c.diff = "Compare", nil
		c.setLines([]string{"", "  no rollout selected"})
		return
	}
	// A fresh engine: the model's engines belong to running commands.
	eng := whatif.NewEngine(c.reg)
	var a, b whatif.DiffSide
	var la, lb string
	if e.marked != nil && e.marked != e.rollout {
		a, b = whatif.RolloutSide(e.snap, e.marked), whatif.RolloutSide(e.snap, e.rollout)
		la, lb = e.marked.ID+" (marked)", e.rollout.ID
	} else {
		a, b = eng.SpecSide(e.snap, e.rollout, e.current), eng.SpecSide(e.snap, e.rollout, e.preview)
		la, lb = e.rollout.ID+" under "+c.reg.Format(e.current), e.rollout.ID+" under "+c.reg.Format(e.preview)
	}
	c.diff, c.la, c.lb = whatif.CompareRollouts(a, b), la, lb
	c.title = "Compare A " + la + " · B " + lb
	c.setLines(c.diffLines(c.diff, la, lb))
}

// diffLines renders d for the panel's width and height: each side's
// time and counts, how much longer B took than A, then the operations
// (those whose counts differ, or every one when the shapes match) with
// each side's total time and the difference.
func (c *compareView) diffLines(d *whatif.Diff, la, lb string) []string {
	w := c.width
	side := func(tag, label string, s whatif.DiffSummary) string {
		// The figures are what is compared: a long label is cut, not them.
		figs := fmt.Sprintf(": %s · %s, %d errors, %s", fmtDur(s.DurationNS), countNoun(s.Spans, "span"), s.Errors, countNoun(s.Traces, "trace"))
		if room := w - 3 - ansi.StringWidth(figs); ansi.StringWidth(label) > room {
			label = fitMiddle(label, max(room, 12))
		}
		return clip(" "+tag+" "+label+figs, w)
	}
	out := []string{side("A", la, d.A), side("B", lb, d.B), clip(" "+timeGap(d.A.DurationNS, d.B.DurationNS), w)}
	switch {
	case d.First != nil:
		for k, l := range wrap(fmt.Sprintf("first divergence under %s: A has %s, B has %s", pathOf(d.First.Path), orNone(d.First.A), orNone(d.First.B)), w-3) {
			indent := " "
			if k > 0 {
				indent = "   "
			}
			out = append(out, c.st.Tree.Error.Render(indent+l))
		}
	case len(d.ErrorsA)+len(d.ErrorsB) == 0:
		out = append(out, clip(" same spans, same tree, same errors", w))
	default:
		out = append(out, clip(" same spans and tree; errors differ", w))
	}
	const figs = 1 + 4 + 1 + 4 + 1 + 4 + 1 + 4 + 1 + 7 + 1 + 7 + 1 + 8
	keyW := max(w-1-figs, 12)
	row := func(k, na, nb, ea, eb, ta, tb, gap string) string {
		return clip(" "+fit(k, keyW)+" "+fitRight(na, 4)+" "+fitRight(nb, 4)+" "+fitRight(ea, 4)+" "+fitRight(eb, 4)+" "+fitRight(ta, 7)+" "+fitRight(tb, 7)+" "+fitRight(gap, 8), w)
	}
	ops, head := d.Changed, "changed operations"
	if len(ops) == 0 {
		// The same shape: what is left to compare is time, biggest
		// difference first.
		ops, head = slices.Clone(d.Operations), "timings, most changed first"
		gap := func(o whatif.OpDiff) int64 { return abs64(o.TotalNSB - o.TotalNSA) }
		sort.SliceStable(ops, func(i, j int) bool { return gap(ops[i]) > gap(ops[j]) })
	}
	if len(ops) > 0 {
		if c.height >= 14 {
			// Room for air; on a short panel the rows come first.
			out = append(out, "")
		}
		out = append(out, c.st.Panel.Column.Render(row(head, "A n", "B n", "A !", "B !", "A total", "B total", "B-A")))
		for _, o := range ops {
			out = append(out, row(opKey(o.Name, shortService(o.Service), keyW), itoa(o.CountA), itoa(o.CountB), itoa(o.ErrorsA), itoa(o.ErrorsB),
				fmtDur(o.TotalNSA), fmtDur(o.TotalNSB), signedDur(o.TotalNSB-o.TotalNSA)))
		}
	}
	list := func(title string, ss []whatif.DiffSpan, err bool) {
		if len(ss) == 0 {
			return
		}
		out = append(out, "", c.st.Panel.Column.Render(clip(fmt.Sprintf(" %s (%d)", title, len(ss)), w)))
		for _, s := range ss {
			line := fmt.Sprintf("  %s [%s] under %s", s.Name, shortService(s.Service), pathTail(s.Path, 2))
			if s.Message != "" {
				line += ": " + s.Message
			}
			line = clip(line, w)
			if err {
				line = c.st.Tree.Error.Render(line)
			}
			out = append(out, line)
		}
	}
	list("only in A", d.OnlyA, false)
	list("only in B", d.OnlyB, false)
	if len(d.Moved) > 0 {
		out = append(out, "", c.st.Panel.Column.Render(clip(fmt.Sprintf(" moved (%d): on both sides, under another parent", len(d.Moved)), w)))
		for _, mv := range d.Moved {
			out = append(out, clip(fmt.Sprintf("  %s [%s] %s", mv.Name, shortService(mv.Service), mv.SpanID.String()[:8]), w),
				clip("    A under "+pathTail(mv.Path, 1), w), clip("    B under "+pathTail(mv.PathB, 1), w))
		}
	}
	list("errors only in A", d.ErrorsA, true)
	list("errors only in B", d.ErrorsB, true)
	return out
}

// timeGap says how much longer or shorter B took than A, first start to
// last end.
func timeGap(a, b int64) string {
	switch {
	case a == b:
		return "B took as long as A: " + fmtDur(a)
	case a <= 0:
		return "B took " + fmtDur(b) + ", A no time"
	}
	word := "slower"
	if b < a {
		word = "faster"
	}
	return fmt.Sprintf("B was %s %s than A (%+.1f%%)", fmtDur(abs64(b-a)), word, 100*float64(b-a)/float64(a))
}

// signedDur is a difference of durations with its sign: "+4.2ms", "-26ms", "0".
func signedDur(ns int64) string {
	switch {
	case ns > 0:
		return "+" + fmtDur(ns)
	case ns < 0:
		return "-" + fmtDur(-ns)
	}
	return "0"
}

func pathOf(p []string) string {
	if len(p) == 0 {
		return "the top"
	}
	return strings.Join(p, " › ")
}

// pathTail is the last n names of p, for lines that must stay short.
func pathTail(p []string, n int) string {
	if len(p) <= n {
		return pathOf(p)
	}
	return "… › " + strings.Join(p[len(p)-n:], " › ")
}

func orNone(s string) string {
	if s == "" {
		return "nothing more"
	}
	return s
}

// Find returns the listed rollout with the given id, or nil.
func (l *rolloutList) Find(id string) *model.Rollout {
	if l.snap == nil || id == "" {
		return nil
	}
	for _, r := range l.snap.Rollouts {
		if r.ID == id {
			return r
		}
	}
	return nil
}

// toggleMark marks the selected rollout for comparison, or unmarks it.
func (m *Model) toggleMark() {
	r := m.trace.Rollout()
	switch {
	case r == nil:
		m.status, m.statusErr = "no rollout selected to mark", true
		return
	case m.marked == r.ID:
		m.marked = ""
		m.status = "unmarked " + r.ID
	default:
		m.marked = r.ID
		m.status = "marked " + r.ID + ": select another rollout and press c to compare"
	}
	m.rollouts.marked = m.marked
	m.rollouts.render()
}

// opKey is an operation as "name [service]" in width cells. Names differ
// more than services and at both ends, so the service is cut first, to a
// third of the width, then the name in its middle.
func opKey(name, service string, width int) string {
	full := name + " [" + service + "]"
	if ansi.StringWidth(full) <= width {
		return full
	}
	svc := "[" + service + "]"
	if sw := max(width/3, 5); ansi.StringWidth(svc) > sw {
		svc = "[" + ansi.Truncate(service, sw-3, "…") + "]"
	}
	return fitMiddle(name, width-1-ansi.StringWidth(svc)) + " " + svc
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

package tui

import (
	"fmt"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/gate/whatif"
)

// worthView is the cost and worth of every group (whatif.Engine.Worth), over the
// groups slot: what each costs per rollout (spans, bytes, CPU) against what
// it buys (wall share, durations, errors only it shows, joins it keeps),
// judged against the previewed spec, and the budget verdict.
type worthView struct {
	pager
	reg      *groups.Registry
	spanCost time.Duration
	budget   *whatif.Budget
	rate     float64
	// eng is the view's own: one computation runs at a time (running),
	// and an engine is not safe for concurrent use.
	eng *whatif.Engine

	rows     []whatif.GroupWorth
	rowsSeq  uint64     // snapshot the rows were computed from
	rowsSpec groups.Set // spec they were judged against
	have     bool
	running  bool
	prev     *whatif.Report
	spec     groups.Set
}

// worthMsg carries computed rows.
type worthMsg struct {
	seq  uint64
	spec groups.Set
	rows []whatif.GroupWorth
}

func newWorthView(st *Styles, keys *KeyMap, reg *groups.Registry, spanCost time.Duration, budget *whatif.Budget, rate float64) *worthView {
	if spanCost <= 0 {
		spanCost = whatif.DefaultSpanCost
	}
	w := &worthView{pager: newPager(st, keys, "w/esc back"), reg: reg, spanCost: spanCost, budget: budget, rate: rate, eng: whatif.NewEngine(reg)}
	w.title = "Cost and worth"
	return w
}

func (w *worthView) slot() slot          { return slotGroups }
func (w *worthView) name() string        { return "cost and worth" }
func (w *worthView) opener() key.Binding { return w.keys.Worth }
func (w *worthView) setSize(x, y int)    { w.resize(x, y); w.layout() }

func (w *worthView) open(e *env) bool {
	w.opened = true
	w.refresh(e)
	w.vp.GotoTop()
	return true
}

func (w *worthView) refresh(e *env) {
	if !w.opened {
		return
	}
	w.prev, w.spec = e.prev, e.preview
	w.layout()
}

// request starts a computation when the open view's rows are stale and
// none runs; the view's engine is used by that command alone.
func (w *worthView) request(e *env) tea.Cmd {
	snap, spec, eng := e.snap, e.preview, w.eng
	if !w.opened || w.running || snap == nil || (w.have && w.rowsSeq == snap.Seq && w.rowsSpec == spec) {
		return nil
	}
	w.running = true
	cost := w.spanCost
	return func() tea.Msg {
		return worthMsg{seq: snap.Seq, spec: spec, rows: eng.Worth(snap, spec, cost)}
	}
}

// update takes the view's own results.
func (w *worthView) update(m tea.Msg) bool {
	msg, ok := m.(worthMsg)
	if !ok {
		return false
	}
	w.running, w.have = false, true
	w.rows, w.rowsSeq, w.rowsSpec = msg.rows, msg.seq, msg.spec
	w.layout()
	return true
}

// worthCols are the table's columns after the group and its on/off, in
// order; drop is the order they give way in on a narrow panel, so the
// errors only a group shows and the joins it keeps stay longest.
var worthCols = []struct {
	head  string
	width int
	left  bool // aligned left (text), else right (figures)
	drop  int  // 0: never dropped; lower numbers go first
	val   func(w *worthView, g whatif.GroupWorth) string
}{
	// Rounded as preview's table rounds them, so both read the same.
	{"spans/r", 7, false, 0, func(_ *worthView, g whatif.GroupWorth) string { return fmt.Sprintf("%.2f", g.SpansPerRollout) }},
	{"bytes/r", 8, false, 6, func(_ *worthView, g whatif.GroupWorth) string { return fmt.Sprintf("%.0f", g.BytesPerRollout) }},
	{"cpu ms", 7, false, 5, func(_ *worthView, g whatif.GroupWorth) string { return fmt.Sprintf("%.3f", g.CPUMSPerRollout) }},
	{"ms/s", 7, false, 3, func(_ *worthView, g whatif.GroupWorth) string { return fmt.Sprintf("%.3f", g.CPUMSPerSecond) }},
	{"wall", 6, false, 4, func(_ *worthView, g whatif.GroupWorth) string { return fmt.Sprintf("%.1f%%", 100*g.WallShare) }},
	{"p50", 9, false, 2, func(_ *worthView, g whatif.GroupWorth) string { return worthDur(g.P50) }},
	{"p99", 9, false, 1, func(_ *worthView, g whatif.GroupWorth) string { return worthDur(g.P99) }},
	{"err", 5, false, 0, func(w *worthView, g whatif.GroupWorth) string {
		if g.ErrorSpans > 0 {
			return w.st.Tree.Error.Render(itoa(g.ErrorSpans))
		}
		return ""
	}},
	{"joins", 15, true, 0, func(_ *worthView, g whatif.GroupWorth) string {
		if g.KeepsJoins {
			return fmt.Sprintf("keeps (%d vs %d)", g.JoinedWith, g.JoinedWithout)
		}
		return ""
	}},
}

// worthDur is a group's span duration as preview's table writes it:
// rounded to the microsecond.
func worthDur(ns int64) string { return time.Duration(ns).Round(time.Microsecond).String() }

func (w *worthView) layout() {
	width := w.width
	var lines []string
	if v := w.verdict(); v != nil {
		lines = append(append(lines, v...), "")
	}
	for _, l := range wrap(fmt.Sprintf("CPU at %v per enabled span; judged against %s", w.spanCost, w.reg.Format(w.rowsSpec)), width-1) {
		lines = append(lines, " "+l)
	}
	widths, keyW, shown := w.columns(width)
	row := func(g, on string, cells func(i int) string) string {
		line := " " + fit(g, keyW) + " " + fit(on, 3)
		for i, c := range worthCols {
			if !shown[i] {
				continue
			}
			if c.left {
				line += " " + fit(cells(i), widths[i])
			} else {
				line += " " + fitRight(cells(i), widths[i])
			}
		}
		return clip(line, width)
	}
	lines = append(lines, w.st.Panel.Column.Render(row("group", "on", func(i int) string { return worthCols[i].head })))
	if !w.have {
		lines = append(lines, w.st.List.Dim.Render(clip("  computing…", width)))
	}
	for _, g := range w.rows {
		if !w.listed(g) {
			continue
		}
		on := "off"
		if g.Group == groups.Unclassified || w.rowsSpec.Has(g.Group) {
			on = "on"
		}
		lines = append(lines, row(w.reg.Name(g.Group), on, func(i int) string { return worthCols[i].val(w, g) }))
	}
	lines = append(lines, "")
	for _, note := range []string{
		"spans/r, bytes/r, cpu ms: per rollout when on · ms/s: CPU ms per second at the capture's rate",
		"wall: share of a rollout's time its spans cover · joins: rollouts joined with the group vs without it",
	} {
		for _, l := range wrap(note, width-1) {
			lines = append(lines, w.st.List.Dim.Render(" "+l))
		}
	}
	w.setLines(lines)
}

// listed reports whether the table shows g: it emits spans or keeps joins.
func (w *worthView) listed(g whatif.GroupWorth) bool { return g.Spans > 0 || g.KeepsJoins }

// worthKeyW is the group column's width at least; a longer name widens
// it when the screen has room.
const worthKeyW = 12

// columns sizes the table for width cells: each column as wide as its
// head and cells need when they all fit; else each at its least width,
// the room left to the joins and then the group names, and columns
// dropped, lowest drop first, until the row fits.
func (w *worthView) columns(width int) (widths []int, keyW int, shown []bool) {
	widths, shown = make([]int, len(worthCols)), make([]bool, len(worthCols))
	need := make([]int, len(worthCols))
	keyNeed := worthKeyW
	for i, c := range worthCols {
		need[i] = max(c.width, ansi.StringWidth(c.head))
	}
	for _, g := range w.rows {
		if !w.listed(g) {
			continue
		}
		keyNeed = max(keyNeed, ansi.StringWidth(w.reg.Name(g.Group)))
		for i, c := range worthCols {
			need[i] = max(need[i], ansi.StringWidth(c.val(w, g)))
		}
	}
	rowW := func(ws []int, kw int) int {
		n := 1 + kw + 1 + 3
		for i := range worthCols {
			if shown[i] {
				n += 1 + ws[i]
			}
		}
		return n
	}
	for i := range shown {
		shown[i] = true
	}
	if rowW(need, keyNeed) <= width {
		return need, keyNeed, shown
	}
	keyW = worthKeyW
	for i, c := range worthCols {
		widths[i] = c.width
	}
	for d := 1; rowW(widths, keyW) > width && d <= len(worthCols); d++ {
		for i, c := range worthCols {
			if c.drop == d {
				shown[i] = false
			}
		}
	}
	// What is left goes to the cut text: the joins, then the group names.
	spare := width - rowW(widths, keyW)
	joins := len(worthCols) - 1
	if grow := min(max(spare, 0), need[joins]-widths[joins]); grow > 0 {
		widths[joins] += grow
		spare -= grow
	}
	if grow := min(max(spare, 0), keyNeed-keyW); grow > 0 {
		keyW += grow
	}
	return widths, keyW, shown
}

// verdict is the budget's sentence for the previewed spec, wrapped to
// the panel (one line from 120 columns), or nil.
func (w *worthView) verdict() []string {
	if w.budget == nil || w.prev == nil {
		return nil
	}
	return budgetLines(w.st, w.budget.Judge(w.prev, w.rate), w.width)
}

// budgetLines renders a budget verdict: fits with what is left, or by how
// much it misses, wrapped to width.
func budgetLines(st *Styles, v whatif.BudgetVerdict, width int) []string {
	style := st.Join.Split
	if v.Fits {
		style = st.Join.Joined
	}
	var out []string
	for i, l := range wrap(v.String(), width-3) {
		indent := " "
		if i > 0 {
			indent = "   "
		}
		out = append(out, style.Render(indent+l))
	}
	return out
}

// budgetCell is a verdict in a few characters, beside a line that names
// the budget: fits, or misses by how much, with the value.
func budgetCell(v whatif.BudgetVerdict) string { return v.Brief() }

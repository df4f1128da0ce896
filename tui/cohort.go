package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/nemo-gym/gymtrace/gate/cohort"
	"github.com/nemo-gym/gymtrace/gate/evidence"
	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/gate/whatif"
)

// cohortView is `diff --cohort` over the waterfall: the rollouts the
// list's filter selects against the other rollouts, the features that set
// them apart ranked by effect size.
type cohortView struct {
	pager
	listCursor // cursor: a row of cmp.Rows; offset: the first row shown
	reg        *groups.Registry

	cmp     *cohort.Comparison
	err     string
	seq     uint64 // the snapshot and filter the rows are for
	filter  string
	have    bool
	running bool
	// outcome reads Gym's files for a rollout (nil when none joined), so
	// what they say ranks beside the spans.
	outcome func(id string) *evidence.Outcome

	// Laid out by layout for the width: the lines above the rows, each
	// row's line, and each row's detail wrapped; out is the drawn block,
	// made again by render when the cursor moves.
	head    []string
	rowText []string
	details [][]string
	out     string
}

// cohortMsg carries a comparison.
type cohortMsg struct {
	seq    uint64
	filter string
	cmp    *cohort.Comparison
	err    error
}

func newCohortView(st *Styles, keys *KeyMap, reg *groups.Registry) *cohortView {
	c := &cohortView{pager: newPager(st, keys, "C/esc back"), reg: reg}
	c.title = "Cohort"
	return c
}

func (c *cohortView) name() string        { return "cohort" }
func (c *cohortView) opener() key.Binding { return c.keys.Cohort }
func (c *cohortView) setSize(w, h int)    { c.resize(w, h); c.layout() }

func (c *cohortView) open(*env) bool {
	c.opened = true
	c.cursor, c.offset = 0, 0
	c.layout()
	return true
}

// wantsRoom reports that, open and focused, the view takes the screen's
// height from the panels beside it: the rows and the detail of one.
func (c *cohortView) wantsRoom() bool { return true }

// request starts a comparison when the open view is stale for the
// snapshot and the list's filter, and none runs. Each runs on an engine of
// its own.
func (c *cohortView) request(e *env) tea.Cmd {
	reg, snap, f := c.reg, e.snap, e.where
	text := ""
	if f != nil {
		text = f.String()
	}
	if !c.opened || c.running || snap == nil || (c.have && c.seq == snap.Seq && c.filter == text) {
		return nil
	}
	if f.Empty() {
		c.have, c.seq, c.filter, c.cmp = true, snap.Seq, text, nil
		c.err = "filter the rollout list (/) to pick a cohort: this view compares the rollouts it lists with the others"
		c.layout()
		return nil
	}
	c.running = true
	eng := whatif.NewEngine(reg)
	outcome := c.outcome
	return func() tea.Msg {
		cmp, err := cohort.CompareWith(eng, snap, f, nil, outcome)
		return cohortMsg{seq: snap.Seq, filter: text, cmp: cmp, err: err}
	}
}

// update takes the view's own results.
func (c *cohortView) update(m tea.Msg) bool {
	msg, ok := m.(cohortMsg)
	if !ok {
		return false
	}
	c.running, c.have = false, true
	if msg.filter != c.filter {
		c.cursor, c.offset = 0, 0
	}
	c.seq, c.filter, c.cmp, c.err = msg.seq, msg.filter, msg.cmp, ""
	if msg.err != nil {
		c.err = msg.err.Error()
	}
	c.layout()
	return true
}

func (c *cohortView) layout() {
	w := c.width
	c.head, c.rowText, c.details = nil, nil, nil
	c.title, c.more = "Cohort", nil
	switch {
	case !c.have:
		c.head = append(c.head, c.st.List.Dim.Render(clip("  comparing…", w)))
	case c.err != "":
		for _, l := range wrap(c.err, w-2) {
			c.head = append(c.head, c.st.List.Dim.Render("  "+l))
		}
	default:
		cmp := c.cmp
		c.title = "Cohort " + c.filter
		c.head = append(c.head, clip(fmt.Sprintf(" cohort %s: %s · baseline: the other %s", c.filter,
			countNoun(len(cmp.Cohort), "rollout"), countNoun(len(cmp.Baseline), "rollout")), w))
		if c.height >= 20 {
			c.head = append(c.head, c.st.List.Dim.Render(clip(" effect: Cliff's delta, +1 every cohort rollout above every other, -1 below", w)))
		}
		c.head = append(c.head, c.st.Panel.Column.Render(cohortRow(" ", "effect", "metric", "cohort", "others", "feature", w)))
		if len(cmp.Rows) == 0 {
			c.head = append(c.head, c.st.List.Dim.Render(clip("  nothing differs", w)))
		}
		for _, r := range cmp.Rows {
			c.rowText = append(c.rowText, cohortRow(" ", fmt.Sprintf("%+.2f", r.Effect), r.Metric.String(), cohortValue(r.Metric, r.Cohort),
				cohortValue(r.Metric, r.Baseline), r.Feature.Kind.String()+" "+r.Feature.String(), w))
			c.details = append(c.details, cohortDetail(r, w-1))
		}
		c.clampTo(len(c.rowText))
	}
	c.render()
}

// cohortRow is one line of the table, gut the cursor's column.
func cohortRow(gut, eff, metric, a, b, feat string, w int) string {
	return clip(gut+fitRight(eff, 6)+" "+fit(metric, 10)+" "+fitRight(a, 8)+" "+fitRight(b, 8)+" "+feat, w)
}

// cohortDetail is a row said whole, wrapped to w cells: the feature, what
// is compared and each side's mean over how many rollouts, the effect,
// and the features the row stands for.
func cohortDetail(r cohort.Row, w int) []string {
	feat := r.Feature.Kind.String() + " " + r.Feature.Name
	if r.Feature.Kind == cohort.SpanName {
		feat += " [" + r.Feature.Service + "]"
	}
	paras := []string{
		feat,
		fmt.Sprintf("%s: cohort %s over %s · others %s over %s", cohortMetricText(r.Metric),
			r.Metric.Format(r.Cohort), countNoun(r.CohortN, "rollout"), r.Metric.Format(r.Baseline), countNoun(r.BaselineN, "rollout")),
		fmt.Sprintf("effect %+.2f: %s", r.Effect, cohortEffectText(r.Effect)),
	}
	if len(r.Same) > 0 {
		var names []string
		for i, f := range r.Same {
			if i == 5 {
				names = append(names, fmt.Sprintf("%d more", len(r.Same)-5))
				break
			}
			names = append(names, f.Kind.String()+" "+f.String())
		}
		paras = append(paras, "the same on every rollout: "+strings.Join(names, ", "))
	}
	var out []string
	for k, p := range paras {
		indent := " "
		if k > 0 {
			indent = "   "
		}
		for i, l := range wrap(p, w-len(indent)) {
			if i > 0 && k == 0 {
				indent = "   "
			}
			out = append(out, indent+l)
		}
	}
	return out
}

// cohortMetricText says what a metric measures.
func cohortMetricText(m cohort.Metric) string {
	switch m {
	case cohort.Count:
		return "spans per rollout"
	case cohort.Share:
		return "share of rollout time (self)"
	case cohort.ErrorRate:
		return "error rate (rollouts with such spans)"
	case cohort.Value:
		return "outcome (rollouts whose files say it)"
	}
	return m.String()
}

// cohortEffectText reads Cliff's delta in words.
func cohortEffectText(e float64) string {
	switch {
	case e >= 1:
		return "every cohort rollout is above every other"
	case e <= -1:
		return "every cohort rollout is below every other"
	case e > 0:
		return fmt.Sprintf("a cohort rollout is above another %.0f%% more often than below", 100*e)
	}
	return fmt.Sprintf("a cohort rollout is below another %.0f%% more often than above", -100*e)
}

// rowsShown is how many rows the window shows: the height less the
// title, the lines above the rows, and the cursor row's detail with its
// rule; three at least, when the height has them.
func (c *cohortView) rowsShown() int {
	d := 0
	if c.cursor < len(c.details) {
		d = len(c.details[c.cursor])
	}
	return max(c.height-1-len(c.head)-1-d, min(3, len(c.rowText)), 1)
}

// render draws the block for the cursor: the rows in their window, the
// cursor's marked, then the rule and the cursor row's detail.
func (c *cohortView) render() {
	if c.width <= 0 || c.height <= 0 {
		c.out = ""
		return
	}
	lines := append([]string(nil), c.head...)
	n := len(c.rowText)
	if n > 0 {
		h := c.rowsShown()
		c.follow(h, n)
		for i := c.offset; i < n && i < c.offset+h; i++ {
			line := c.rowText[i]
			if i == c.cursor {
				line = c.st.List.Selected.Render(fit("›"+line[1:], c.width))
			}
			lines = append(lines, line)
		}
		for len(lines) < len(c.head)+h {
			lines = append(lines, "")
		}
		lines = append(lines, c.st.List.Dim.Render(strings.Repeat("─", c.width)))
		lines = append(lines, c.details[c.cursor]...)
		c.more = []titlePart{{fmt.Sprintf("%d of %d", c.cursor+1, n), 1}}
	}
	if len(lines) > c.height-1 {
		lines = lines[:max(c.height-1, 0)]
	}
	c.out = c.st.Panel.Title.Render(fitTitle(c.width, c.title, append(append([]titlePart(nil), c.more...), titlePart{c.hint, 2}))) + "\n" + strings.Join(lines, "\n")
}

func (c *cohortView) view() string { return c.out }

func (c *cohortView) help() []key.Binding {
	return []key.Binding{c.keys.Up, c.keys.Down, c.keys.PageUp, c.keys.PageDown, c.keys.Top, c.keys.Bottom}
}

// handle moves the cursor over the rows, as the list panels move.
func (c *cohortView) handle(km tea.KeyMsg, _ *env) (bool, tea.Cmd) {
	if !c.moveKey(c.keys, km, len(c.rowText), c.rowsShown()) {
		return false, nil
	}
	c.render()
	return true, nil
}

func (c *cohortView) scroll(n int) {
	c.cursor += n
	c.clampTo(len(c.rowText))
	c.render()
}

// click puts the cursor on the row at content line y.
func (c *cohortView) click(y int) {
	if i := c.rowAt(y, 1+len(c.head), len(c.rowText)); i >= 0 && i < c.offset+c.rowsShown() {
		c.cursor = i
		c.render()
	}
}

// cohortValue is a side's mean: spans per rollout, or a percentage.
func cohortValue(m cohort.Metric, v float64) string { return m.Format(v) }

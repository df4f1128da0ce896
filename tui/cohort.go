package tui

import (
	"fmt"

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
	reg *groups.Registry

	cmp     *cohort.Comparison
	err     string
	seq     uint64 // the snapshot and filter the rows are for
	filter  string
	have    bool
	running bool
	// outcome reads Gym's files for a rollout (nil when none joined), so
	// what they say ranks beside the spans.
	outcome func(id string) *evidence.Outcome
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
	c.layout()
	c.vp.GotoTop()
	return true
}

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
	c.seq, c.filter, c.cmp, c.err = msg.seq, msg.filter, msg.cmp, ""
	if msg.err != nil {
		c.err = msg.err.Error()
	}
	c.layout()
	return true
}

func (c *cohortView) layout() {
	w := c.width
	var lines []string
	switch {
	case !c.have:
		lines = append(lines, c.st.List.Dim.Render(clip("  comparing…", w)))
	case c.err != "":
		lines = append(lines, c.st.List.Dim.Render(clip("  "+c.err, w)))
	default:
		cmp := c.cmp
		lines = append(lines, clip(fmt.Sprintf(" cohort %s: %s · baseline: the other %s", c.filter,
			countNoun(len(cmp.Cohort), "rollout"), countNoun(len(cmp.Baseline), "rollout")), w),
			c.st.List.Dim.Render(clip(" effect: Cliff's delta, +1 every cohort rollout above every other, -1 below", w)))
		row := func(eff, metric, a, b, feat string) string {
			return clip(" "+fitRight(eff, 6)+" "+fit(metric, 10)+" "+fitRight(a, 8)+" "+fitRight(b, 8)+" "+feat, w)
		}
		lines = append(lines, c.st.Panel.Column.Render(row("effect", "metric", "cohort", "others", "feature")))
		if len(cmp.Rows) == 0 {
			lines = append(lines, c.st.List.Dim.Render(clip("  nothing differs", w)))
		}
		for _, r := range cmp.Rows {
			lines = append(lines, row(fmt.Sprintf("%+.2f", r.Effect), r.Metric.String(), cohortValue(r.Metric, r.Cohort),
				cohortValue(r.Metric, r.Baseline), r.Feature.Kind.String()+" "+r.Feature.String()))
		}
	}
	c.setLines(lines)
}

// cohortValue is a side's mean: spans per rollout, or a percentage.
func cohortValue(m cohort.Metric, v float64) string { return m.Format(v) }

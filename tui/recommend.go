package tui

import (
	"fmt"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/nemo-gym/gymtrace/gate/advise"
	"github.com/nemo-gym/gymtrace/gate/whatif"
	"github.com/nemo-gym/gymtrace/model"
)

// recommendMsg carries the search's answer for the snapshot seq.
type recommendMsg struct {
	seq    uint64
	advice *advise.Advice
	err    error
}

// runRecommend searches, off the UI goroutine and on an engine of its own,
// the spec that fits budget over snap (gymtrace recommend, joins intact).
func runRecommend(eng *whatif.Engine, snap *model.Snapshot, budget whatif.Budget, rate float64) tea.Cmd {
	return func() tea.Msg {
		a, err := advise.Recommend(eng, snap, advise.Options{Budget: budget, Rate: rate})
		return recommendMsg{seq: snap.Seq, advice: a, err: err}
	}
}

// startRecommend asks for the recommended spec (r); the answer lands in
// the preview.
func (m *Model) startRecommend() tea.Cmd {
	switch {
	case m.opts.Budget == nil:
		m.status, m.statusErr = "no budget to recommend a spec for: start with --budget (e.g. 50spans/rollout)", true
		return nil
	case m.snap == nil:
		m.status, m.statusErr = "nothing captured yet to recommend a spec from", true
		return nil
	}
	m.status = "searching the specs that fit " + m.opts.Budget.String() + "…"
	return runRecommend(whatif.NewEngine(m.reg), m.snap, *m.opts.Budget, m.opts.RolloutRate)
}

// setRecommend puts the recommended spec in the preview and says what it
// keeps, or why there is none.
func (m Model) setRecommend(msg recommendMsg) (Model, tea.Cmd) {
	a := msg.advice
	switch {
	case msg.err != nil:
		m.status, m.statusErr = "no recommendation: "+msg.err.Error(), true
		return m, nil
	case a.Best == nil:
		m.status, m.statusErr = "no recommendation: "+a.Outcome.Text(), true
		if a.Floor != nil {
			m.status += "; cheapest " + m.reg.Spec(a.Floor.Set) + ": " + a.Floor.Verdict.String()
		}
		return m, nil
	}
	b := a.Best
	m.groups.SetPreview(b.Set)
	m.status, m.statusErr = fmt.Sprintf("recommended %s: %s %s, keeps %.0f%% of rollout time, %s, %s (y copies it)",
		m.reg.Spec(b.Set), b.Verdict.ValueText(), advise.Unit(b.Verdict.Budget), 100*b.WallShare,
		countNoun(b.ErrorSpans, "error span"), countNoun(b.Groups, "group")), false
	return m, m.afterChange()
}

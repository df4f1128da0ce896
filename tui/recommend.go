package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/cursor"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
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

// budgetPrompt is the budget typed on the footer line when r has none
// (--budget): Enter applies it and searches, Esc leaves it, a budget that
// does not read says why and stays to be fixed.
type budgetPrompt struct {
	on    bool
	input textinput.Model
	err   string
}

func newBudgetPrompt(st *Styles) budgetPrompt {
	in := textinput.New()
	in.Cursor.SetMode(cursor.CursorStatic)
	in.Prompt = "budget to recommend a spec for: "
	in.PromptStyle = st.Input.Prompt
	in.Placeholder = "e.g. 50spans/rollout, 40KB/rollout, 50GB/day · enter applies, esc leaves"
	return budgetPrompt{input: in}
}

// askBudget opens the budget prompt.
func (m *Model) askBudget() tea.Cmd {
	m.ask.on, m.ask.err = true, ""
	m.ask.input.SetValue("")
	return m.ask.input.Focus()
}

// updateBudgetPrompt takes a key while the budget prompt is open.
func (m Model) updateBudgetPrompt(km tea.KeyMsg) (tea.Model, tea.Cmd) {
	switch {
	case key.Matches(km, m.keys.Back):
		m.ask.on, m.ask.err = false, ""
		m.ask.input.Blur()
		m.status = "no budget typed: nothing recommended"
		return m, nil
	case km.Type == tea.KeyEnter:
		text := strings.TrimSpace(m.ask.input.Value())
		b, err := whatif.ParseBudget(text)
		if err != nil {
			m.ask.err = strings.TrimPrefix(err.Error(), fmt.Sprintf("budget %q: ", text))
			return m, nil
		}
		m.ask.on, m.ask.err = false, ""
		m.ask.input.Blur()
		m.setBudget(&b)
		cmd := m.startRecommend()
		return m, tea.Batch(cmd, m.afterChange())
	}
	var cmd tea.Cmd
	m.ask.input, cmd = m.ask.input.Update(km)
	m.ask.err = ""
	return m, cmd
}

// setBudget makes b the budget every view judges the specs against, as
// --budget does.
func (m *Model) setBudget(b *whatif.Budget) {
	m.opts.Budget = b
	m.groups.budget, m.worth.budget = b, b
	m.groups.render()
	m.worth.layout()
}

// budgetPromptView is the footer line while the prompt is open: the input,
// then why the budget typed does not read.
func (m *Model) budgetPromptView() string {
	line := m.ask.input.View()
	if m.ask.err != "" {
		line += " " + m.st.Input.Error.Render("✗ "+m.ask.err)
	}
	return clip(line, m.width)
}

// startRecommend asks for the recommended spec (r); the answer lands in
// the preview. With no budget it asks for one first.
func (m *Model) startRecommend() tea.Cmd {
	switch {
	case m.opts.Budget == nil:
		return m.askBudget()
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

package tui

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/nemo-gym/gymtrace/gate/advise"
	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/gate/whatif"
	"github.com/nemo-gym/gymtrace/model"
	"github.com/nemo-gym/gymtrace/receiver"
)

// budgetModel opens a real capture with a budget, as `open --budget` does.
func budgetModel(tb testing.TB, name, budget string) (Model, *model.Store, *groups.Registry) {
	tb.Helper()
	st := model.NewStore(model.Options{})
	tb.Cleanup(st.Close)
	if _, err := receiver.ReadFiles(st, realFiles(tb, name), receiver.ReadOptions{}); err != nil {
		tb.Fatal(err)
	}
	st.Sync()
	v, _ := groups.DetectVariant(st.Snapshot())
	reg := v.Registry()
	cur, _ := reg.Parse("default")
	o := Options{Source: st, Registry: reg, Current: cur, CurrentSpec: "default", SnippetPath: filepath.Join(tb.TempDir(), SnippetFile)}
	if budget != "" {
		b, err := whatif.ParseBudget(budget)
		if err != nil {
			tb.Fatal(err)
		}
		o.Budget = &b
	}
	m := New(o)
	m.refresh = time.Nanosecond
	m = send(tb, m, tea.WindowSizeMsg{Width: 160, Height: 45})
	return run(tb, m, m.Init()), st, reg
}

// TestRecommendKey: r puts the spec gymtrace recommend proposes in the
// preview, and says what it keeps; without a budget it says why not.
func TestRecommendKey(t *testing.T) {
	m, st, reg := budgetModel(t, "s41-obs0-iso/all", "50spans/rollout")
	b, _ := whatif.ParseBudget("50spans/rollout")
	want, err := advise.Recommend(whatif.NewEngine(reg), st.Snapshot(), advise.Options{Budget: b})
	if err != nil || want.Best == nil {
		t.Fatalf("recommend: %v %+v", err, want)
	}
	m = keys(t, m, "r")
	if got := m.groups.Preview(); got != want.Best.Set {
		t.Fatalf("preview %s, want the recommended %s", reg.Spec(got), reg.Spec(want.Best.Set))
	}
	if !strings.Contains(m.status, "recommended "+reg.Spec(want.Best.Set)) || m.statusErr {
		t.Errorf("status %q", m.status)
	}
	if v := ansi.Strip(m.View()); !strings.Contains(v, "recommended "+reg.Spec(want.Best.Set)) {
		t.Errorf("the screen does not say it:\n%s", v)
	}
}

// TestRecommendTypedBudget: r without --budget asks for one on the footer
// line, as / asks for a filter: a budget that does not read says why and
// stays open, Esc leaves it, Enter applies it, and the search runs off the
// UI goroutine, its answer in the preview as with --budget; the typed
// budget is then judged in the span groups.
func TestRecommendTypedBudget(t *testing.T) {
	m, st, reg := budgetModel(t, "s41-obs0-iso/all", "")
	before := m.groups.Preview()
	m = keys(t, m, "r")
	if !m.ask.on || !strings.Contains(footerOf(m), "budget to recommend a spec for: ") {
		t.Fatalf("r opens no budget prompt:\n%s", footerOf(m))
	}
	// q is typed, not obeyed.
	m = typeText(t, m, "q")
	m = keys(t, m, "backspace")
	m = typeText(t, m, "50spans")
	m = keys(t, m, "enter")
	if !m.ask.on || m.opts.Budget != nil || !strings.Contains(footerOf(m), "✗ no /rollout, /s or /day") {
		t.Fatalf("a budget without a period: prompt open %v, footer %q", m.ask.on, footerOf(m))
	}
	m = keys(t, m, "esc")
	if m.ask.on || m.opts.Budget != nil || m.groups.Preview() != before || strings.Contains(footerOf(m), "budget to recommend") {
		t.Fatalf("esc: prompt open %v, budget %v, preview %s", m.ask.on, m.opts.Budget, reg.Spec(m.groups.Preview()))
	}
	m = keys(t, m, "r")
	m = typeText(t, m, "50spans/rollout")
	next, cmd := m.Update(keyMsg("enter"))
	m = next.(Model)
	if m.ask.on || cmd == nil || m.groups.Preview() != before || !strings.Contains(m.status, "searching the specs that fit 50 spans/rollout") {
		t.Fatalf("enter: prompt open %v, cmd %v, preview %s, status %q", m.ask.on, cmd != nil, reg.Spec(m.groups.Preview()), m.status)
	}
	m = run(t, m, cmd)
	b, _ := whatif.ParseBudget("50spans/rollout")
	want, err := advise.Recommend(whatif.NewEngine(reg), st.Snapshot(), advise.Options{Budget: b})
	if err != nil || want.Best == nil {
		t.Fatalf("recommend: %v %+v", err, want)
	}
	if got := m.groups.Preview(); got != want.Best.Set || !strings.Contains(m.status, "recommended "+reg.Spec(want.Best.Set)) {
		t.Errorf("preview %s, status %q; want the recommended %s", reg.Spec(got), m.status, reg.Spec(want.Best.Set))
	}
	if v := ansi.Strip(m.View()); !strings.Contains(v, "budget          50 spans/rollout") {
		t.Errorf("the typed budget is not judged in the span groups:\n%s", v)
	}
	// With a budget, r searches again at once.
	m = keys(t, m, "3", "r")
	if m.ask.on || m.groups.Preview() != want.Best.Set {
		t.Errorf("r with the typed budget: prompt open %v, preview %s", m.ask.on, reg.Spec(m.groups.Preview()))
	}
}

// footerOf is the screen's last line.
func footerOf(m Model) string {
	lines := strings.Split(ansi.Strip(m.View()), "\n")
	return lines[len(lines)-1]
}

// TestCohortView: C over a filtered list compares the listed rollouts
// with the others; over an unfiltered list it says to filter first.
func TestCohortView(t *testing.T) {
	m, _, _ := budgetModel(t, "s41-obs0-iso/all", "")
	m = keys(t, m, "C")
	if !m.cohort.isOpen() || !strings.Contains(ansi.Strip(m.View()), "filter the rollout list (/) to pick a cohort") {
		t.Fatalf("unfiltered:\n%s", ansi.Strip(m.View()))
	}
	// The list's filter, typed with the list focused, then C again.
	m = keys(t, m, "C", "shift+tab")
	if m.focus != slotRollouts || m.cohort.isOpen() {
		t.Fatalf("focus %v, cohort open %v", m.focus, m.cohort.isOpen())
	}
	m = keys(t, m, "/")
	m = typeText(t, m, "status=error")
	m = keys(t, m, "enter", "C")
	v := ansi.Strip(m.View())
	if !m.cohort.isOpen() || m.cohort.cmp == nil {
		t.Fatalf("filtered: open %v, %s\n%s", m.cohort.isOpen(), m.cohort.err, v)
	}
	if !strings.Contains(v, "cohort status=error: ") || !strings.Contains(v, "+1.00") {
		t.Errorf("the view lacks the cohort line or a full effect:\n%s", v)
	}
	if n := len(m.cohort.cmp.Cohort); n != len(m.rollouts.rows) {
		t.Errorf("cohort of %d rollouts, the list shows %d", n, len(m.rollouts.rows))
	}
}

// TestPathKey: P marks the critical path on the waterfall's bars and sums
// up who holds the rollout's time on a line under the title; P again
// takes it away.
func TestPathKey(t *testing.T) {
	m, _, _ := budgetModel(t, "s41-obs1-iso/all", "")
	m = keys(t, m, "enter")
	plain := ansi.Strip(m.View())
	if strings.ContainsRune(plain, glyphPath) {
		t.Fatalf("path shown before P")
	}
	m = keys(t, m, "P")
	v := ansi.Strip(m.View())
	if !strings.ContainsRune(v, glyphPath) || !strings.Contains(v, string(glyphPath)+" critical path held by agent") {
		t.Fatalf("no path on the waterfall:\n%s", v)
	}
	if m.trace.marks.path == nil || m.trace.marks.path.RolloutID != m.trace.Rollout().ID {
		t.Fatalf("path of %+v", m.trace.marks.path)
	}
	// The next rollout gets its own path.
	first := m.trace.marks.path
	m = keys(t, m, "tab", "tab", "down")
	if m.trace.Rollout() != nil && m.trace.Rollout().ID != first.RolloutID && (m.trace.marks.path == nil || m.trace.marks.path.RolloutID != m.trace.Rollout().ID) {
		t.Errorf("path of %v after moving to %s", m.trace.marks.path, m.trace.Rollout().ID)
	}
	m = keys(t, m, "P")
	if strings.ContainsRune(ansi.Strip(m.View()), glyphPath) {
		t.Errorf("path still shown after P again")
	}
}

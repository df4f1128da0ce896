package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/gate/whatif"
	"github.com/nemo-gym/gymtrace/model"
)

// statsScope is what the statistics are computed over.
type statsScope uint8

const (
	scopeRollout  statsScope = iota // the selected rollout
	scopeFiltered                   // the rollouts the list shows (its filter)
	scopeAll                        // every rollout
	numScopes
)

func (s statsScope) String() string {
	switch s {
	case scopeFiltered:
		return "the listed rollouts"
	case scopeAll:
		return "all rollouts"
	}
	return "this rollout"
}

// statsView is latency by operation (whatif.Latency): per service, span name
// and group, the spans' count, p50/p90/p99/max duration, total and self
// time, over the selected rollout, the listed ones or all (a cycles).
type statsView struct {
	pager
	reg *groups.Registry
	// eng classifies for the view alone, on the UI goroutine: the model's
	// engines belong to running commands.
	eng   *whatif.Engine
	scope statsScope
	lat   *whatif.Latency
	// what lat was computed from
	r      *model.Rollout
	snap   *model.Snapshot
	rows   int
	scoped statsScope
}

func newStatsView(st *Styles, keys *KeyMap, reg *groups.Registry) *statsView {
	return &statsView{pager: newPager(st, keys, "t/esc back · a scope"), reg: reg, eng: whatif.NewEngine(reg)}
}

func (s *statsView) name() string        { return "statistics" }
func (s *statsView) opener() key.Binding { return s.keys.Stats }
func (s *statsView) setSize(w, h int)    { s.width, s.height = w, h; s.layout() }

func (s *statsView) help() []key.Binding {
	return append([]key.Binding{s.keys.Scope}, s.pager.help()...)
}

func (s *statsView) open(e *env) bool {
	s.opened = true
	s.compute(e)
	s.vp.GotoTop()
	return true
}

// refresh recomputes while open when what the scope covers changed.
func (s *statsView) refresh(e *env) {
	if !s.opened || s.scoped == s.scope && s.snap == e.rsnap && s.rows == len(e.rows) && (s.scope != scopeRollout || e.rollout == s.r) {
		return
	}
	s.compute(e)
}

func (s *statsView) handle(km tea.KeyMsg, e *env) (bool, tea.Cmd) {
	if key.Matches(km, s.keys.Scope) {
		s.scope = (s.scope + 1) % numScopes
		s.compute(e)
		s.vp.GotoTop()
		return true, nil
	}
	return s.pager.handle(km, e)
}

func (s *statsView) compute(e *env) {
	s.r, s.snap, s.rows, s.scoped = e.rollout, e.rsnap, len(e.rows), s.scope
	var rolls []*model.Rollout
	switch s.scope {
	case scopeRollout:
		if e.rollout != nil {
			rolls = []*model.Rollout{e.rollout}
		}
	case scopeFiltered:
		rolls = e.rows
	case scopeAll:
		if e.rsnap != nil {
			rolls = e.rsnap.Rollouts
		}
	}
	if len(rolls) == 0 || e.snap == nil {
		s.title, s.more, s.lat = "Statistics · "+s.scope.String(), nil, nil
		s.layout()
		return
	}
	s.lat = s.eng.Latency(e.snap, rolls)
	what := s.scope.String()
	if s.scope == scopeRollout {
		what = e.rollout.ID
	}
	s.title = "Statistics " + what
	count := countNoun(s.lat.Spans, "span")
	if s.scope != scopeRollout {
		count += " in " + countNoun(s.lat.Rollouts, "rollout")
	}
	s.more = []titlePart{{count, 3}}
	s.layout()
}

// statCols are the figures of a row, most wanted first: on a narrow
// panel the last ones give way before the name does.
var statCols = []struct {
	head string
	val  func(whatif.LatencyRow) string
}{
	{"spans", func(r whatif.LatencyRow) string { return fmtCount(int64(r.Count)) }},
	{"p50", func(r whatif.LatencyRow) string { return fmtDur(r.P50) }},
	{"p90", func(r whatif.LatencyRow) string { return fmtDur(r.P90) }},
	{"p99", func(r whatif.LatencyRow) string { return fmtDur(r.P99) }},
	{"max", func(r whatif.LatencyRow) string { return fmtDur(r.Max) }},
	{"self", func(r whatif.LatencyRow) string { return fmtDur(r.Self) }},
	{"total", func(r whatif.LatencyRow) string { return fmtDur(r.Total) }},
}

func (s *statsView) layout() {
	if s.lat == nil {
		s.setLines([]string{"", "  nothing to measure in " + s.scope.String()})
		s.resize(s.width, s.height)
		return
	}
	// Figures are at most 7 cells ("999.9k", "59.99s", "12m05s").
	const numW, errW, minKey = 7, 4, 22
	n := len(statCols)
	for n > 1 && s.width-1-n*(1+numW)-(1+errW) < minKey {
		n--
	}
	cols := statCols[:n]
	keyW := max(s.width-1-n*(1+numW)-(1+errW), 8)
	row := func(k string, vals []string, errs string) string {
		line := " " + fitMiddle(k, keyW)
		for _, v := range vals {
			line += " " + fitRight(v, numW)
		}
		return clip(line+" "+fitRight(errs, errW), s.width)
	}
	var lines []string
	for k, sec := range []struct {
		title string
		rows  []whatif.LatencyRow
	}{{"by service", s.lat.ByService}, {"by span name", s.lat.ByName}, {"by group", s.lat.ByGroup}} {
		if k > 0 {
			lines = append(lines, "")
		}
		heads := make([]string, len(cols))
		for i, c := range cols {
			heads[i] = c.head
		}
		lines = append(lines, s.st.Panel.Column.Render(row(sec.title, heads, "err")))
		for _, r := range sec.rows {
			errs := ""
			if r.Errors > 0 {
				errs = s.st.Tree.Error.Render(fmt.Sprint(r.Errors))
			}
			name := r.Key
			if k == 0 {
				name = shortService(name)
			}
			vals := make([]string, len(cols))
			for i, c := range cols {
				vals[i] = c.val(r)
			}
			lines = append(lines, row(name, vals, errs))
		}
	}
	s.setLines(lines)
	s.resize(s.width, s.height)
}

// selfTimes returns each span's duration minus the time covered by its
// children (clipped to the span), as Jaeger's trace statistics define it.
func selfTimes(f *model.Fragment) []int64 { return whatif.SelfTimes(f, nil) }

// fitMiddle is fit that cuts out of the middle: operation names differ at
// their end ("POST /v1/responses http receive" and "… http send"), so both
// ends stay.
func fitMiddle(s string, width int) string {
	w := ansi.StringWidth(s)
	if w <= width || width < 9 {
		return fit(s, width)
	}
	// The tail starts at a word when one fits in half the width; the head
	// keeps the rest, where names differ next ("POST /seed_session …").
	tail := (width - 1) / 2
	for i := len(s) - 1; i > 0; i-- {
		if s[i] != ' ' {
			continue
		}
		tw := ansi.StringWidth(s[i:])
		if tw > (width-1)/2 {
			break
		}
		tail = tw
	}
	head := width - 1 - tail
	return fit(strings.TrimRight(ansi.Truncate(s, head, ""), " ")+"…"+ansi.Cut(s, w-tail, w), width)
}

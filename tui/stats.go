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
//
// A scope of more than statsSyncSpans spans is measured off the UI
// goroutine, one measurement at a time, and every measurement is kept
// until the list's snapshot changes: cycling back to a scope shows it at
// once, and on a capture that no longer changes the scopes not shown are
// measured ahead, while the view is open.
type statsView struct {
	pager
	reg *groups.Registry
	// eng classifies for the view alone, on the UI goroutine; bg for the
	// one measurement in flight: the model's engines belong to its
	// commands.
	eng, bg *whatif.Engine
	live    bool // the capture may change: nothing is measured ahead
	scope   statsScope
	lat     *whatif.Latency
	shown   statsKey // what lat is of
	want    statsKey // what the scope shows now
	// cache holds the measurements of snapshot gen, by what they are of.
	gen     *model.Snapshot
	cache   map[statsKey]*whatif.Latency
	running bool
}

// statsKey names what a measurement covers: a scope of the list's
// snapshot, and the rollout or the listed rows it stands for.
type statsKey struct {
	scope statsScope
	snap  *model.Snapshot // the list's (env.rsnap)
	r     *model.Rollout  // scopeRollout's
	where string          // scopeFiltered's filter and row count
	rows  int
}

// statsMsg carries a measurement made off the UI goroutine.
type statsMsg struct {
	key statsKey
	lat *whatif.Latency
}

// statsSyncSpans is the most spans a scope may have to be measured on the
// UI goroutine: ~2 ms at 50k, where 446k spans take ~300 ms.
var statsSyncSpans = 50_000

func newStatsView(st *Styles, keys *KeyMap, reg *groups.Registry, live bool) *statsView {
	return &statsView{pager: newPager(st, keys, "t/esc back · a scope"), reg: reg,
		eng: whatif.NewEngine(reg), bg: whatif.NewEngine(reg), live: live}
}

func (s *statsView) name() string        { return "statistics" }
func (s *statsView) opener() key.Binding { return s.keys.Stats }
func (s *statsView) setSize(w, h int)    { s.width, s.height = w, h; s.layout() }

func (s *statsView) help() []key.Binding {
	return append([]key.Binding{s.keys.Scope}, s.pager.help()...)
}

func (s *statsView) open(e *env) bool {
	s.opened = true
	s.show(e)
	s.vp.GotoTop()
	return true
}

// refresh follows what the scope covers while open.
func (s *statsView) refresh(e *env) {
	if s.opened && s.keyOf(e, s.scope) != s.want {
		s.show(e)
	}
}

func (s *statsView) handle(km tea.KeyMsg, e *env) (bool, tea.Cmd) {
	if key.Matches(km, s.keys.Scope) {
		s.scope = (s.scope + 1) % numScopes
		s.show(e)
		s.vp.GotoTop()
		return true, nil
	}
	return s.pager.handle(km, e)
}

// keyOf is what scope covers in e.
func (s *statsView) keyOf(e *env, scope statsScope) statsKey {
	k := statsKey{scope: scope, snap: e.rsnap}
	switch scope {
	case scopeRollout:
		k.r = e.rollout
	case scopeFiltered:
		k.where, k.rows = e.where.String(), len(e.rows)
	}
	return k
}

// rollsOf is the rollouts scope covers in e.
func rollsOf(e *env, scope statsScope) []*model.Rollout {
	switch scope {
	case scopeRollout:
		if e.rollout != nil {
			return []*model.Rollout{e.rollout}
		}
	case scopeFiltered:
		return e.rows
	case scopeAll:
		if e.rsnap != nil {
			return e.rsnap.Rollouts
		}
	}
	return nil
}

// spansIn counts the spans of rolls, up to past statsSyncSpans.
func spansIn(rolls []*model.Rollout) int {
	n := 0
	for _, r := range rolls {
		if n += r.Spans; n > statsSyncSpans {
			break
		}
	}
	return n
}

// show puts the scope's figures up: kept ones, or measured here when the
// scope is small; a large one waits for request's measurement.
func (s *statsView) show(e *env) {
	if e.rsnap != s.gen {
		s.gen, s.cache = e.rsnap, map[statsKey]*whatif.Latency{}
	}
	k := s.keyOf(e, s.scope)
	s.want = k
	if lat, ok := s.cache[k]; ok {
		s.install(k, lat)
		return
	}
	rolls := rollsOf(e, s.scope)
	if len(rolls) == 0 || e.snap == nil {
		s.install(k, nil)
		return
	}
	if spansIn(rolls) <= statsSyncSpans {
		lat := s.eng.Latency(e.snap, rolls)
		s.cache[k] = lat
		s.install(k, lat)
		return
	}
	if s.shown.scope != k.scope {
		// Another scope's figures would read as this one's.
		s.lat, s.shown = nil, statsKey{scope: k.scope}
	}
	s.title = "Statistics · " + s.scope.String()
	s.more = []titlePart{{"measuring " + countNoun(len(rolls), "rollout") + "…", 3}}
	s.layout()
}

// install shows lat, the measurement of k.
func (s *statsView) install(k statsKey, lat *whatif.Latency) {
	s.lat, s.shown = lat, k
	if lat == nil {
		s.title, s.more = "Statistics · "+k.scope.String(), nil
		s.layout()
		return
	}
	what := k.scope.String()
	if k.scope == scopeRollout {
		what = k.r.ID
	}
	s.title = "Statistics " + what
	count := countNoun(lat.Spans, "span")
	if k.scope != scopeRollout {
		count += " in " + countNoun(lat.Rollouts, "rollout")
	}
	s.more = []titlePart{{count, 3}}
	s.layout()
}

// request measures the scope shown when it waits for figures, else, on a
// capture that no longer changes, a scope not yet measured; one at a time,
// on the view's own engine.
func (s *statsView) request(e *env) tea.Cmd {
	if !s.opened || s.running || e.snap == nil || e.rsnap != s.gen {
		return nil
	}
	k, rolls := s.want, rollsOf(e, s.scope)
	if s.shown == s.want {
		k, rolls = statsKey{}, nil
		for sc := statsScope(0); sc < numScopes && !s.live; sc++ {
			sk := s.keyOf(e, sc)
			if _, ok := s.cache[sk]; !ok && sc != s.scope {
				if r := rollsOf(e, sc); spansIn(r) > statsSyncSpans {
					k, rolls = sk, r
					break
				}
			}
		}
		if rolls == nil {
			return nil
		}
	}
	s.running = true
	eng, snap := s.bg, e.snap
	return func() tea.Msg { return statsMsg{key: k, lat: eng.Latency(snap, rolls)} }
}

// update takes a measurement: kept while its snapshot is the list's,
// shown when it is what the scope waits for.
func (s *statsView) update(msg tea.Msg) bool {
	m, ok := msg.(statsMsg)
	if !ok {
		return false
	}
	s.running = false
	if m.key.snap == s.gen && s.cache != nil {
		s.cache[m.key] = m.lat
	}
	if m.key == s.want {
		s.install(m.key, m.lat)
	}
	return true
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
		text := "  nothing to measure in " + s.scope.String()
		if s.shown != s.want {
			text = "  measuring " + s.scope.String() + "…"
		}
		s.setLines([]string{"", text})
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

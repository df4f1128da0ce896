package tui

import (
	"fmt"
	"sort"

	"github.com/charmbracelet/bubbles/key"
	"github.com/nemo-gym/gymtrace/gate"
	"github.com/nemo-gym/gymtrace/model"
)

// statRow aggregates spans sharing a key.
type statRow struct {
	key                string
	count, errors      int
	total, self, maxNs int64
}

// statsView is the per-rollout statistics table: span counts and total and
// self time grouped by service, by span name and by group.
type statsView struct {
	pager
	reg      *gate.Registry
	sections [3][]statRow
	// what the sections were computed from
	r   *model.Rollout
	sim *gate.RolloutSim
}

func newStatsView(st *Styles, keys *KeyMap, reg *gate.Registry) *statsView {
	return &statsView{pager: newPager(st, keys, "t/esc back"), reg: reg}
}

func (s *statsView) name() string        { return "statistics" }
func (s *statsView) opener() key.Binding { return s.keys.Stats }
func (s *statsView) setSize(w, h int)    { s.width, s.height = w, h; s.layout() }

func (s *statsView) open(e *env) bool {
	s.opened = true
	s.SetRollout(e.snap, e.rollout, e.sim)
	s.vp.GotoTop()
	return true
}

// refresh recomputes while open when the rollout or its classification changed.
func (s *statsView) refresh(e *env) {
	if s.opened && (e.rollout != s.r || e.sim != s.sim) {
		s.SetRollout(e.snap, e.rollout, e.sim)
	}
}

// selfTimes returns each span's duration minus the time covered by its
// children (clipped to the span), as Jaeger's trace statistics define it.
func selfTimes(f *model.Fragment) []int64 {
	n := len(f.Spans)
	type iv struct{ a, b int64 }
	kids := make([][]iv, n)
	for i := range f.Spans {
		if p := f.Spans[i].Parent; p >= 0 && int(p) < n {
			kids[p] = append(kids[p], iv{f.Spans[i].Start, f.Spans[i].End})
		}
	}
	self := make([]int64, n)
	for i := range f.Spans {
		sp := &f.Spans[i]
		ks := kids[i]
		sort.Slice(ks, func(a, b int) bool { return ks[a].a < ks[b].a })
		covered, curA, curB := int64(0), int64(0), int64(-1)
		for _, k := range ks {
			a, b := max(k.a, sp.Start), min(k.b, sp.End)
			if b <= a {
				continue
			}
			if a > curB {
				if curB > curA {
					covered += curB - curA
				}
				curA, curB = a, b
			} else if b > curB {
				curB = b
			}
		}
		if curB > curA {
			covered += curB - curA
		}
		self[i] = max(sp.Duration()-covered, 0)
	}
	return self
}

// SetRollout computes the statistics of r; sim supplies the groups.
func (s *statsView) SetRollout(snap *model.Snapshot, r *model.Rollout, sim *gate.RolloutSim) {
	if s.r == nil || r == nil || s.r.ID != r.ID {
		s.vp.GotoTop()
	}
	s.r, s.sim = r, sim
	if r == nil {
		s.title, s.sections = "Statistics", [3][]statRow{}
		s.layout()
		return
	}
	s.title = fmt.Sprintf("Statistics %s · %s", r.ID, countNoun(r.Spans, "span"))
	maps := [3]map[string]*statRow{{}, {}, {}}
	add := func(m map[string]*statRow, k string, sp *model.Span, self int64) {
		row := m[k]
		if row == nil {
			row = &statRow{key: k}
			m[k] = row
		}
		row.count++
		row.total += sp.Duration()
		row.self += self
		row.maxNs = max(row.maxNs, sp.Duration())
		if sp.Status == model.StatusError {
			row.errors++
		}
	}
	for fi, f := range r.Fragments {
		self := selfTimes(f)
		for i := range f.Spans {
			sp := &f.Spans[i]
			add(maps[0], shortService(snap.ServiceName(sp.Resource)), sp, self[i])
			add(maps[1], gate.DisplayName(snap.Interner(), sp), sp, self[i])
			g := "(classifying…)"
			if grp, ok := simGroup(sim, fi, i); ok {
				g = s.reg.Name(grp)
			}
			add(maps[2], g, sp, self[i])
		}
	}
	for k, m := range maps {
		rows := make([]statRow, 0, len(m))
		for _, r := range m {
			rows = append(rows, *r)
		}
		sort.Slice(rows, func(i, j int) bool {
			if rows[i].total != rows[j].total {
				return rows[i].total > rows[j].total
			}
			return rows[i].key < rows[j].key
		})
		s.sections[k] = rows
	}
	s.layout()
}

func (s *statsView) layout() {
	var lines []string
	keyW := max(s.width-1-(1+6+1+9+1+9+1+9+1+6), 8)
	row := func(k, c, tot, self, mx, errs string) string {
		return clip(" "+fit(k, keyW)+" "+fitRight(c, 6)+" "+fitRight(tot, 9)+" "+fitRight(self, 9)+" "+fitRight(mx, 9)+" "+fitRight(errs, 6), s.width)
	}
	for k, title := range []string{"by service", "by span name", "by group"} {
		if k > 0 {
			lines = append(lines, "")
		}
		lines = append(lines, s.st.Panel.Column.Render(row(title, "spans", "total", "self", "max", "errors")))
		for _, r := range s.sections[k] {
			errs := ""
			if r.errors > 0 {
				errs = s.st.Tree.Error.Render(fmt.Sprint(r.errors))
			}
			lines = append(lines, row(r.key, fmt.Sprint(r.count), fmtDur(r.total), fmtDur(r.self), fmtDur(r.maxNs), errs))
		}
	}
	s.setLines(lines)
	s.resize(s.width, s.height)
}

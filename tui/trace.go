package tui

import (
	"fmt"
	"sort"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/nemo-gym/gymtrace/gate"
	"github.com/nemo-gym/gymtrace/model"
)

// traceRow is one line of the waterfall: a span, or a note line (frag < 0 or
// idx < 0) such as a fragment header or a "new trace" marker.
type traceRow struct {
	frag, idx int32
	prefix    string // tree glyphs before the name
	kids      bool
	note      string
	noteStyle int8 // 0 fragment header, 1 cut
}

func (r traceRow) isSpan() bool { return r.frag >= 0 && r.idx >= 0 }

// openDetailMsg asks the root to open the span detail of the cursor's span.
type openDetailMsg struct{}

// traceView is the waterfall of the selected rollout.
type traceView struct {
	st   *Styles
	keys *KeyMap
	reg  *gate.Registry

	width, height int
	snap          *model.Snapshot
	r             *model.Rollout
	simAll        *gate.RolloutSim
	simPrev       *gate.RolloutSim
	simKey        simKey

	preview   bool
	spec      gate.Set // the previewed spec
	collapsed map[model.SpanID]bool

	rows           []traceRow
	dropped        int
	cursor, offset int
	out            string
}

func newTraceView(st *Styles, keys *KeyMap, reg *gate.Registry) traceView {
	return traceView{st: st, keys: keys, reg: reg, collapsed: map[model.SpanID]bool{}}
}

// SetSize sets the content size.
func (t traceView) SetSize(w, h int) traceView {
	t.width, t.height = w, h
	t.render()
	return t
}

// SetRollout shows r (nil for none) from snap. A new rollout resets the
// cursor and the expansion state; a new version of the same keeps them.
func (t traceView) SetRollout(snap *model.Snapshot, r *model.Rollout) traceView {
	same := t.r != nil && r != nil && t.r.ID == r.ID
	if !same {
		t.collapsed = map[model.SpanID]bool{}
		t.cursor, t.offset = 0, 0
	}
	if same && t.r.Version == r.Version && t.snap != nil {
		t.snap = snap
		return t
	}
	if r == nil || t.simKey.id != r.ID || t.simKey.version != r.Version {
		t.simAll, t.simPrev = nil, nil
	}
	t.snap, t.r = snap, r
	t.rebuild()
	return t
}

// SetSim installs a simulation result if it is for the shown rollout.
func (t traceView) SetSim(m simMsg) traceView {
	if t.r == nil || m.key.id != t.r.ID || m.key.version != t.r.Version {
		return t
	}
	t.simAll, t.simPrev, t.simKey = m.all, m.prev, m.key
	t.rebuild()
	return t
}

// NeedsSim returns the simulation the view is missing, if any.
func (t traceView) NeedsSim(spec gate.Set) (simKey, bool) {
	if t.r == nil {
		return simKey{}, false
	}
	k := simKey{id: t.r.ID, version: t.r.Version, spec: spec}
	return k, k != t.simKey
}

// SetPreview switches preview mode and the previewed spec.
func (t traceView) SetPreview(on bool, spec gate.Set) traceView {
	if on == t.preview && spec == t.spec {
		return t
	}
	t.preview, t.spec = on, spec
	t.rebuild()
	return t
}

// Rollout returns the shown rollout.
func (t traceView) Rollout() *model.Rollout { return t.r }

// SelectedSpan returns the fragment and index of the cursor's span.
func (t traceView) SelectedSpan() (*model.Fragment, int, bool) {
	if t.r == nil || t.cursor < 0 || t.cursor >= len(t.rows) || !t.rows[t.cursor].isSpan() {
		return nil, 0, false
	}
	row := t.rows[t.cursor]
	return t.r.Fragments[row.frag], int(row.idx), true
}

// GroupOf returns the classified group of a span, if a simulation has it.
func (t traceView) GroupOf(frag, idx int) (gate.Group, bool) {
	return simGroup(t.simAll, frag, idx)
}

func simGroup(s *gate.RolloutSim, frag, idx int) (gate.Group, bool) {
	if s == nil || frag >= len(s.Frags) || idx >= len(s.Frags[frag].Group) {
		return 0, false
	}
	return s.Frags[frag].Group[idx], true
}

// Update handles keys while the panel has focus.
func (t traceView) Update(msg tea.Msg) (traceView, tea.Cmd) {
	km, ok := msg.(tea.KeyMsg)
	if !ok {
		return t, nil
	}
	page := max(t.listHeight(), 1)
	switch {
	case key.Matches(km, t.keys.Up):
		t.cursor--
	case key.Matches(km, t.keys.Down):
		t.cursor++
	case key.Matches(km, t.keys.Top):
		t.cursor = 0
	case key.Matches(km, t.keys.Bottom):
		t.cursor = len(t.rows) - 1
	case key.Matches(km, t.keys.PageUp):
		t.cursor -= page
	case key.Matches(km, t.keys.PageDown):
		t.cursor += page
	case key.Matches(km, t.keys.Expand), key.Matches(km, t.keys.Toggle):
		if t.cursor < len(t.rows) && t.rows[t.cursor].isSpan() {
			row := t.rows[t.cursor]
			if row.kids {
				id := t.r.Fragments[row.frag].Spans[row.idx].SpanID
				t.collapsed[id] = !t.collapsed[id]
				t.rebuild()
				return t, nil
			}
			if key.Matches(km, t.keys.Expand) {
				return t, func() tea.Msg { return openDetailMsg{} }
			}
		}
	case key.Matches(km, t.keys.Detail):
		if _, _, ok := t.SelectedSpan(); ok {
			return t, func() tea.Msg { return openDetailMsg{} }
		}
	case key.Matches(km, t.keys.ExpandAll):
		t.collapsed = map[model.SpanID]bool{}
		t.rebuild()
		return t, nil
	case key.Matches(km, t.keys.Collapse):
		t.collapseAll()
		t.rebuild()
		return t, nil
	default:
		return t, nil
	}
	t.cursor = clamp(t.cursor, 0, len(t.rows)-1)
	t.render()
	return t, nil
}

// Scroll moves the cursor by n rows (mouse wheel).
func (t traceView) Scroll(n int) traceView {
	t.cursor = clamp(t.cursor+n, 0, len(t.rows)-1)
	t.render()
	return t
}

// Click selects the row at content line y.
func (t traceView) Click(y int) traceView {
	i := y - 2 + t.offset
	if y < 2 || i >= len(t.rows) {
		return t
	}
	t.cursor = i
	t.render()
	return t
}

func (t *traceView) collapseAll() {
	if t.r == nil {
		return
	}
	t.collapsed = map[model.SpanID]bool{}
	for _, f := range t.r.Fragments {
		for i := range f.Spans {
			if p := f.Spans[i].Parent; p >= 0 {
				t.collapsed[f.Spans[p].SpanID] = true
			}
		}
	}
}

func (t traceView) listHeight() int { return t.height - 2 }

// fragSim returns the previewed simulation of fragment fi when preview mode
// is on and the simulation matches the fragment.
func (t *traceView) fragSim(fi int) *gate.FragSim {
	if !t.preview || t.simPrev == nil || fi >= len(t.simPrev.Frags) {
		return nil
	}
	fs := &t.simPrev.Frags[fi]
	n := len(t.r.Fragments[fi].Spans)
	if len(fs.Kept) != n || len(fs.Parent) != n || len(fs.Cut) != n {
		return nil
	}
	return fs
}

// rebuild flattens the rollout into rows, honouring collapse and preview.
func (t *traceView) rebuild() {
	var cur model.SpanID
	if f, i, ok := t.SelectedSpan(); ok {
		cur = f.Spans[i].SpanID
	}
	t.rows = t.rows[:0]
	t.dropped = 0
	if t.r == nil {
		t.render()
		return
	}
	nfrag := len(t.r.Fragments)
	for fi, f := range t.r.Fragments {
		if nfrag > 1 || f.Orphan() {
			t.rows = append(t.rows, traceRow{frag: int32(fi), idx: -1, note: t.fragNote(fi, f)})
		}
		fs := t.fragSim(fi)
		n := len(f.Spans)
		kids := make([][]int32, n)
		var roots, cutRoots []int32
		for i := range f.Spans {
			p, cut := f.Spans[i].Parent, false
			if fs != nil {
				if !fs.Kept[i] {
					t.dropped++
					continue
				}
				p, cut = fs.Parent[i], fs.Cut[i]
			}
			switch {
			case cut:
				cutRoots = append(cutRoots, int32(i))
			case p < 0 || int(p) >= n:
				roots = append(roots, int32(i))
			default:
				kids[p] = append(kids[p], int32(i))
			}
		}
		byStart := func(xs []int32) {
			sort.SliceStable(xs, func(a, b int) bool { return f.Spans[xs[a]].Start < f.Spans[xs[b]].Start })
		}
		var walk func(i int32, lead string, last, top bool)
		walk = func(i int32, lead string, last, top bool) {
			glyph, next := "", ""
			if !top {
				glyph, next = "├─ ", "│  "
				if last {
					glyph, next = "└─ ", "   "
				}
			}
			ks := kids[i]
			t.rows = append(t.rows, traceRow{frag: int32(fi), idx: i, prefix: lead + glyph, kids: len(ks) > 0})
			if len(ks) == 0 || t.collapsed[f.Spans[i].SpanID] {
				return
			}
			byStart(ks)
			for j, k := range ks {
				walk(k, lead+next, j == len(ks)-1, false)
			}
		}
		byStart(roots)
		for _, i := range roots {
			walk(i, "", true, true)
		}
		byStart(cutRoots)
		for _, i := range cutRoots {
			t.rows = append(t.rows, traceRow{frag: int32(fi), idx: -1, note: "✗ new trace: " + t.cutReason(fi, int(i)), noteStyle: 1})
			walk(i, "", true, true)
		}
	}
	t.cursor = clamp(t.cursor, 0, len(t.rows)-1)
	if !cur.IsZero() {
		for j, row := range t.rows {
			if row.isSpan() && t.r.Fragments[row.frag].Spans[row.idx].SpanID == cur {
				t.cursor = j
				break
			}
		}
	}
	t.render()
}

// fragNote describes why a rollout has more than one fragment.
func (t *traceView) fragNote(fi int, f *model.Fragment) string {
	s := fmt.Sprintf("fragment %d/%d · trace %s", fi+1, len(t.r.Fragments), f.TraceID.String()[:8])
	switch {
	case f.Orphan():
		s += " · orphan: parent " + f.TopParent.String() + " not arrived"
	case fi > 0 && f.TraceID != t.r.Fragments[0].TraceID:
		s += " · split: a separate trace"
	case fi > 0:
		s += " · split: same trace, not connected"
	}
	return s
}

// cutReason explains why a kept span starts a new trace under the preview.
func (t *traceView) cutReason(fi, i int) string {
	sp := &t.r.Fragments[fi].Spans[i]
	name, svc := t.snap.Str(sp.Name), t.snap.ServiceName(sp.Resource)
	if t.simPrev != nil {
		for _, b := range t.simPrev.Breaks {
			if b.SpanName == name && b.ToService == svc && b.Reason != "" {
				return b.Reason
			}
		}
	}
	return hopReason(t.reg, t.spec)
}

// hopReason is the generic reason a cross-process hop breaks under spec.
func hopReason(reg *gate.Registry, spec gate.Set) string {
	switch {
	case !spec.Has(gate.HTTPClient) && !spec.Has(gate.Server):
		return "http_client and server off: no traceparent sent or read"
	case !spec.Has(gate.HTTPClient):
		return "http_client off: no traceparent sent"
	case !spec.Has(gate.Server):
		return "server off: traceparent not extracted"
	}
	return "parent dropped"
}

// columns is the waterfall's column layout for a width.
type columns struct{ name, dur, svc, tag, bar int }

func layoutColumns(w int) columns {
	c := columns{dur: 7}
	if w >= 50 {
		c.svc = 12
	}
	if w >= 64 {
		c.tag = 11
	}
	if w >= 60 {
		c.bar = clamp(w/5, 10, 40)
	}
	c.name = w - 1 - (c.dur + 1)
	for _, x := range []int{c.svc, c.tag, c.bar} {
		if x > 0 {
			c.name -= x + 1
		}
	}
	return c
}

// render caches the panel text from the rows; only visible rows are drawn.
func (t *traceView) render() {
	if t.width <= 0 || t.height <= 0 {
		t.out = ""
		return
	}
	var lines []string
	if t.r == nil {
		lines = append(lines, t.st.Panel.Title.Render("Trace"), t.st.List.Dim.Render(clip("  no rollout selected", t.width)))
		t.out = padLines(lines, t.height)
		return
	}
	r := t.r
	title := fmt.Sprintf("Trace %s · %d spans · %d trace", r.ID, r.Spans, r.Traces)
	if r.Traces != 1 {
		title += "s"
	}
	title += " · " + fmtDur(r.End-r.Start)
	if t.preview {
		title = "Preview " + r.ID
		switch {
		case t.simPrev == nil:
			title += " · simulating…"
		default:
			title += fmt.Sprintf(" · %d trace%s · %d dropped (hidden)", t.simPrev.Traces, plural(t.simPrev.Traces), t.dropped)
		}
		title += " · " + t.reg.Spec(t.spec)
	}
	lines = append(lines, t.st.Panel.Title.Render(clip(title, t.width)))
	c := layoutColumns(t.width)
	head := " " + fit("span", c.name) + " " + fitRight("time", c.dur)
	if c.svc > 0 {
		head += " " + fit("service", c.svc)
	}
	if c.tag > 0 {
		head += " " + fit("group", c.tag)
	}
	if c.bar > 0 {
		total := fmtDur(r.End - r.Start)
		head += " " + "0" + fitRight(total, c.bar-1)
	}
	lines = append(lines, t.st.Panel.Column.Render(clip(head, t.width)))

	h := t.listHeight()
	t.offset = window(t.cursor, t.offset, h, len(t.rows))
	for j := t.offset; j < len(t.rows) && j < t.offset+h; j++ {
		lines = append(lines, t.renderRow(j, c))
	}
	if len(t.rows) == 0 {
		lines = append(lines, t.st.List.Dim.Render(clip("  every span of this rollout is dropped", t.width)))
	}
	t.out = padLines(lines, t.height)
}

func (t *traceView) renderRow(j int, c columns) string {
	row := t.rows[j]
	gut := " "
	if j == t.cursor {
		gut = "›"
	}
	if !row.isSpan() {
		st := t.st.Tree.Fragment
		if row.noteStyle == 1 {
			st = t.st.Tree.Cut
		}
		line := gut + st.Render(clip(row.note, t.width-1))
		if j == t.cursor {
			line = t.st.List.Selected.Render(fit(line, t.width))
		}
		return line
	}
	f := t.r.Fragments[row.frag]
	sp := &f.Spans[row.idx]
	name := t.snap.Str(sp.Name)
	if row.kids && t.collapsed[sp.SpanID] {
		name = "⊞ " + name
	}
	var marks string
	if sp.Status == model.StatusError {
		marks += " " + t.st.Tree.Error.Render("✗")
	}
	if sp.Flags&model.FlagTruncated != 0 {
		marks += " " + t.st.Tree.Truncated.Render("⋯truncated")
	}
	cell := t.st.Tree.Glyph.Render(row.prefix) + name + marks
	line := gut + fit(cell, c.name) + " " + fitRight(fmtDur(sp.Duration()), c.dur)
	svc := t.st.Service(uint32(sp.Resource))
	if c.svc > 0 {
		line += " " + svc.Render(fit(shortService(t.snap.ServiceName(sp.Resource)), c.svc))
	}
	if c.tag > 0 {
		tag := ""
		if g, ok := simGroup(t.simAll, int(row.frag), int(row.idx)); ok {
			tag = t.reg.Name(g)
		}
		line += " " + t.st.Tree.Group.Render(fit(tag, c.tag))
	}
	if c.bar > 0 {
		bs := svc
		if sp.Status == model.StatusError {
			bs = t.st.Tree.ErrorBar
		}
		line += " " + bar(sp.Start, sp.End, t.r.Start, t.r.End, c.bar, bs.Render)
	}
	if j == t.cursor {
		line = t.st.List.Selected.Render(fit(line, t.width))
	}
	return line
}

// bar draws a span's extent on the rollout's time axis, width cells wide.
func bar(start, end, t0, t1 int64, width int, paint func(...string) string) string {
	span := t1 - t0
	if span <= 0 || width <= 0 {
		return strings.Repeat(" ", max(width, 0))
	}
	a := int((start - t0) * int64(width) / span)
	b := int(((end-t0)*int64(width) + span - 1) / span)
	a = clamp(a, 0, width-1)
	b = clamp(b, a+1, width)
	return strings.Repeat(" ", a) + paint(strings.Repeat("█", b-a)) + strings.Repeat(" ", width-b)
}

// View returns the rendered panel content.
func (t traceView) View() string { return t.out }

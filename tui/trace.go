package tui

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/gate/rollouts"
	"github.com/nemo-gym/gymtrace/gate/whatif"
	"github.com/nemo-gym/gymtrace/model"
)

// traceRow is one line of the waterfall: a span, or a note line (frag < 0 or
// idx < 0) such as a fragment header or a "new trace" marker.
type traceRow struct {
	frag, idx int32
	prefix    string // tree glyphs before the name
	kids      bool
	hidden    int32 // spans under a collapsed node
	note      string
	noteStyle int8 // 0 fragment header, 1 cut
}

func (r traceRow) isSpan() bool { return r.frag >= 0 && r.idx >= 0 }

// openDetailMsg asks the root to open the span detail of the cursor's span.
type openDetailMsg struct{}

// traceView is the waterfall of the selected rollout.
type traceView struct {
	basePanel
	st   *Styles
	keys *KeyMap
	reg  *groups.Registry

	width, height int
	focused       bool // the name column may take the room it needs
	snap          *model.Snapshot
	r             *model.Rollout
	simAll        *whatif.RolloutSim
	simPrev       *whatif.RolloutSim
	simKey        simKey

	preview   bool
	spec      groups.Set // the previewed spec
	collapsed map[model.SpanID]bool

	rows     []traceRow
	dropped  int
	needName int // widest name cell of any row
	needSvc  int // longest short service name of any row
	listCursor
	moved  bool // the user moved the cursor in this rollout
	search spanSearch
	// check is the last join check: a split rollout's hops head its rows.
	check *whatif.CheckReport
	// leaked is the check's context leaks (the request spans a reused
	// connection put under another request's span), each marked.
	leaked map[model.SpanID]bool
	// leakLead is 1 when the shown rollout has a leaked span: the column
	// after the state mark that marks it.
	leakLead int
	// hint, with no rollout to show, is said instead: how to send spans,
	// when the list beside is too narrow to say it.
	hint  []string
	marks pathMarks
	// tokens: the rollout's token usage, for the title.
	tokens rolloutTokens
	out    string
}

// refresh picks up a new join check.
func (t *traceView) refresh(e *env) {
	if t.r == nil && e.snap != t.snap {
		t.snap = e.snap // the empty state reads whether spans came
		t.render()
	}
	if e.check != t.check {
		if e.check == nil || t.check == nil || e.check.Structure != t.check.Structure {
			t.leaked = nil
			if e.check != nil && e.check.Structure != nil && len(e.check.Structure.Leaks) > 0 {
				t.leaked = e.check.Structure.LeakedSpans()
			}
		}
		t.check = e.check
		t.rebuild()
	}
}

// splitNotes are the rows naming why the shown rollout is split in the
// capture: one per broken hop, wrapped, never cut.
func (t *traceView) splitNotes() []traceRow {
	if t.check == nil || t.r == nil || t.width <= 0 {
		return nil
	}
	rc, ok := t.check.ByRollout[t.r.ID]
	if !ok || rc.Status != whatif.Split {
		return nil
	}
	var rows []traceRow
	for _, h := range rc.Hops {
		text := fitReason(func(reason string) string {
			text := glyphSplit + " split: " + hopText(h.FromService, h.ToService, h.SpanName, reason)
			if h.Count > 1 {
				text += fmt.Sprintf(" ×%d", h.Count)
			}
			return text
		}, h.Reason, h.Short(), t.width-3)
		for k, l := range wrap(text, t.width-3) {
			if k > 0 {
				l = "  " + l
			}
			rows = append(rows, traceRow{frag: -1, idx: -1, note: l, noteStyle: 1})
		}
	}
	return rows
}

func newTraceView(st *Styles, keys *KeyMap, reg *groups.Registry) *traceView {
	return &traceView{st: st, keys: keys, reg: reg, collapsed: map[model.SpanID]bool{}, search: newSpanSearch(st)}
}

func (t *traceView) slot() slot      { return slotTrace }
func (t *traceView) name() string    { return "waterfall" }
func (t *traceView) view() string    { return t.out }
func (t *traceView) capturing() bool { return t.search.typing }

func (t *traceView) help() []key.Binding {
	k := t.keys
	return []key.Binding{k.Expand, k.Search, k.NextMatch, k.PrevMatch, k.NextError, k.PrevError, k.Detail,
		k.ExpandAll, k.Collapse, k.Up, k.Down, k.Top, k.Bottom, k.PageUp, k.PageDown}
}

// setSize sets the content size.
func (t *traceView) setSize(w, h int) {
	wrapped := w != t.width
	t.width, t.height = w, h
	t.search.setWidth(w)
	if wrapped {
		t.rebuild() // the split notes wrap to the width
		return
	}
	t.render()
}

// SetFocused tells the view whether it has the keyboard: focused, the name
// column takes the room its names need.
func (t *traceView) SetFocused(on bool) {
	if on != t.focused {
		t.focused = on
		t.render()
	}
}

// SetRollout shows r (nil for none) from snap. A new rollout resets the
// cursor, the expansion state and the search; a new version of the same
// keeps them.
func (t *traceView) SetRollout(snap *model.Snapshot, r *model.Rollout) {
	same := t.r != nil && r != nil && t.r.ID == r.ID
	if !same {
		t.collapsed = map[model.SpanID]bool{}
		t.cursor, t.offset, t.moved = 0, 0, false
		t.search.clear()
	}
	if same && t.r.Version == r.Version && t.snap != nil {
		t.snap = snap
		return
	}
	if r == nil || t.simKey.id != r.ID || t.simKey.version != r.Version {
		t.simAll, t.simPrev = nil, nil
	}
	// The cursor's span, read while the rows still index the old version.
	keep := t.cursorSpan()
	t.snap, t.r = snap, r
	t.tokens.set(snap, r)
	if t.search.query != "" {
		t.search.find(t)
	}
	t.syncPath()
	t.rebuildKeeping(keep)
}

// cursorSpan is the id of the span under the cursor, zero when none.
func (t *traceView) cursorSpan() model.SpanID {
	if f, i, ok := t.SelectedSpan(); ok {
		return f.Spans[i].SpanID
	}
	return model.SpanID{}
}

// startRow is where the cursor rests until the user moves it: the first
// span, below the notes that explain a split, or the first note when the
// notes fill the panel, so the explanation is read first.
func (t *traceView) startRow() int {
	for j, row := range t.rows {
		if row.isSpan() {
			if j >= t.listHeight() {
				return 0
			}
			return j
		}
	}
	return 0
}

// SetSim installs a simulation result if it is for the shown rollout.
func (t *traceView) SetSim(m simMsg) {
	if t.r == nil || m.key.id != t.r.ID || m.key.version != t.r.Version {
		return
	}
	t.simAll, t.simPrev, t.simKey = m.all, m.prev, m.key
	t.rebuild()
}

// NeedsSim returns the simulation the view is missing, if any.
func (t *traceView) NeedsSim(spec groups.Set) (simKey, bool) {
	if t.r == nil {
		return simKey{}, false
	}
	k := simKey{id: t.r.ID, version: t.r.Version, spec: spec}
	return k, k != t.simKey
}

// SetPreview switches preview mode and the previewed spec.
func (t *traceView) SetPreview(on bool, spec groups.Set) {
	if on == t.preview && spec == t.spec {
		return
	}
	t.preview, t.spec = on, spec
	t.rebuild()
}

// Rollout returns the shown rollout.
func (t *traceView) Rollout() *model.Rollout { return t.r }

// SelectedSpan returns the fragment and index of the cursor's span.
func (t *traceView) SelectedSpan() (*model.Fragment, int, bool) {
	if t.r == nil || t.cursor < 0 || t.cursor >= len(t.rows) || !t.rows[t.cursor].isSpan() {
		return nil, 0, false
	}
	row := t.rows[t.cursor]
	return t.r.Fragments[row.frag], int(row.idx), true
}

// selectedRef returns the fragment index and span index of the cursor's span.
func (t *traceView) selectedRef() (int, int, bool) {
	if t.r == nil || t.cursor < 0 || t.cursor >= len(t.rows) || !t.rows[t.cursor].isSpan() {
		return 0, 0, false
	}
	return int(t.rows[t.cursor].frag), int(t.rows[t.cursor].idx), true
}

// GroupOf returns the classified group of a span, if a simulation has it.
func (t *traceView) GroupOf(frag, idx int) (groups.Group, bool) {
	return simGroup(t.simAll, frag, idx)
}

func simGroup(s *whatif.RolloutSim, frag, idx int) (groups.Group, bool) {
	if s == nil || frag >= len(s.Frags) || idx >= len(s.Frags[frag].Group) {
		return 0, false
	}
	return s.Frags[frag].Group[idx], true
}

// handle takes keys while the panel has focus.
func (t *traceView) handle(km tea.KeyMsg, _ *env) (bool, tea.Cmd) {
	if t.search.typing {
		t.search.key(t, km)
		t.render()
		return true, nil
	}
	switch {
	case t.moveKey(t.keys, km, len(t.rows), t.listHeight()):
	case key.Matches(km, t.keys.Search):
		t.search.start()
	case key.Matches(km, t.keys.NextMatch) && len(t.search.hits) > 0:
		t.step(t.search.hits, 1)
	case key.Matches(km, t.keys.PrevMatch) && len(t.search.hits) > 0:
		t.step(t.search.hits, -1)
	case key.Matches(km, t.keys.NextError), key.Matches(km, t.keys.PrevError):
		d := 1
		if key.Matches(km, t.keys.PrevError) {
			d = -1
		}
		if !t.stepError(d) {
			// Nothing to go to: say so rather than stay still in silence.
			text := "no failed span in this rollout"
			if t.r == nil {
				text = "no rollout shown to look for failed spans in"
			}
			return true, func() tea.Msg { return statusMsg{text: text} }
		}
	case key.Matches(km, t.keys.Back) && t.search.query != "":
		t.search.clear()
	case key.Matches(km, t.keys.Expand), key.Matches(km, t.keys.Toggle):
		if t.cursor < len(t.rows) && t.rows[t.cursor].isSpan() {
			row := t.rows[t.cursor]
			if row.kids {
				id := t.r.Fragments[row.frag].Spans[row.idx].SpanID
				t.collapsed[id] = !t.collapsed[id]
				t.rebuild()
				return true, nil
			}
			if key.Matches(km, t.keys.Expand) {
				return true, func() tea.Msg { return openDetailMsg{} }
			}
		}
		return true, nil
	case key.Matches(km, t.keys.ExpandAll):
		t.collapsed = map[model.SpanID]bool{}
		t.rebuild()
		return true, nil
	case key.Matches(km, t.keys.Collapse):
		t.collapseAll()
		t.rebuild()
		return true, nil
	default:
		return false, nil
	}
	t.moved = true
	t.cursor = clamp(t.cursor, 0, len(t.rows)-1)
	t.render()
	return true, nil
}

// spanRef names a span of the shown rollout.
type spanRef struct{ frag, idx int32 }

// step moves the cursor to the next (d = 1) or previous (d = -1) span of
// refs in row order, wrapping, revealing it if it is collapsed away.
func (t *traceView) step(refs []spanRef, d int) {
	if len(refs) == 0 || t.r == nil {
		return
	}
	t.moved = true
	for _, ref := range refs {
		t.expandTo(ref)
	}
	t.rebuild()
	pos := make(map[spanRef]int, len(t.rows))
	for j, row := range t.rows {
		if row.isSpan() {
			pos[spanRef{row.frag, row.idx}] = j
		}
	}
	best, first, last := -1, -1, -1
	for _, ref := range refs {
		j, ok := pos[ref]
		if !ok {
			continue // dropped under the preview
		}
		if first < 0 || j < first {
			first = j
		}
		if j > last {
			last = j
		}
		if d > 0 && j > t.cursor && (best < 0 || j < best) {
			best = j
		}
		if d < 0 && j < t.cursor && (best < 0 || j > best) {
			best = j
		}
	}
	switch {
	case best >= 0:
		t.cursor = best
	case d > 0 && first >= 0:
		t.cursor = first
	case d < 0 && last >= 0:
		t.cursor = last
	}
	t.search.at = -1
	for i, ref := range refs {
		if j, ok := pos[ref]; ok && j == t.cursor {
			t.search.at = i
		}
	}
}

// stepError moves to the next or previous span with error status; it
// reports whether the rollout has one.
func (t *traceView) stepError(d int) bool {
	if t.r == nil {
		return false
	}
	var refs []spanRef
	for fi, f := range t.r.Fragments {
		for i := range f.Spans {
			if f.Spans[i].Status == model.StatusError {
				refs = append(refs, spanRef{int32(fi), int32(i)})
			}
		}
	}
	t.step(refs, d)
	return len(refs) > 0
}

// Reveal puts the cursor on the span with id, expanding its ancestors; it
// reports whether the rollout has that span.
func (t *traceView) Reveal(id model.SpanID) bool {
	if t.r == nil {
		return false
	}
	for fi, f := range t.r.Fragments {
		for i := range f.Spans {
			if f.Spans[i].SpanID == id {
				t.cursor = -1
				t.step([]spanRef{{int32(fi), int32(i)}}, 1)
				t.render()
				return true
			}
		}
	}
	return false
}

// expandTo uncollapses every ancestor of ref.
func (t *traceView) expandTo(ref spanRef) {
	f := t.r.Fragments[ref.frag]
	for p := f.Spans[ref.idx].Parent; p >= 0 && int(p) < len(f.Spans); p = f.Spans[p].Parent {
		delete(t.collapsed, f.Spans[p].SpanID)
	}
}

// scroll moves the cursor by n rows (mouse wheel).
func (t *traceView) scroll(n int) {
	t.moved = true
	t.cursor = clamp(t.cursor+n, 0, len(t.rows)-1)
	t.render()
}

// click selects the row at content line y.
func (t *traceView) click(y int) {
	if i := t.rowAt(y, t.headLines(), len(t.rows)); i >= 0 {
		t.cursor, t.moved = i, true
		t.render()
	}
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

func (t *traceView) listHeight() int {
	h := t.height - t.headLines()
	if t.search.typing {
		h--
	}
	return h
}

// fragSim returns the previewed simulation of fragment fi when preview mode
// is on and the simulation matches the fragment.
func (t *traceView) fragSim(fi int) *whatif.FragSim {
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
func (t *traceView) rebuild() { t.rebuildKeeping(t.cursorSpan()) }

// rebuildKeeping is rebuild with the cursor kept on span cur (once moved).
func (t *traceView) rebuildKeeping(cur model.SpanID) {
	t.rows = t.rows[:0]
	t.dropped = 0
	t.leakLead = 0
	t.needName, t.needSvc = 0, 0
	if t.r == nil {
		t.render()
		return
	}
	t.rows = append(t.rows, t.splitNotes()...)
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
			if t.leaked != nil && t.leaked[f.Spans[i].SpanID] {
				t.leakLead = 1
			}
			if fs != nil {
				if !fs.Kept[i] {
					t.dropped++
					continue
				}
				p, cut = fs.Parent[i], fs.Cut[i] != whatif.CauseNone
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
		// Subtree sizes give "+N" on a collapsed node.
		var size []int
		if len(t.collapsed) > 0 {
			size = subtreeSizes(append(slices.Clone(roots), cutRoots...), kids)
		}
		// leads[d] is the indentation of depth d's glyph: each level adds
		// "│  " or "   " after its parent's, until maxIndent.
		leads := []string{""}
		walk := func(top []int32) {
			walkTree(top, kids, func(i int32, depth int, last bool) bool {
				d := min(depth, maxIndent)
				glyph, next := "", ""
				if depth > 0 {
					glyph, next = "├─ ", "│  "
					if last {
						glyph, next = "└─ ", "   "
					}
				}
				prefix := leads[d] + glyph
				if depth > maxIndent {
					// Past the cap the guides would fill the name column:
					// the depth stands for them.
					prefix = "⋯" + itoa(depth) + " " + glyph
					next = ""
				}
				ks := kids[i]
				row := traceRow{frag: int32(fi), idx: i, prefix: prefix, kids: len(ks) > 0}
				folded := len(ks) > 0 && t.collapsed[f.Spans[i].SpanID]
				if folded {
					row.hidden = int32(size[i] - 1)
				}
				t.rows = append(t.rows, row)
				t.needName = max(t.needName, t.nameWidth(&t.rows[len(t.rows)-1]))
				t.needSvc = max(t.needSvc, ansi.StringWidth(shortService(t.snap.ServiceName(f.Spans[i].Resource))))
				if len(ks) == 0 || folded {
					return false
				}
				byStart(ks)
				if d+1 >= len(leads) {
					leads = append(leads, "")
				}
				leads[d+1] = leads[d] + next
				return true
			})
		}
		byStart(roots)
		walk(roots)
		byStart(cutRoots)
		for _, i := range cutRoots {
			cause := fs.Cut[i] // a cut root is of a previewed fragment
			note := glyphSplit + " new trace: " + cause.Sentence()
			if fix := cause.Fix(); fix != "" {
				note += "; fix: " + fix
			}
			t.rows = append(t.rows, traceRow{frag: int32(fi), idx: -1, note: note, noteStyle: 1})
			walk([]int32{i})
		}
	}
	t.cursor = clamp(t.cursor, 0, len(t.rows)-1)
	switch {
	case !t.moved:
		// Live, a rollout grows and its fragments reorder under a cursor
		// nobody has moved: it stays at the top, where the split's
		// explanation is, rather than following a span down the list.
		t.cursor, t.offset = t.startRow(), 0
	case !cur.IsZero():
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
	case f.Attached:
		s += " · under span " + f.TopParent.String() + " of another fragment"
	case fi > 0 && f.TraceID != t.r.Fragments[0].TraceID:
		s += " · split: a separate trace"
	case fi > 0:
		s += " · split: same trace, not connected"
	}
	return s
}

// nameCell is a span row's name cell: tree glyphs, a collapsed node's
// glyph, the name and how many spans the fold hides.
func (t *traceView) nameCell(row *traceRow, sp *model.Span) (glyphs, text string) {
	text = rollouts.DisplayName(t.snap.Interner(), sp)
	if row.hidden > 0 {
		text = glyphFolded + " " + text + " +" + itoa(int(row.hidden))
	}
	return row.prefix, text
}

func (t *traceView) nameWidth(row *traceRow) int {
	g, n := t.nameCell(row, &t.r.Fragments[row.frag].Spans[row.idx])
	return ansi.StringWidth(g) + ansi.StringWidth(n)
}

// columns is the waterfall's column layout for a width.
type columns struct{ name, dur, svc, tag, bar int }

// rowLead is the cursor gutter and the state mark before the name.
const rowLead = 2

// layoutColumns fits the columns into w cells. need is the widest name cell;
// focused, the name gets it first and the group, then the service column
// give way, and the bar shrinks to its minimum.
//
// keepSvc keeps the service column whatever the names need: without colour
// it alone tells which process a span is in.
//
// svcNeed is the longest service name: where the bar keeps a sixth of the
// width (24 cells at least), the service column grows to it, up to 24.
func layoutColumns(w, need, svcNeed int, focused, keepSvc bool) columns {
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
	name := func() int {
		n := w - rowLead - (c.dur + 1)
		for _, x := range []int{c.svc, c.tag, c.bar} {
			if x > 0 {
				n -= x + 1
			}
		}
		return n
	}
	if focused {
		gives := []*int{&c.tag, &c.svc}
		if keepSvc {
			gives = gives[:1]
		}
		for _, give := range gives {
			if name() >= need {
				break
			}
			*give = 0
		}
		if c.bar > 10 && name() < need {
			c.bar = max(10, c.bar-(need-name()))
		}
	}
	// Room the names do not use goes to the bar.
	if need > 0 && c.bar > 0 && name() > need {
		c.bar += name() - need
	}
	if grow := min(svcNeed, 24) - c.svc; c.svc > 0 && grow > 0 && c.bar-grow >= max(24, w/6) {
		c.svc += grow
		c.bar -= grow
	}
	c.name = name()
	return c
}

// axis is the waterfall's time scale: tick positions and labels for a bar
// width and a duration.
type axis struct {
	step   int64 // ns between ticks
	cells  []int // tick positions in the bar
	labels string
}

// niceStep is the smallest 1-2-5 step giving at most n ticks over d.
func niceStep(d int64, n int) int64 {
	if d <= 0 || n <= 0 {
		return 0
	}
	for mag := int64(1); mag < 1<<62/10; mag *= 10 {
		for _, m := range []int64{1, 2, 5} {
			if d/(m*mag) <= int64(n) {
				return m * mag
			}
		}
	}
	return d
}

func newAxis(d int64, width int) axis {
	var a axis
	if width <= 0 {
		return a
	}
	end := fmtDur(d)
	a.step = niceStep(d, max(width/9, 1))
	lab := []rune(strings.Repeat(" ", width))
	put := func(at int, s string) bool {
		rs := []rune(s)
		if at < 0 || at+len(rs) > len(lab) {
			return false
		}
		for i := max(at-1, 0); i < min(at+len(rs)+1, len(lab)); i++ {
			if lab[i] != ' ' {
				return false
			}
		}
		copy(lab[at:], rs)
		return true
	}
	endAt := width - len([]rune(end))
	put(max(endAt, 0), end)
	if a.step > 0 {
		for v := int64(0); v < d; v += a.step {
			cell := int(v * int64(width) / d)
			if v > 0 {
				a.cells = append(a.cells, cell)
			}
			label := "0"
			if v > 0 {
				label = fmtDur(v)
			}
			if cell+len([]rune(label)) < endAt {
				put(cell, label)
			}
		}
	} else {
		put(0, "0")
	}
	a.labels = string(lab)
	return a
}

// render caches the panel text from the rows; only visible rows are drawn.
func (t *traceView) render() {
	if t.width <= 0 || t.height <= 0 {
		t.out = ""
		return
	}
	var lines []string
	if t.r == nil {
		lines = append(lines, t.st.Panel.Title.Render("Trace"))
		msg := []string{"no rollout selected"}
		if len(t.hint) > 0 && (t.snap == nil || t.snap.Stats.Stored == 0) {
			msg = t.hint
		}
		for _, l := range msg {
			lines = append(lines, t.st.List.Dim.Render(clip("  "+l, t.width)))
		}
		t.out = padLines(lines, t.height)
		return
	}
	r := t.r
	// On a narrow panel the counts give way first, whole; the search and
	// its hit count, what the user is looking at, never do.
	name := "Trace " + r.ID
	parts := []titlePart{{countNoun(r.Spans, "span"), 3}, {countNoun(int(r.Traces), "trace"), 4}, {fmtDur(r.End - r.Start), 2}}
	if extra := t.tokens.title(); extra != "" {
		parts = append(parts, titlePart{strings.TrimPrefix(extra, " · "), 1})
	}
	if t.preview {
		name = "Preview " + r.ID
		parts = []titlePart{{"simulating…", 1}}
		if t.simPrev != nil {
			parts = []titlePart{{countNoun(t.simPrev.Traces, "trace"), 1}, {fmt.Sprintf("%d dropped (hidden)", t.dropped), 2}}
		}
		parts = append(parts, titlePart{t.reg.Spec(t.spec), 3}) // the span groups title says it too
	}
	if q := t.search.query; q != "" {
		parts = append(parts, titlePart{"/" + q + " " + t.search.status(), 0})
	}
	title := fitTitle(t.width, name, parts)
	if q := t.search.query; q != "" && !strings.Contains(title, "/"+q+" ") {
		// A long id: it gives way to the search rather than the search to it.
		found := " · /" + q + " " + t.search.status()
		title = clip(name, max(t.width-ansi.StringWidth(found), 12)) + found
	}
	lines = append(lines, t.st.Panel.Title.Render(clip(title, t.width)))
	if t.headLines() == 3 {
		l := t.pathLine(t.width)
		if l == "" {
			l = string(glyphPath) + " critical path…"
		}
		lines = append(lines, t.st.Tree.Path.Render(clip(l, t.width)))
	}
	c := layoutColumns(t.width-t.leakLead, t.needName, t.needSvc, t.focused, !t.st.Color)
	ax := newAxis(r.End-r.Start, c.bar)
	head := strings.Repeat(" ", rowLead+t.leakLead) + fit("span", c.name) + " " + fitRight("time", c.dur)
	if c.svc > 0 {
		head += " " + fit("service", c.svc)
	}
	if c.tag > 0 {
		head += " " + fit("group", c.tag)
	}
	if c.bar > 0 {
		head += " " + ax.labels
	}
	lines = append(lines, t.st.Panel.Column.Render(clip(head, t.width)))

	h := t.listHeight()
	t.follow(h, len(t.rows))
	for j := t.offset; j < len(t.rows) && j < t.offset+h; j++ {
		lines = append(lines, t.renderRow(j, c, &ax))
	}
	if len(t.rows) == 0 {
		lines = append(lines, t.st.List.Dim.Render(clip("  every span of this rollout is dropped", t.width)))
	}
	if t.search.typing {
		lines = padLinesSlice(lines, t.height-1)
		lines = append(lines, t.search.view(t.width))
	}
	t.out = padLines(lines, t.height)
}

func (t *traceView) renderRow(j int, c columns, ax *axis) string {
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
	// The state mark sits before the name, so no width cuts it off.
	mark := " "
	switch {
	case sp.Status == model.StatusError:
		mark = t.st.Tree.Error.Render(glyphError)
	case sp.Flags()&model.FlagTruncated != 0:
		mark = t.st.Tree.Truncated.Render(glyphTruncated)
	case t.search.hit(row.frag, row.idx):
		mark = t.st.Tree.Match.Render(glyphMatch)
	case t.onPath(sp):
		// Without room for bars the path still shows, span by span.
		mark = t.st.Tree.Path.Render(string(glyphPath))
	}
	if t.leakLead > 0 {
		// A column of its own: a leaked span may have failed too.
		leak := " "
		if t.leaked[sp.SpanID] {
			leak = t.st.Tree.Leak.Render(glyphLeak)
		}
		mark += leak
	}
	glyphs, name := t.nameCell(&row, sp)
	cell := t.st.Tree.Glyph.Render(glyphs) + name
	line := gut + mark + fit(cell, c.name) + " " + fitRight(fmtDur(sp.Duration()), c.dur)
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
		line += " " + t.bar(sp, c.bar, ax, bs)
	}
	if j == t.cursor {
		line = t.st.List.Selected.Render(fit(line, t.width))
	}
	return line
}

// barCells places a span's extent on the rollout's time axis, width cells
// wide: cells [a, b) are the bar.
func barCells(start, end, t0, t1 int64, width int) (a, b int) {
	span := t1 - t0
	if span <= 0 || width <= 0 {
		return 0, 0
	}
	a = int((start - t0) * int64(width) / span)
	b = int(((end-t0)*int64(width) + span - 1) / span)
	a = clamp(a, 0, width-1)
	b = clamp(b, a+1, width)
	return a, b
}

// bar draws a span's bar with its events marked on it and the axis ticks
// dotted in the empty cells.
func (t *traceView) bar(sp *model.Span, width int, ax *axis, paint lipgloss.Style) string {
	a, b := barCells(sp.Start, sp.End, t.r.Start, t.r.End, width)
	cells := make([]rune, width)
	for i := range cells {
		cells[i] = ' '
	}
	for _, c := range ax.cells {
		if c >= 0 && c < width {
			cells[c] = '·'
		}
	}
	for i := a; i < b; i++ {
		cells[i] = t.st.Fill(uint32(sp.Resource))
	}
	t.paintPath(sp, cells, a, b)
	if sp.Extra != nil && t.r.End > t.r.Start {
		for _, ev := range sp.Extra.Events {
			i := int((ev.Time - t.r.Start) * int64(width) / (t.r.End - t.r.Start))
			cells[clamp(i, a, b-1)] = glyphEvent
		}
	}
	var out strings.Builder
	for i := 0; i < width; {
		j := i
		inBar := i >= a && i < b
		for j < width && (j >= a && j < b) == inBar {
			j++
		}
		seg := string(cells[i:j])
		if inBar {
			seg = paint.Render(seg)
		} else {
			seg = t.st.Tree.Tick.Render(seg)
		}
		out.WriteString(seg)
		i = j
	}
	return out.String()
}

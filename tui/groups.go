package tui

import (
	"fmt"
	"github.com/charmbracelet/lipgloss"
	"strings"

	"github.com/charmbracelet/bubbles/cursor"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/gate/whatif"
)

// projections are the rollout counts + and - step through.
var projections = []int{1_000, 10_000, 100_000, 1_000_000}

// groupsPanel lists every span group with a checkbox for the previewed spec
// and compares the current spec with the previewed one.
type groupsPanel struct {
	basePanel
	st   *Styles
	keys *KeyMap
	reg  *groups.Registry
	// budget, when set, is judged against both specs at rate rollouts/s.
	budget *whatif.Budget
	rate   float64

	width, height int
	pending       []string // rollouts the join check still waits for
	check         *whatif.CheckReport
	current       groups.Set
	currentSpec   string
	preview       groups.Set
	curRep        *whatif.Report
	prevRep       *whatif.Report
	proj          int // index into projections

	input     textinput.Model
	inputting bool
	inputErr  string
	// prefilled: the input still holds the spec it opened with, shown as a
	// suggestion; typing replaces it, a movement key keeps it for editing.
	prefilled bool
	// notice says what Gym did with the last typed spec when that differs
	// from what was typed (names it drops); cleared by the next change.
	notice string

	// focused: the panel has the keyboard; narrow, it then lists a row per
	// group, else a run of checkboxes.
	focused bool
	// where is the rollout filter the reports cover ("" for all), as the
	// list shows it: the preview is of those rollouts.
	where string

	// verdicts and breaks cache what gate derives from a report and the
	// check: each walks every rollout, and the panel renders on every key.
	verdicts map[*whatif.Report]whatif.JoinVerdict
	breaks   map[*whatif.Report][]breakSum
	cacheFor *whatif.CheckReport

	listCursor     // cursor: a group; offset: the first line shown
	lead       int // lines above the group rows (the verdict, when narrow)
	// follow keeps the cursor's group in view; scrolling turns it off so the
	// comparison below the list can be read in a short panel.
	follow bool
	out    string
}

func newGroupsPanel(st *Styles, keys *KeyMap, reg *groups.Registry, current groups.Set, currentSpec string) *groupsPanel {
	in := textinput.New()
	// A static cursor: no blink ticks while typing.
	in.Cursor.SetMode(cursor.CursorStatic)
	in.Prompt = "span_groups: "
	in.PromptStyle = st.Input.Prompt
	in.Placeholder = "e.g. default,sandbox"
	if currentSpec == "" {
		currentSpec = reg.Spec(current)
	}
	return &groupsPanel{st: st, keys: keys, reg: reg, current: current, currentSpec: currentSpec, preview: current, proj: 1, input: in}
}

// Preview returns the previewed spec.
func (g *groupsPanel) Preview() groups.Set { return g.preview }

// SetPreview replaces the previewed spec.
func (g *groupsPanel) SetPreview(s groups.Set) {
	g.preview = s
	g.render()
}

// SetCheck records which rollouts are still arriving: a preview cannot call
// them split yet (their parents may simply not have been exported), so the
// joining verdict counts them apart.
func (g *groupsPanel) SetCheck(c *whatif.CheckReport) {
	if c == nil {
		return
	}
	g.check = c
	g.pending = pendingOf(c)
	g.render()
}

// seed is SetCheck with what d derived off the UI goroutine, without
// rendering: the reports that go with it come next.
func (g *groupsPanel) seed(d groupsDerived) {
	g.check, g.pending = d.check, d.pending
	g.verdicts, g.breaks, g.cacheFor = d.verdicts, d.breaks, d.check
}

// pendingOf lists the rollouts the join check still waits for.
func pendingOf(c *whatif.CheckReport) []string {
	var out []string
	for id, rc := range c.ByRollout {
		if rc.Status == whatif.JoinPending {
			out = append(out, id)
		}
	}
	return out
}

// joinCounts returns a report's joined, split and pending rollouts as gate
// judges them with the capture's own check: the verdict the CLI prints.
func (g *groupsPanel) joinCounts(r *whatif.Report) (joined, split, pending int) {
	v := g.verdict(r)
	return v.Joined, v.Split, v.Pending
}

// resetCache drops what was derived from another check.
func (g *groupsPanel) resetCache() {
	if g.cacheFor != g.check || g.verdicts == nil {
		g.verdicts, g.breaks, g.cacheFor = map[*whatif.Report]whatif.JoinVerdict{}, map[*whatif.Report][]breakSum{}, g.check
	}
}

// verdict is whatif.Verdict(r, g.check), computed once per report and check.
func (g *groupsPanel) verdict(r *whatif.Report) whatif.JoinVerdict {
	g.resetCache()
	v, ok := g.verdicts[r]
	if !ok {
		v = whatif.Verdict(r, g.check)
		g.verdicts[r] = v
	}
	return v
}

// breakSums is aggregateBreaks(r, g.pending), once per report and check
// (pending follows the check).
func (g *groupsPanel) breakSums(r *whatif.Report) []breakSum {
	g.resetCache()
	bs, ok := g.breaks[r]
	if !ok {
		bs = aggregateBreaks(r, g.pending)
		g.breaks[r] = bs
	}
	return bs
}

// SetReports installs fresh reports; nil keeps the previous one.
func (g *groupsPanel) SetReports(cur, prev *whatif.Report) {
	if cur != nil {
		g.curRep = cur
	}
	if prev != nil {
		g.prevRep = prev
	}
	g.render()
}

// SetWhere records the rollout filter the reports were narrowed by.
func (g *groupsPanel) SetWhere(where string) {
	if where != g.where {
		g.where = where
		g.render()
	}
}

// SetFocused tells the panel whether it has the keyboard.
func (g *groupsPanel) SetFocused(on bool) {
	if on != g.focused {
		g.focused = on
		g.render()
	}
}

// Project steps the projection size by d.
func (g *groupsPanel) Project(d int) {
	g.proj = clamp(g.proj+d, 0, len(projections)-1)
	g.render()
}

// Inputting reports whether the spec input has the keyboard.
func (g *groupsPanel) Inputting() bool { return g.inputting }

// StartInput opens the spec input, prefilled with the previewed spec.
func (g *groupsPanel) StartInput() tea.Cmd {
	g.inputting = true
	g.inputErr, g.notice = "", ""
	g.input.SetValue(g.reg.Spec(g.preview))
	g.input.CursorEnd()
	g.prefilled = true
	cmd := g.input.Focus()
	g.render()
	return cmd
}

// setSize sets the content size.
func (g *groupsPanel) setSize(w, h int) {
	g.width, g.height = w, h
	g.input.Width = max(w-len(g.input.Prompt)-2, 4)
	g.render()
}

// key applies a key while the panel has focus.
func (g *groupsPanel) key(km tea.KeyMsg) tea.Cmd {
	if g.inputting {
		switch {
		case key.Matches(km, g.keys.Back):
			g.inputting, g.inputErr = false, ""
			g.input.Blur()
			g.render()
			return nil
		case km.Type == tea.KeyEnter:
			// What Gym itself does with the spec, in the registry's variant.
			res := g.reg.Resolve(g.input.Value())
			if res.Off {
				g.inputErr = "✗ " + res.Effect()
				g.render()
				return nil
			}
			g.preview, g.notice = res.Set, res.Effect()
			g.inputting, g.inputErr = false, ""
			g.input.Blur()
			g.render()
			return nil
		}
		if g.prefilled {
			g.prefilled = false
			if km.Type == tea.KeyRunes || km.Type == tea.KeySpace || km.Type == tea.KeyBackspace || km.Type == tea.KeyDelete {
				g.input.SetValue("")
				if km.Type == tea.KeyBackspace || km.Type == tea.KeyDelete {
					g.render()
					return nil
				}
			}
		}
		var cmd tea.Cmd
		g.input, cmd = g.input.Update(km)
		g.render()
		return cmd
	}
	n := len(g.reg.Groups())
	g.follow = true
	g.notice = ""
	// The cursor is over the groups, the window over the panel's lines:
	// down past the last group and the pages scroll the comparison below.
	switch {
	case key.Matches(km, g.keys.Down) && g.cursor == n-1:
		g.offset++
		g.follow = false
	case key.Matches(km, g.keys.Top):
		g.cursor, g.offset = 0, 0
	case !matchesAny(km, g.keys.PageUp, g.keys.PageDown) && g.moveKey(g.keys, km, n, 1):
	case key.Matches(km, g.keys.PageUp):
		g.offset -= max(g.height-2, 1)
		g.follow = false
	case key.Matches(km, g.keys.PageDown):
		g.offset += max(g.height-2, 1)
		g.follow = false
	case key.Matches(km, g.keys.Toggle), key.Matches(km, g.keys.Expand):
		if g.cursor >= 0 && g.cursor < n {
			g.preview = g.preview.Toggle(g.reg.Groups()[g.cursor].Group)
		}
	default:
		return nil
	}
	g.cursor = clamp(g.cursor, 0, n-1)
	g.render()
	return nil
}

// scroll moves the content by n lines (mouse wheel).
func (g *groupsPanel) scroll(n int) {
	g.offset += n
	g.follow = false
	g.render()
}

// click selects the group at content line y.
func (g *groupsPanel) click(y int) {
	if i := g.rowAt(y, 2+g.lead, len(g.reg.Groups())); i >= 0 {
		g.cursor = i
		g.follow = true
		g.render()
	}
}

func (g *groupsPanel) countsFor(rep *whatif.Report, grp groups.Group) (captured, kept int, ok bool) {
	if rep == nil {
		return 0, 0, false
	}
	for _, c := range rep.PerGroup {
		if c.Group == grp {
			return c.Captured, c.Kept, true
		}
	}
	return 0, 0, false
}

// listLines renders the group checklist, width w.
func (g *groupsPanel) listLines(w int) []string {
	nameW := 17
	for _, gi := range g.reg.Groups() {
		nameW = max(nameW, len(gi.Name)+1)
	}
	row := func(gut, box, name, capd, cur, prev, note string) string {
		return clip(gut+box+" "+fit(name, nameW)+fitRight(capd, 9)+fitRight(cur, 9)+fitRight(prev, 9)+" "+note, w)
	}
	lines := []string{g.st.Panel.Column.Render(row(" ", "   ", "group", "captured", "current", "preview", ""))}
	var captured groups.Set
	haveCap := g.prevRep != nil
	if haveCap {
		captured = g.prevRep.Input.Captured
	}
	for i, gi := range g.reg.Groups() {
		grp := gi.Group
		gut := " "
		if i == g.cursor {
			gut = "›"
		}
		box := "[ ]"
		if g.preview.Has(grp) {
			box = g.st.Groups.On.Render("[x]")
		}
		name := gi.Name
		if g.preview.Has(grp) != g.current.Has(grp) {
			name = g.st.Groups.Changed.Render(name + "*")
		}
		capd, cur, prev := "…", "", ""
		if c, _, ok := g.countsFor(g.prevRep, grp); ok {
			capd = fmt.Sprint(c)
		}
		if g.current.Has(grp) {
			if _, k, ok := g.countsFor(g.curRep, grp); ok {
				cur = fmt.Sprint(k)
			} else {
				cur = "…"
			}
		} else {
			cur = "–"
		}
		if g.preview.Has(grp) {
			if _, k, ok := g.countsFor(g.prevRep, grp); ok {
				prev = fmt.Sprint(k)
			} else {
				prev = "…"
			}
		} else {
			prev = "–"
		}
		note := ""
		switch {
		case !gi.EmitsSpans && g.metricPoints(grp) > 0:
			note = g.st.Groups.Note.Render(metricNote(g.metricPoints(grp)))
		case !gi.EmitsSpans:
			note = g.st.Groups.Note.Render("emits no spans")
		case haveCap && !captured.Has(grp):
			note = g.st.Groups.Note.Render("not captured")
		}
		line := row(gut, box, name, capd, cur, prev, note)
		if i == g.cursor {
			line = g.st.List.Selected.Render(fit(line, w))
		}
		lines = append(lines, line)
	}
	// The spans no group of the spec gates, kept under every spec: the
	// aiohttp instrumentation's (NeMo-RL turns it on) and those no rule
	// matches. Each with spans has its row, so the rows add up to the
	// capture.
	for _, grp := range []groups.Group{groups.Ungated, groups.Unclassified} {
		c, _, _ := g.countsFor(g.prevRep, grp)
		if c == 0 {
			continue
		}
		cur := "…"
		if _, k, ok := g.countsFor(g.curRep, grp); ok {
			cur = fmt.Sprint(k)
		}
		_, k, _ := g.countsFor(g.prevRep, grp)
		lines = append(lines, row(" ", "   ", g.reg.Name(grp), fmt.Sprint(c), cur, fmt.Sprint(k), g.st.Groups.Note.Render("always kept")))
	}
	return lines
}

// metricPoints returns the points captured of the metric grp gates, as the
// preview or else the current report saw them (a report holds them only for
// groups of its spec); 0 when neither did.
func (g *groupsPanel) metricPoints(grp groups.Group) int64 {
	for _, r := range []*whatif.Report{g.prevRep, g.curRep} {
		if r != nil && r.MetricsSeen[grp] > 0 {
			return r.MetricsSeen[grp]
		}
	}
	return 0
}

// metricNote is a span-less group's note when its metric was captured.
func metricNote(points int64) string { return "metric · " + fmtCount(points) + " pts" }

// compareLines renders the current-versus-preview comparison, width w.
func (g *groupsPanel) compareLines(w int) []string {
	labelW := 16
	colW := max((w-labelW)/2, 8)
	row := func(label, a, b string) string {
		return clip(fit(label, labelW-1)+" "+fit(a, colW-1)+" "+fit(b, colW-1), w)
	}
	cur, prev := g.curRep, g.prevRep
	val := func(r *whatif.Report, f func(*whatif.Report) string) string {
		if r == nil {
			return "…"
		}
		return f(r)
	}
	both := func(label string, f func(*whatif.Report) string) string {
		return row(label, val(cur, f), val(prev, f))
	}
	n := projections[g.proj]
	specRows := []string{row("spec", g.currentSpec, g.reg.Spec(g.preview))}
	if ansi.StringWidth(g.currentSpec) > colW-1 || ansi.StringWidth(g.reg.Spec(g.preview)) > colW-1 {
		// A spec is what gets copied out: never cut it, give it the width.
		specRows = nil
		for _, l := range wrap("current spec "+g.currentSpec, w) {
			specRows = append(specRows, l)
		}
		for _, l := range wrap("preview spec "+g.reg.Spec(g.preview), w) {
			specRows = append(specRows, l)
		}
	}
	lines := append([]string{g.st.Panel.Column.Render(row("", "current", "preview"))}, specRows...)
	lines = append(lines, []string{
		both("spans", func(r *whatif.Report) string {
			return fmt.Sprintf("%s (-%s)", fmtCount(int64(r.Result.Spans)), fmtCount(int64(r.Result.Dropped)))
		}),
		both("p50/p99/max", func(r *whatif.Report) string {
			return fmt.Sprintf("%d / %d / %d", r.Result.P50, r.Result.P99, r.Result.Max)
		}),
		// The traces each spec would send, which a break or job off makes
		// more than the trace ids captured (the header's).
		both("traces sent", func(r *whatif.Report) string { return fmtCount(int64(r.Result.Traces)) }),
		both("largest trace", func(r *whatif.Report) string { return fmtCount(int64(r.Result.LargestTrace)) + " spans" }),
		both("bytes", func(r *whatif.Report) string { return fmtBytes(r.Result.Bytes) }),
		both("rate", func(r *whatif.Report) string {
			return fmtRate(r.Result.SpansPerSecond) + "/s " + fmtBytes(int64(r.Result.BytesPerSecond)) + "/s"
		}),
		both("× "+fmtCount(int64(n))+" rollouts", func(r *whatif.Report) string {
			s, b := r.Project(n)
			return fmtCount(int64(s)) + " · " + fmtBytes(b)
		}),
	}...)
	lines = append(lines, g.joinRows(row, colW-1)...)
	if b := g.budget; b != nil {
		lines = append(lines, g.budgetRows(*b, row, w, colW)...)
	}
	var texts []string
	breaks, leaks := splitHops(captureHops(g.check))
	if len(breaks) > 1 {
		// The list may run past the panel's foot: say how long it is.
		texts = append(texts, fmt.Sprintf("%d hops broken in the capture (pgdn for all):", len(breaks)))
	}
	for _, h := range breaks {
		texts = append(texts, captureLine(h, w-2))
	}
	var notes []string
	if v := g.verdict(prev); v.LowerBound() {
		// The CLI's words: what the preview cannot count.
		note := "note: " + whatif.LowerBoundNote + ":"
		for _, gap := range v.Gaps {
			note += " " + trimGym(gap.String(g.reg)) + ";"
		}
		notes = append(notes, strings.TrimSuffix(note, ";"))
	}
	for _, h := range leaks {
		notes = append(notes, captureLine(h, w-2))
	}
	for _, side := range []struct {
		name string
		rep  *whatif.Report
	}{{"current", cur}, {"preview", prev}} {
		for _, b := range g.breakSums(side.rep) {
			texts = append(texts, breakLine(side.name, b))
		}
	}
	for _, text := range texts {
		for k, l := range wrap(text, w-2) {
			if k > 0 {
				l = "  " + l
			}
			lines = append(lines, g.st.Join.Split.Render(l))
		}
	}
	for _, text := range notes {
		for k, l := range wrap(text, w-2) {
			if k > 0 {
				l = "  " + l
			}
			lines = append(lines, g.st.Groups.Note.Render(l))
		}
	}
	// Why a spec cannot join at all, as check prints it.
	cw, pw := whatif.SpecWarning(g.current), whatif.SpecWarning(g.preview)
	for _, n := range []struct{ side, text string }{{"current", cw}, {"preview", pw}} {
		if n.text == "" || (n.side == "preview" && pw == cw) {
			continue
		}
		for _, l := range wrap("note: "+n.side+" "+n.text, w) {
			lines = append(lines, g.st.Groups.Note.Render(l))
		}
	}
	if prev != nil {
		if names := groupNames(g.reg, prev.NotInCapture); names != "" {
			for _, l := range wrap("not in capture, cannot preview: "+names, w) {
				lines = append(lines, g.st.Groups.Note.Render(l))
			}
		}
		var silent []groups.Group
		for _, grp := range prev.NoSpans {
			if n := prev.MetricsSeen[grp]; n > 0 {
				text := fmt.Sprintf("%s: metric %s, %s points", g.reg.Name(grp), g.reg.Info(grp).Metric, fmtCount(n))
				for _, l := range wrap(text, w) {
					lines = append(lines, g.st.Groups.Note.Render(l))
				}
			} else {
				silent = append(silent, grp)
			}
		}
		if names := groupNames(g.reg, silent); names != "" {
			for _, l := range wrap("emit no spans: "+names, w) {
				lines = append(lines, g.st.Groups.Note.Render(l))
			}
		}
	}
	return lines
}

// summary is the current → preview verdict for a short panel: the
// figures (spans, traces, bytes, the projection), the joining verdict and
// its broken hops.
type summary struct {
	figs  []string
	join  string // the verdict, unwrapped: "joining ✓ intact 6/6 → ✗ 6/6 split"
	hops  []hop
	split bool // the verdict is a split: drawn as one
}

// hop is a broken hop as the summary says it: caller → callee (span), and
// its finding with the likely fix.
type hop struct{ name, why string }

func (g *groupsPanel) summary(w int) summary {
	cur, prev := g.curRep, g.prevRep
	if cur == nil || prev == nil {
		return summary{figs: []string{clip("current → preview: …", w)}}
	}
	n := projections[g.proj]
	cs, cb := cur.Project(n)
	ps, pb := prev.Project(n)
	text := fmt.Sprintf("spans %s→%s · traces sent %s→%s · %s→%s · ×%s %s→%s",
		fmtCount(int64(cur.Result.Spans)), fmtCount(int64(prev.Result.Spans)),
		fmtCount(int64(cur.Result.Traces)), fmtCount(int64(prev.Result.Traces)),
		fmtBytes(cur.Result.Bytes), fmtBytes(prev.Result.Bytes),
		fmtCount(int64(n)), fmtCount(int64(cs))+" "+fmtBytes(cb), fmtCount(int64(ps))+" "+fmtBytes(pb))
	if ansi.StringWidth(text) > w {
		text = fmt.Sprintf("spans %s→%s · traces sent %s→%s · %s→%s · ×%s %s→%s",
			fmtCount(int64(cur.Result.Spans)), fmtCount(int64(prev.Result.Spans)),
			fmtCount(int64(cur.Result.Traces)), fmtCount(int64(prev.Result.Traces)),
			fmtBytes(cur.Result.Bytes), fmtBytes(prev.Result.Bytes),
			fmtCount(int64(n)), fmtCount(int64(cs)), fmtCount(int64(ps)))
	}
	out := summary{figs: wrap(text, w)}
	if b := g.budget; b != nil {
		// The budget's verdicts, as the side-by-side rows say them.
		vc, vp := b.Judge(cur, g.rate), b.Judge(prev, g.rate)
		line := "budget " + vp.Against() + ": " + budgetCell(vc) + " → " + budgetCell(vp)
		if budgetCell(vc) == budgetCell(vp) {
			line = "budget " + vp.Against() + ": " + budgetCell(vp) + " (both)"
		}
		st := g.st.Join.Joined
		if !vp.Fits {
			st = g.st.Join.Split
		}
		out.figs = append(out.figs, styled(wrap(line, w), st)...)
	}
	out.join = "joining " + g.joinText(cur) + " → " + g.joinText(prev)
	if g.joinText(cur) == g.joinText(prev) {
		out.join = "joining " + g.joinText(prev) + " (both)"
	}
	if t := g.capturedText(); t != "" {
		out.join += " · as captured: " + t
		out.split = whatif.Captured(g.check, g.curRep).Split > 0
	}
	side := prev
	if _, split, _ := g.joinCounts(prev); split == 0 {
		side = cur
	}
	ch, _ := splitHops(captureHops(g.check))
	for _, h := range ch {
		out.hops = append(out.hops, hop{"in capture " + hopName(h.from, h.to, h.span), trimGym(h.short)})
	}
	for _, b := range g.breakSums(side) {
		why := b.reason
		if fix := b.cause.Fix(); fix != "" {
			why += "; fix: " + fix
		}
		out.hops = append(out.hops, hop{hopName(b.from, b.to, b.span), why})
	}
	_, split, _ := g.joinCounts(side)
	out.split = out.split || split > 0
	return out
}

// lines renders the summary in at most room lines for the verdict and its
// hops (the figures come on top). Hops of one cause (a group off) share
// its sentence and fix: said once, then each hop named on a line of its
// own. Where that does not fit, as many hops as fit are said whole, and
// where to see all of them is said.
func (s summary) lines(st *Styles, w, room int, where string) []string {
	var verdict []string
	whole := func(h hop) []string {
		ls := wrap(glyphSplit+" "+h.name+": "+h.why, w-1)
		for i := range ls {
			if i == 0 {
				ls[i] = " " + ls[i]
			} else {
				ls[i] = "   " + ls[i]
			}
		}
		return ls
	}
	var whys []string
	byWhy := map[string][]string{}
	for _, h := range s.hops {
		if _, ok := byWhy[h.why]; !ok {
			whys = append(whys, h.why)
		}
		byWhy[h.why] = append(byWhy[h.why], h.name)
	}
	switch n := len(s.hops); {
	case n == 0:
		verdict = wrap(s.join, w)
	case n == 1:
		verdict = wrap(s.join+": "+s.hops[0].name+": "+s.hops[0].why, w)
	default:
		head := s.join + " · " + countNoun(n, "broken hop") + ":"
		if len(whys) == 1 {
			head = s.join + " · " + countNoun(n, "hop") + ", " + whys[0] + ":"
		}
		verdict = wrap(head, w)
		for _, why := range whys {
			if len(whys) > 1 {
				for _, l := range wrap(why+":", w-1) {
					verdict = append(verdict, " "+l)
				}
			}
			for _, name := range byWhy[why] {
				verdict = append(verdict, clip(" "+glyphSplit+" "+name, w))
			}
		}
		if len(verdict) <= room {
			break
		}
		// Short of room: the count and where to see all, then the hops
		// whole, as many as fit (at least the first, cut to a line).
		verdict = wrap(s.join+" · "+countNoun(n, "broken hop")+" (all: "+where+"):", w)
		if len(verdict)+len(whole(s.hops[0])) > room && len(verdict)+len(whole(s.hops[0])) <= room+len(s.figs) {
			// The verdict and its first hop whole come before the
			// figures, which the focused panel shows.
			room += len(s.figs)
			s.figs = nil
		}
		for i, h := range s.hops {
			ls := whole(h)
			if len(verdict)+len(ls) > room {
				if i == 0 {
					verdict = append(verdict, clip(ls[0], w))
				}
				break
			}
			verdict = append(verdict, ls...)
		}
	}
	out := append([]string(nil), s.figs...)
	for _, l := range verdict {
		if s.split {
			l = st.Join.Split.Render(l)
		}
		out = append(out, l)
	}
	return out
}

// wantLines is how many lines the panel has to show when narrow and not
// focused: the title, the verdict with every hop, the checkboxes. The root
// gives the room it does not need to the other panels.
func (g *groupsPanel) wantLines(w int) int {
	return 1 + len(g.summary(w).lines(g.st, w, 1<<20, "")) + len(g.checklist(w))
}

// checklist is the groups as one run of checkboxes, wrapped: what an
// unfocused narrow panel shows of the list, so the groups are on the
// first screen without a row each.
func (g *groupsPanel) checklist(w int) []string {
	var lines []string
	line, lineW := "", 0
	for _, gi := range g.reg.Groups() {
		if !gi.EmitsSpans && !g.preview.Has(gi.Group) && !g.current.Has(gi.Group) {
			continue // never emits, never set: noise in a short panel
		}
		box, name := "[ ]", gi.Name
		if g.preview.Has(gi.Group) {
			box = g.st.Groups.On.Render("[x]")
		}
		if g.preview.Has(gi.Group) != g.current.Has(gi.Group) {
			name = g.st.Groups.Changed.Render(name + "*")
		}
		item := box + " " + name
		iw := ansi.StringWidth(item)
		if lineW > 0 && lineW+2+iw > w {
			lines = append(lines, line)
			line, lineW = "", 0
		}
		if lineW > 0 {
			line += "  "
			lineW += 2
		}
		line += item
		lineW += iw
	}
	if lineW > 0 {
		lines = append(lines, line)
	}
	for i := range lines {
		lines[i] = clip(lines[i], w)
	}
	return lines
}

// copyWarning says what copying the previewed spec out would break, as
// the joining verdict on screen says it, or "" when its rollouts join (or
// the preview is not computed yet for this spec).
// short is the count alone, for the status line; long adds the cause,
// for the file and the exit text.
func (g *groupsPanel) copyWarning() (short, long string) {
	r := g.prevRep
	if r == nil || r.Spec != g.preview {
		return "", ""
	}
	joined, split, pending := g.joinCounts(r)
	// Only the spec's own breaks count: a rollout split in the capture
	// itself is no reason to hold back a spec that would join it.
	why := whatif.SpecWarning(g.preview)
	if bs := g.breakSums(r); why == "" && len(bs) > 0 {
		why = hopText(bs[0].from, bs[0].to, bs[0].span, bs[0].reason)
	}
	if split == 0 || why == "" {
		return "", ""
	}
	short = fmt.Sprintf("this spec splits %d of %d rollouts", split, joined+split+pending)
	return short, short + ": " + why
}

// joinText is joinCell without styling, for running text.
func (g *groupsPanel) joinText(r *whatif.Report) string { return g.verdict(r).String() }

// capturedText is the capture's own join as check says it, when it reads
// otherwise than the current spec's prediction (a capture split by a
// process with server off that the spec has on), else "": a prediction
// alone would call a broken capture intact.
func (g *groupsPanel) capturedText() string {
	if g.check == nil || g.curRep == nil {
		return ""
	}
	if t := whatif.Captured(g.check, g.curRep).String(); t != g.joinText(g.curRep) {
		return t
	}
	return ""
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func groupNames(reg *groups.Registry, gs []groups.Group) string {
	var names []string
	for _, g := range gs {
		names = append(names, reg.Name(g))
	}
	return strings.Join(names, ", ")
}

// joinRows is the joining row of the comparison, a verdict too long for
// its column carried on to the next row rather than cut.
func (g *groupsPanel) joinRows(row func(label, a, b string) string, colW int) []string {
	cell := func(r *whatif.Report) []string {
		if r == nil {
			return []string{"…"}
		}
		st := g.st.Join.Joined
		if joined, split, pending := g.joinCounts(r); split > 0 {
			st = g.st.Join.Split
		} else if joined+pending == 0 {
			st = g.st.List.Dim
		}
		return styled(wrap(g.joinText(r), colW), st)
	}
	rows := wrapRows(row, "joining", cell(g.curRep), cell(g.prevRep))
	if t := g.capturedText(); t != "" {
		st := g.st.Join.Joined
		if whatif.Captured(g.check, g.curRep).Split > 0 {
			st = g.st.Join.Split
		}
		rows = append(rows, row("as captured", st.Render(t), ""))
	}
	return rows
}

// budgetRows are the budget, on a line of its own, then each spec's
// verdict in its column in the budget's unit: the two fit their columns
// on one line at 120 columns, where with the budget said in each they
// went on to a second.
func (g *groupsPanel) budgetRows(b whatif.Budget, row func(label, a, b string) string, w, colW int) []string {
	var against string
	cell := func(r *whatif.Report) []string {
		if r == nil {
			return []string{"…"}
		}
		v := b.Judge(r, g.rate)
		against = v.Against()
		st := g.st.Join.Joined
		if !v.Fits {
			st = g.st.Join.Split
		}
		return styled(wrap(budgetCell(v), colW-1), st)
	}
	a, p := cell(g.curRep), cell(g.prevRep)
	if against == "" {
		against = b.String()
	}
	return append([]string{clip(fit("budget", 15)+" "+against, w)}, wrapRows(row, "", a, p)...)
}

// styled renders each line in st.
func styled(ls []string, st lipgloss.Style) []string {
	for i := range ls {
		ls[i] = st.Render(ls[i])
	}
	return ls
}

// wrapRows lays two wrapped cells side by side under one label.
func wrapRows(row func(label, a, b string) string, label string, a, b []string) []string {
	var out []string
	for i := 0; i < max(len(a), len(b)); i++ {
		l, x, y := "", "", ""
		if i == 0 {
			l = label
		}
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		out = append(out, row(l, x, y))
	}
	return out
}

// breakSum is one broken hop with the rollouts it breaks and the spans cut
// there, as gate sums them for every view.
type breakSum struct {
	from, to, span, reason string
	cause                  whatif.Cause
	short                  string // the cause in a few words
	rollouts, spans        int
}

// newBreakSum is gate's sum of one hop in the panels' terms.
func newBreakSum(b whatif.BreakSum) breakSum {
	return breakSum{from: b.FromService, to: b.ToService, span: b.SpanName, reason: b.Reason, cause: b.Cause, short: b.Short(), rollouts: b.Rollouts, spans: b.Spans}
}

// aggregateBreaks is gate's break summary in the panel's terms.
func aggregateBreaks(r *whatif.Report, pending []string) []breakSum {
	var out []breakSum
	for _, b := range r.BreakSummary(pending) {
		out = append(out, newBreakSum(b))
	}
	return out
}

// render caches the panel text.
func (g *groupsPanel) render() {
	if g.width <= 0 || g.height <= 0 {
		g.out = ""
		return
	}
	head := []string{""} // the title, once what is hidden is known
	var foot []string
	if g.inputting {
		foot = append(foot, clip(g.input.View(), g.width))
		if g.inputErr != "" {
			for _, l := range wrap(g.inputErr, g.width) {
				foot = append(foot, g.st.Input.Error.Render(l))
			}
		}
		if len(foot) > g.height-2 {
			foot = foot[:max(g.height-2, 1)]
		}
	} else if g.notice != "" && g.height > 3 {
		foot = append(foot, g.st.Input.Error.Render(clip(g.notice, g.width)))
	}
	body := g.height - len(head) - len(foot)
	var lines []string
	lead := 0 // lines above the group list
	// The list is 64 cells, wider only when a metric note needs the room
	// ("metric · 999.9k pts" is longer than "emits no spans").
	listW := 64
	for _, gi := range g.reg.Groups() {
		if n := g.metricPoints(gi.Group); n > 0 && !gi.EmitsSpans {
			listW = max(listW, 64-ansi.StringWidth("emits no spans")+ansi.StringWidth(metricNote(n)))
		}
	}
	listEnd := 0 // the group list's lines, from lead; 0 when not shown
	if g.width >= listW+40 {
		left := g.listLines(listW)
		listEnd = len(left)
		right := g.compareLines(g.width - listW - 2)
		for i := 0; i < max(len(left), len(right)); i++ {
			l, r := "", ""
			if i < len(left) {
				l = left[i]
			}
			if i < len(right) {
				r = right[i]
			}
			lines = append(lines, fit(l, listW)+"  "+r)
		}
	} else if !g.focused {
		// Narrow and not focused: the verdict, as many of its broken hops
		// as fit, and the groups as one run of checkboxes.
		sum := g.summary(g.width)
		check := g.checklist(g.width)
		room := body - len(sum.figs) - len(check)
		lines = append(sum.lines(g.st, g.width, room, "tab, then pgdn"), check...)
		g.offset = 0
	} else {
		// Too narrow for side by side: the verdict goes first, so a toggle's
		// effect is visible without scrolling past every group; all of its
		// hops are listed below the comparison.
		lines = g.summary(g.width).lines(g.st, g.width, 5, "pgdn")
		lead = len(lines)
		list := g.listLines(g.width)
		listEnd = len(list)
		lines = append(lines, list...)
		lines = append(lines, "")
		lines = append(lines, g.compareLines(g.width)...)
	}
	g.lead = lead
	// Keep the cursor's group (line lead+cursor+1) visible, then apply
	// scrolling. On the last group the rows after it, which no cursor
	// selects (aiohttp, unclassified), come into view with it.
	g.offset = clamp(g.offset, 0, max(len(lines)-body, 0))
	c, last := lead+g.cursor+1, lead+g.cursor+1
	if g.cursor == len(g.reg.Groups())-1 && listEnd > 0 {
		last = max(c, min(lead+listEnd-1, c+body-1))
	}
	if g.follow && c < g.offset {
		g.offset = c
	} else if g.follow && last >= g.offset+body && body > 0 {
		g.offset = last - body + 1
	}
	// The title says the spec, whether it changed, and which lines show
	// when not all fit, as the other panels do.
	parts := []titlePart{{"preview " + g.reg.Spec(g.preview), 0}}
	if g.where != "" && g.prevRep != nil {
		parts = append(parts, titlePart{fmt.Sprintf("over %s /%s", countNoun(g.prevRep.Input.Rollouts, "rollout"), g.where), 0})
	}
	if g.preview != g.current {
		parts = append(parts, titlePart{"changed, y copies", 2})
	}
	if n := len(lines); n > body && body > 0 {
		parts = append(parts, titlePart{fmt.Sprintf("%d–%d of %d", g.offset+1, min(g.offset+body, n), n), 1})
	}
	head[0] = g.st.Panel.Title.Render(fitTitle(g.width, "Span groups", parts))
	if g.offset < len(lines) {
		lines = lines[g.offset:]
	}
	out := append(head, padLinesSlice(lines, max(body, 0))...)
	out = append(out, foot...)
	g.out = padLines(out, g.height)
}

func (g *groupsPanel) slot() slot      { return slotGroups }
func (g *groupsPanel) name() string    { return "span groups" }
func (g *groupsPanel) view() string    { return g.out }
func (g *groupsPanel) capturing() bool { return g.inputting }

func (g *groupsPanel) help() []key.Binding {
	k := g.keys
	return []key.Binding{k.Toggle, k.Default.Binding, k.PerRoll.Binding, k.All.Binding, k.Spec, k.More, k.Fewer, k.Copy, k.Up, k.Down, k.PageUp, k.PageDown}
}

// handle takes the panel's own keys while it has focus: movement and
// toggling, or every key while the spec input is open.
func (g *groupsPanel) handle(km tea.KeyMsg, _ *env) (bool, tea.Cmd) {
	k := g.keys
	if !g.inputting && !matchesAny(km, k.Up, k.Down, k.Top, k.Bottom, k.PageUp, k.PageDown, k.Toggle, k.Expand) {
		return false, nil
	}
	return true, g.key(km)
}

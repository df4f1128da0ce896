package tui

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/nemo-gym/gymtrace/gate/evidence"
	"github.com/nemo-gym/gymtrace/gate/whatif"
)

// The screen: panel boxes from the window size, the header, the footer
// and View, which only joins cached renders.

// headerLines and footerLines are the rows outside the panels.
const (
	headerLines = 2
	footerLines = 1
	wideWidth   = 100 // from here the list and the waterfall sit side by side
	wideList    = 160 // from here the list widens to what it shows
)

// layout computes every panel's box from the window size and the styles'
// frame sizes, and hands each panel its content size.
func (m *Model) layout() {
	avail := m.height - headerLines - footerLines
	if m.width < 30 || avail < 3*m.frameH+3 {
		return
	}
	if wide := m.width >= wideList; wide != m.rollouts.wide {
		m.rollouts.wide = wide
		m.rollouts.measure()
	}
	roomy := m.roomy()
	m.roomyAt = roomy
	if m.width >= wideWidth {
		top := max(avail*55/100, m.frameH+4)
		if roomy {
			// The span groups keep their title, columns and a few rows.
			top = max(top, avail-m.frameH-5)
		}
		left := max(m.width*2/5, 42) // the verdict columns whole, as when the waterfall is focused
		m.listWant = m.rollouts.wantW
		if m.width >= wideList {
			// Room to spare: the list takes what its ids and services need,
			// up to half the width; the waterfall keeps the other half.
			left = clamp(m.listWant+m.frameW, left, m.width/2)
		}
		m.listEv = m.rollouts.evCols()
		if m.listEv > 0 {
			// Gym's outcomes take their columns beside the verdicts.
			left = clamp(m.rollouts.evidenceWant()+m.frameW, left, m.width/2)
		}
		if m.focus == slotTrace {
			// The waterfall has the keyboard: it gets the width, the list
			// keeps its verdict columns.
			left = max(m.width/3, 42)
		}
		m.rects[slotRollouts] = rect{0, headerLines, left, top}
		m.rects[slotTrace] = rect{left, headerLines, m.width - left, top}
		m.rects[slotGroups] = rect{0, headerLines + top, m.width, avail - top}
	} else {
		y := headerLines
		m.groupsWant = m.groups.wantLines(m.width - m.frameW)
		hs := stackHeights(avail, m.focus, m.frameH, m.groupsWant)
		if roomy && avail >= 3*m.frameH+8 {
			// The panels not focused keep their titles: the list's says
			// its filter, the span groups' the spec previewed.
			hs = [numSlots]int{slotRollouts: 1 + m.frameH, slotGroups: 1 + m.frameH}
			hs[slotTrace] = avail - hs[slotRollouts] - hs[slotGroups]
		}
		for s, h := range hs {
			m.rects[s] = rect{0, y, m.width, h}
			y += h
		}
	}
	// An empty live list too narrow for its how-to hands it to the waterfall.
	m.trace.hint = nil
	if hint := emptyLive(m.opts.Addrs); m.opts.Live && len(hint) > 1 && hintWidth(hint)+2 > m.rects[slotRollouts].w-m.frameW {
		m.trace.hint = hint
	}
	for _, p := range m.panels {
		r := m.rects[p.slot()]
		p.setSize(r.w-m.frameW, r.h-m.frameH)
	}
	m.help.Width = m.width
	m.helpView.resize(m.width, avail)
	if m.showHelp {
		m.helpView.setLines(m.helpLines())
	}
	m.renderHeader()
}

// roomy reports a focused view over the waterfall that wants the screen's
// height (the cohort's rows and the detail of one).
func (m *Model) roomy() bool {
	if m.focus != slotTrace {
		return false
	}
	r, ok := m.front(slotTrace).(interface{ wantsRoom() bool })
	return ok && r.wantsRoom()
}

// stackHeights shares avail rows between the stacked panels (frames
// included). Each panel not focused keeps what it needs to say something:
// the waterfall its title and a span (only the title on a short screen),
// the list its title, column header and a row, the groups their figures,
// verdict and checkboxes. The focused panel gets its share of the rest, and
// what is left goes mostly to the span groups: the what-if answer.
//
// groupsWant caps the span groups when not focused: what they would leave
// blank goes to the other panel not focused.
func stackHeights(avail int, focus slot, frameH, groupsWant int) [numSlots]int {
	need := [numSlots]int{slotRollouts: 3, slotTrace: 2, slotGroups: 5}
	if avail < 26 {
		need[slotTrace] = 1
	}
	share := [numSlots]int{slotRollouts: 45, slotTrace: 55, slotGroups: 60} // percent, when focused
	weight := [numSlots]int{slotRollouts: 2, slotTrace: 1, slotGroups: 3}   // of what is left
	if focus == slotTrace {
		// The list picks what the waterfall shows: it keeps rows to pick from.
		share[slotTrace], weight[slotRollouts] = 50, 3
	}
	var h [numSlots]int
	rest := avail
	for s := range h {
		if slot(s) != focus {
			h[s] = need[s] + frameH
			rest -= h[s]
		}
	}
	if rest < frameH+3 {
		// Too short for that: the focused panel half, the others a quarter.
		for s := range h {
			h[s] = avail / 4
		}
		h[focus] = avail - 2*(avail/4)
		return h
	}
	h[focus] = min(rest, max(avail*share[focus]/100, frameH+3))
	extra := rest - h[focus]
	// The heavier of the two others first, rounding up.
	var others []slot
	for s := slot(0); s < numSlots; s++ {
		if s != focus {
			others = append(others, s)
		}
	}
	a, b := others[0], others[1]
	if weight[b] > weight[a] {
		a, b = b, a
	}
	give := (extra*weight[a] + weight[a] + weight[b] - 1) / (weight[a] + weight[b])
	h[a] += give
	h[b] += extra - give
	if focus != slotGroups && groupsWant > 0 {
		if spare := h[slotGroups] - max(groupsWant, need[slotGroups]) - frameH; spare > 0 {
			other := slotTrace
			if focus == slotTrace {
				other = slotRollouts
			}
			h[slotGroups] -= spare
			h[other] += spare
		}
	}
	return h
}

// fitPanels lays the screen out again when a panel's want changed: a
// view that wants the height opened or closed (roomy), the
// span groups, narrow and not focused, need another number of lines (a
// verdict gained hops), or the list, wide, longer ids or services.
func (m *Model) fitPanels() {
	switch {
	case m.width <= 0:
	case m.roomy() != m.roomyAt,
		m.width < wideWidth && m.groups.wantLines(m.width-m.frameW) != m.groupsWant,
		m.width >= wideList && m.rollouts.wantW != m.listWant,
		m.width >= wideWidth && m.rollouts.evCols() != m.listEv:
		m.layout()
	}
}

// renderHeader caches the two header lines.
func (m *Model) renderHeader() {
	if m.width <= 0 {
		return
	}
	src := shortTitle(strings.TrimPrefix(m.opts.Title, "gymtrace "))
	if len(m.opts.Addrs) > 0 {
		src = strings.Join(m.opts.Addrs, " ")
		if t := strings.TrimPrefix(m.opts.Title, "gymtrace "); t != "" {
			src = t + " · " + src
		}
	}
	mode := "file"
	if m.opts.Live {
		mode = "live " + fmtRate(m.rate.rate()) + " spans/s"
	}
	// The spec in force and the variant are what the figures mean: the
	// files' directory gives way first, then the variant's reason (cut at
	// the end), then the file names; never the spec or the variant's name.
	tail := " · " + mode + " · current " + m.opts.CurrentSpec
	room := m.width - 9 - ansi.StringWidth(tail)
	name, _, _ := strings.Cut(m.opts.Variant, " (")
	if name != "" {
		room -= 3 + ansi.StringWidth(name)
	}
	if ansi.StringWidth(src) > room {
		src, _, _ = strings.Cut(src, " (in ")
	}
	src = clip(src, max(room, 12))
	if name != "" {
		variant := m.opts.Variant
		if left := m.width - 9 - ansi.StringWidth(src) - ansi.StringWidth(tail) - 3; ansi.StringWidth(variant) > left {
			variant = name // no room for a useful part of the reason
			if left >= ansi.StringWidth(name)+12 {
				variant = clip(m.opts.Variant, left)
			}
		}
		tail += " · " + variant
	}
	l1 := clip(m.st.App.Title.Render("gymtrace")+" "+m.st.App.Header.Render(src)+m.st.App.Dim.Render(tail), m.width)
	var parts []string
	if s := m.snap; s != nil {
		st := s.Stats
		if r := st.Record; r.Failing {
			// First, so a narrow terminal still shows it: nothing new is
			// recorded or shown until the record can be written again.
			parts = append(parts, m.st.App.Error.Render(fmt.Sprintf("record failing: %s, %s spans refused (senders retry)", r.Cause, fmtCount(r.Refused))))
		} else if r.Refused > 0 || r.Failures > 0 {
			parts = append(parts, m.st.App.Error.Render(fmt.Sprintf("record: %s spans refused, %s failed writes (last: %s)", fmtCount(r.Refused), fmtCount(r.Failures), r.Cause)))
		}
		if m.evErr != "" {
			// Early, as a failing record is: the rows shown are the last read.
			parts = append(parts, m.st.App.Error.Render("evidence: "+m.evErr))
		}
		rolls := "rollouts …"
		if m.haveTally {
			rolls = "rollouts " + fmtCount(int64(m.tally.Rollouts))
			if n := m.tally.InFlight; n > 0 {
				rolls += " (" + fmtCount(int64(n)) + " in flight)"
			}
			if m.opts.Live && m.tally.Job == whatif.JobEnded {
				rolls += " · run ended"
			}
		}
		parts = append(parts, "spans "+fmtCount(int64(st.Stored)), rolls)
		if n := len(m.rollouts.leaks); n > 0 {
			// check's context_leak_rollouts: the rollouts the list marks.
			parts = append(parts, m.st.Tree.Leak.Render(fmt.Sprintf("%s context leaks in %s", glyphLeak, countNoun(n, "rollout"))))
		}
		parts = append(parts, "captured trace ids "+fmtCount(int64(st.Traces)))
		if ev := m.rollouts.ev; ev != nil {
			c := ev.Coverage
			text := fmt.Sprintf("evidence %d/%d joined", c.Joined(), c.Rollouts)
			if c.Reason != evidence.NoReason {
				text += ": " + c.Reason.Short()
			}
			if n := ev.Set.BadTotal; n > 0 {
				text += fmt.Sprintf(", %d bad lines", n)
			}
			if c.Joined() == 0 && c.Rollouts > 0 {
				text = m.st.App.Error.Render(text)
			}
			parts = append(parts, text)
		}
		if st.Refused > 0 {
			parts = append(parts, m.st.App.Error.Render("refused "+fmtCount(st.Refused)))
		}
		if st.RequestsRefused > 0 {
			parts = append(parts, m.st.App.Error.Render(fmt.Sprintf("requests refused %s (last: %s)", fmtCount(st.RequestsRefused), st.LastRefusal)))
		}
		if st.EvictedSpans > 0 {
			ev := fmt.Sprintf("evicted %s spans (%s rollouts)", fmtCount(st.EvictedSpans), fmtCount(st.EvictedRollouts))
			if !m.opts.Live {
				// Files are read one after another: a rollout evicted while
				// one file was read may get spans again from the next, and
				// then looks split. The verdicts cannot be trusted whole.
				ev += ": verdicts partial, raise --max-spans"
			}
			parts = append(parts, m.st.App.Error.Render(ev))
		}
		if st.Duplicates > 0 {
			parts = append(parts, "duplicates "+fmtCount(st.Duplicates))
		}
		if st.AttrsDropped > 0 || st.ValuesTruncated > 0 {
			parts = append(parts, fmt.Sprintf("capped %s attrs, %s values", fmtCount(st.AttrsDropped), fmtCount(st.ValuesTruncated)))
		}
		if st.ValuesRepaired > 0 {
			parts = append(parts, "repaired UTF-8 "+fmtCount(st.ValuesRepaired))
		}
		if st.EventsDropped > 0 || st.LinksDropped > 0 || st.NamesTruncated > 0 {
			parts = append(parts, fmt.Sprintf("capped %s events, %s links, %s names", fmtCount(st.EventsDropped), fmtCount(st.LinksDropped), fmtCount(st.NamesTruncated)))
		}
		parts = append(parts, "metric points "+fmtCount(st.MetricPoints), "log records "+fmtCount(st.LogRecords))
		if st.Profiles > 0 {
			parts = append(parts, "profiles "+fmtCount(st.Profiles))
		}
	} else {
		parts = append(parts, "loading…")
	}
	if m.analysing {
		parts = append(parts, m.st.App.Dim.Render("analysing…"))
	}
	l2 := m.st.App.Header.Render(strings.Join(parts, " · "))
	m.header = clip(l1, m.width) + "\n" + clip(l2, m.width)
}

// shortTitle writes a run of file paths in one directory as their names
// and the directory after them, so the names come before a cut:
// "open a/b/driver.log a/b/agent.log" is "open driver.log agent.log (in a/b)".
func shortTitle(title string) string {
	words := strings.Fields(title)
	dir, paths := "", 0
	for _, w := range words {
		if !strings.Contains(w, "/") {
			continue
		}
		d := filepath.Dir(w)
		if paths > 0 && d != dir {
			return title
		}
		dir, paths = d, paths+1
	}
	if paths < 2 {
		return title
	}
	for i, w := range words {
		if strings.Contains(w, "/") {
			words[i] = filepath.Base(w)
		}
	}
	return strings.Join(words, " ") + " (in " + dir + ")"
}

// View draws the screen from cached panel renders; it does no other work.
func (m Model) View() string {
	if m.width == 0 {
		return ""
	}
	avail := m.height - headerLines - footerLines
	if m.width < 30 || avail < 3*m.frameH+3 {
		return clip(fmt.Sprintf("too small: %d×%d, need 30×%d · q quits", m.width, m.height, 3*m.frameH+3+headerLines+footerLines), m.width)
	}
	var body string
	if m.showHelp {
		body = m.helpView.view()
	} else {
		box := func(s slot) string {
			st := m.st.Panel.Box
			if s == m.focus {
				st = m.st.Panel.Focused
			}
			r := m.rects[s]
			return st.Width(r.w - m.frameW).Height(r.h - m.frameH).Render(m.front(s).view())
		}
		roll, tr, gr := box(slotRollouts), box(slotTrace), box(slotGroups)
		if m.width >= wideWidth {
			body = lipgloss.JoinVertical(lipgloss.Left, lipgloss.JoinHorizontal(lipgloss.Top, roll, tr), gr)
		} else {
			body = lipgloss.JoinVertical(lipgloss.Left, roll, tr, gr)
		}
	}
	footer := m.footer()
	if m.status != "" {
		st := m.st.App.Status
		if m.statusErr {
			st = m.st.App.Error
		}
		footer = st.Render(clip(m.status, m.width))
	}
	if m.ask.on {
		footer = m.budgetPromptView()
	}
	return m.header + "\n" + body + "\n" + clip(footer, m.width)
}

// footer is the one-line help: how to get help and leave first, then the
// focused panel's own keys.
func (m *Model) footer() string {
	k := m.keys
	bs := []key.Binding{k.Help, k.Quit}
	if m.showHelp {
		bs = []key.Binding{k.Quit, k.Back}
	} else if p := m.front(m.focus); p != nil {
		if p != m.base(m.focus) {
			bs = append(bs, k.Back)
		}
		bs = append(bs, k.NextPanel)
		for _, b := range p.help() {
			if !k.moves(b) {
				bs = append(bs, b)
			}
		}
	}
	return m.help.ShortHelpView(bs)
}

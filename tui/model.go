package tui

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/nemo-gym/gymtrace/gate"
	"github.com/nemo-gym/gymtrace/model"
)

// Options configure the interface.
type Options struct {
	Source      Source
	Registry    *gate.Registry
	Current     gate.Set // the span_groups setting in force
	CurrentSpec string   // as the user wrote it; Registry.Format(Current) when empty
	Addrs       []string // receiver addresses for the header; empty for files
	Live        bool     // spans may still arrive: fresh rollouts are pending
	Title       string   // file names or a run label for the header
	// SnippetPath is where copy-out writes; SnippetFile in the working
	// directory when empty.
	SnippetPath string
	// Clipboard receives the OSC 52 sequence on copy-out; nil skips it.
	Clipboard *os.File
	// Term is $TERM, to wrap OSC 52 for screen.
	Term string
	// Renderer decides the colour profile; lipgloss's default when nil.
	Renderer *lipgloss.Renderer
	// Now is the clock for the join check's grace window; time.Now when nil.
	Now func() time.Time
}

// focus names the panel that receives keys.
type focus uint8

const (
	focusRollouts focus = iota
	focusTrace
	focusGroups
	numFocus
)

// String names the panel.
func (f focus) String() string {
	switch f {
	case focusTrace:
		return "trace"
	case focusGroups:
		return "groups"
	}
	return "rollouts"
}

// overlay is what the trace slot shows instead of the waterfall.
type overlay uint8

const (
	overlayNone overlay = iota
	overlayDetail
	overlayStats
)

// rect is a panel's box on screen, frame included.
type rect struct{ x, y, w, h int }

func (r rect) contains(x, y int) bool { return x >= r.x && x < r.x+r.w && y >= r.y && y < r.y+r.h }

// Model is the root of the interface. It owns the panels, routes messages to
// them and runs the analysis commands, one at a time per engine.
type Model struct {
	opts Options
	st   *Styles
	keys *KeyMap
	help help.Model
	reg  *gate.Registry
	eng  *gate.Engine // previews and checks; used by one command at a time
	sim  *gate.Engine // per-rollout simulations; likewise

	width, height int
	snap          *model.Snapshot

	rollouts rolloutList
	trace    traceView
	groups   groupsPanel
	detail   detailView
	stats    statsView

	focus    focus
	overlay  overlay
	showHelp bool
	preview  bool // the waterfall shows the previewed spec

	analysing bool
	dirty     bool   // inputs changed while an analysis ran
	curSeq    uint64 // snapshot the current spec's report was computed from
	haveCur   bool
	simming   bool

	rateAccepted int64
	rateAt       time.Time
	rate         float64

	status    string
	statusErr bool
	copied    bool

	refresh time.Duration // throttle between snapshots; tests shorten it

	rects  [numFocus]rect
	header string
	frameW int
	frameH int
}

// New builds the root model.
func New(o Options) Model {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.SnippetPath == "" {
		o.SnippetPath = SnippetFile
	}
	if o.CurrentSpec == "" {
		o.CurrentSpec = o.Registry.Format(o.Current)
	}
	st := DefaultStyles(o.Renderer)
	keys := DefaultKeyMap()
	h := help.New()
	h.Styles.ShortKey = st.App.Help.Bold(true)
	h.Styles.ShortDesc = st.App.Help
	h.Styles.FullKey = st.App.Title
	h.Styles.FullDesc = st.App.Header
	m := Model{
		opts:     o,
		st:       st,
		keys:     keys,
		help:     h,
		reg:      o.Registry,
		eng:      gate.NewEngine(o.Registry),
		sim:      gate.NewEngine(o.Registry),
		rollouts: newRolloutList(st, keys),
		trace:    newTraceView(st, keys, o.Registry),
		groups:   newGroupsPanel(st, keys, o.Registry, o.Current, o.CurrentSpec),
		detail:   newDetailView(st, keys),
		stats:    newStatsView(st, keys, o.Registry),
		refresh:  refreshEvery,
	}
	m.frameW, m.frameH = st.Panel.Box.GetFrameSize()
	m.trace = m.trace.SetPreview(false, o.Current)
	m.renderHeader()
	return m
}

// Init delivers the first snapshot at once; later ones follow changes.
func (m Model) Init() tea.Cmd {
	src := m.opts.Source
	cmds := []tea.Cmd{func() tea.Msg { return snapshotMsg{snap: src.Snapshot()} }}
	if m.opts.Live {
		cmds = append(cmds, tickClock())
	}
	return tea.Batch(cmds...)
}

// Snippet is what runUI prints after the program ends: the copy-out text
// when the user copied or changed the spec, else "".
func (m Model) Snippet() string {
	if !m.copied && m.groups.Preview() == m.opts.Current {
		return ""
	}
	return Snippet(m.reg, m.groups.Preview(), false)
}

// Update routes a message: global keys, then window size, then data
// messages, then keys for the focused panel.
func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.KeyMsg:
		return m.updateKey(msg)
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.layout()
		return m, nil
	case tea.MouseMsg:
		return m.updateMouse(msg)
	case snapshotMsg:
		return m.setSnapshot(msg.snap)
	case refreshMsg:
		return m, waitForChange(m.opts.Source)
	case clockMsg:
		return m, tea.Batch(m.requestAnalysis(), tickClock())
	case analysisMsg:
		return m.setAnalysis(msg)
	case simMsg:
		m.simming = false
		m.trace = m.trace.SetSim(msg)
		if m.overlay == overlayStats {
			m.stats = m.stats.SetRollout(m.snap, m.trace.Rollout(), m.trace.simAll)
		}
		return m, m.requestSim()
	case openDetailMsg:
		m.openDetail()
		return m, nil
	case copiedMsg:
		m.copied = true
		switch {
		case msg.errText != "":
			m.status, m.statusErr = msg.errText, true
		default:
			m.status, m.statusErr = "copied "+gate.EnvLine(m.reg.Spec(m.groups.Preview()))+" · wrote "+msg.path, false
			if msg.clip {
				m.status += " · clipboard (OSC 52)"
			}
		}
		return m, nil
	}
	return m, nil
}

func (m Model) updateKey(km tea.KeyMsg) (tea.Model, tea.Cmd) {
	m.status, m.statusErr = "", false
	if km.Type == tea.KeyCtrlC {
		return m, tea.Quit
	}
	// An open input owns every other key.
	if m.rollouts.Filtering() {
		var cmd tea.Cmd
		m.rollouts, cmd = m.rollouts.Update(km)
		return m, tea.Batch(cmd, m.afterChange())
	}
	if m.groups.Inputting() {
		var cmd tea.Cmd
		m.groups, cmd = m.groups.Update(km)
		return m, tea.Batch(cmd, m.afterChange())
	}
	// Keys typed faster than the terminal is read arrive as one message with
	// several runes; outside an input each rune is its own command.
	if km.Type == tea.KeyRunes && len(km.Runes) > 1 && !km.Paste {
		var cmds []tea.Cmd
		var next tea.Model = m
		for _, r := range km.Runes {
			var cmd tea.Cmd
			next, cmd = next.(Model).updateKey(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}})
			cmds = append(cmds, cmd)
		}
		return next, tea.Batch(cmds...)
	}
	k := m.keys
	switch {
	case key.Matches(km, k.Quit):
		return m, tea.Quit
	case key.Matches(km, k.Help):
		m.showHelp = !m.showHelp
		return m, nil
	case m.showHelp && key.Matches(km, k.Back):
		m.showHelp = false
		return m, nil
	case key.Matches(km, k.NextPanel):
		m.setFocus((m.focus + 1) % numFocus)
		return m, nil
	case key.Matches(km, k.PrevPanel):
		m.setFocus((m.focus + numFocus - 1) % numFocus)
		return m, nil
	case key.Matches(km, k.Back) && m.overlay != overlayNone:
		m.overlay = overlayNone
		return m, nil
	case key.Matches(km, k.Filter):
		m.setFocus(focusRollouts)
		var cmd tea.Cmd
		m.rollouts, cmd = m.rollouts.StartFilter()
		return m, cmd
	case key.Matches(km, k.Spec):
		m.setFocus(focusGroups)
		var cmd tea.Cmd
		m.groups, cmd = m.groups.StartInput()
		return m, cmd
	case key.Matches(km, k.Sort):
		m.rollouts = m.rollouts.CycleSort()
		return m, m.afterChange()
	case key.Matches(km, k.Preview):
		m.preview = !m.preview
		m.trace = m.trace.SetPreview(m.preview, m.groups.Preview())
		return m, m.afterChange()
	case key.Matches(km, k.Stats):
		if m.overlay == overlayStats {
			m.overlay = overlayNone
			return m, nil
		}
		m.overlay = overlayStats
		m.stats = m.stats.SetRollout(m.snap, m.trace.Rollout(), m.trace.simAll)
		m.setFocus(focusTrace)
		return m, nil
	case key.Matches(km, k.Copy):
		return m, copySnippet(Snippet(m.reg, m.groups.Preview(), true), m.opts.SnippetPath, m.opts.Clipboard, m.opts.Term)
	case key.Matches(km, k.Default), key.Matches(km, k.PerRoll), key.Matches(km, k.All):
		name := map[string]string{"1": "default", "2": "per_rollout", "3": "all"}[km.String()]
		if set, ok := m.reg.PresetSet(name); ok {
			m.groups = m.groups.SetPreview(set)
		}
		return m, m.afterChange()
	case key.Matches(km, k.More):
		m.groups = m.groups.Project(1)
		return m, nil
	case key.Matches(km, k.Fewer):
		m.groups = m.groups.Project(-1)
		return m, nil
	}
	var cmd tea.Cmd
	switch m.focus {
	case focusRollouts:
		if key.Matches(km, k.Expand) {
			m.setFocus(focusTrace)
			return m, nil
		}
		m.rollouts, cmd = m.rollouts.Update(km)
	case focusTrace:
		switch m.overlay {
		case overlayDetail:
			m.detail, cmd = m.detail.Update(km)
		case overlayStats:
			m.stats, cmd = m.stats.Update(km)
		default:
			if key.Matches(km, k.Back) && m.preview {
				m.preview = false
				m.trace = m.trace.SetPreview(false, m.groups.Preview())
				break
			}
			m.trace, cmd = m.trace.Update(km)
		}
	case focusGroups:
		m.groups, cmd = m.groups.Update(km)
	}
	return m, tea.Batch(cmd, m.afterChange())
}

// afterChange follows a key: a new selection or a new previewed spec starts
// the work that depends on it.
func (m *Model) afterChange() tea.Cmd {
	var cmds []tea.Cmd
	sel := m.rollouts.Selected()
	cur := m.trace.Rollout()
	if sel != cur {
		if sel == nil || cur == nil || sel.ID != cur.ID {
			if m.overlay == overlayDetail {
				m.overlay = overlayNone
			}
		}
		m.trace = m.trace.SetRollout(m.snap, sel)
		if m.overlay == overlayStats {
			m.stats = m.stats.SetRollout(m.snap, sel, m.trace.simAll)
		}
	}
	if spec := m.groups.Preview(); spec != m.trace.spec {
		m.trace = m.trace.SetPreview(m.preview, spec)
		cmds = append(cmds, m.requestAnalysis())
	}
	m.renderHeader()
	cmds = append(cmds, m.requestSim())
	return tea.Batch(cmds...)
}

func (m *Model) setFocus(f focus) {
	changed := f != m.focus
	m.focus = f
	if f != focusTrace {
		m.overlay = overlayNone
	}
	if changed && m.width < wideWidth {
		m.layout() // stacked panels: the focused one is the tall one
	}
}

func (m *Model) openDetail() {
	f, i, ok := m.trace.SelectedSpan()
	if !ok {
		return
	}
	fi := 0
	for j, x := range m.trace.Rollout().Fragments {
		if x == f {
			fi = j
		}
	}
	g, gok := m.trace.GroupOf(fi, i)
	m.detail = m.detail.SetSpan(m.snap, m.trace.Rollout(), f, i, groupName(m.reg, g, gok))
	m.overlay = overlayDetail
	m.setFocus(focusTrace)
}

func (m Model) setSnapshot(s *model.Snapshot) (tea.Model, tea.Cmd) {
	if s == nil || (m.snap != nil && s.Seq < m.snap.Seq) {
		return m, pauseRefresh(m.refresh)
	}
	if m.rateAt.IsZero() {
		m.rateAccepted, m.rateAt = s.Stats.Accepted, s.Taken
	} else if dt := s.Taken.Sub(m.rateAt); dt >= time.Second {
		m.rate = float64(s.Stats.Accepted-m.rateAccepted) / dt.Seconds()
		m.rateAccepted, m.rateAt = s.Stats.Accepted, s.Taken
	}
	m.snap = s
	m.rollouts = m.rollouts.SetSnapshot(s)
	// Refresh the shown rollout with its newest version, even if unchanged id.
	sel := m.rollouts.Selected()
	if sel != nil && m.trace.Rollout() != nil && sel.ID == m.trace.Rollout().ID && sel != m.trace.Rollout() {
		m.trace = m.trace.SetRollout(s, sel)
		if m.overlay == overlayStats {
			m.stats = m.stats.SetRollout(s, sel, m.trace.simAll)
		}
	}
	cmd := m.afterChange()
	return m, tea.Batch(cmd, m.requestAnalysis(), pauseRefresh(m.refresh))
}

// requestAnalysis starts a preview and check unless one is running, in which
// case the result triggers another run.
func (m *Model) requestAnalysis() tea.Cmd {
	if m.snap == nil {
		return nil
	}
	if m.analysing {
		m.dirty = true
		return nil
	}
	m.analysing, m.dirty = true, false
	grace := time.Duration(0)
	if m.opts.Live {
		grace = liveGrace
	}
	return runAnalysis(analysisJob{
		eng:         m.eng,
		snap:        m.snap,
		current:     m.opts.Current,
		preview:     m.groups.Preview(),
		needCurrent: !m.haveCur || m.curSeq != m.snap.Seq,
		now:         m.opts.Now,
		grace:       grace,
	})
}

func (m Model) setAnalysis(a analysisMsg) (tea.Model, tea.Cmd) {
	m.analysing = false
	if a.cur != nil {
		m.groups = m.groups.SetReports(a.cur, nil)
		m.curSeq, m.haveCur = a.seq, true
	}
	// A preview for a spec no longer shown is stale: drop it.
	if a.preview == m.groups.Preview() {
		m.groups = m.groups.SetReports(nil, a.prev)
	} else {
		m.dirty = true
	}
	m.rollouts = m.rollouts.SetCheck(a.check)
	m.groups = m.groups.SetCheck(a.check)
	m.renderHeader()
	if m.dirty || (m.snap != nil && a.seq != m.snap.Seq) {
		return m, m.requestAnalysis()
	}
	return m, nil
}

// requestSim simulates the shown rollout if its simulation is missing and
// none is running.
func (m *Model) requestSim() tea.Cmd {
	key, need := m.trace.NeedsSim(m.groups.Preview())
	if !need || m.simming || m.snap == nil {
		return nil
	}
	r := m.trace.Rollout()
	if r == nil || r.ID != key.id {
		return nil
	}
	m.simming = true
	return runSimulation(m.sim, m.snap, r, key.spec)
}

func (m Model) updateMouse(msg tea.MouseMsg) (tea.Model, tea.Cmd) {
	ev := tea.MouseEvent(msg)
	for f := focus(0); f < numFocus; f++ {
		r := m.rects[f]
		if !r.contains(ev.X, ev.Y) {
			continue
		}
		y := ev.Y - r.y - 1 // below the top border
		switch {
		case ev.Button == tea.MouseButtonWheelUp || ev.Button == tea.MouseButtonWheelDown:
			n := 3
			if ev.Button == tea.MouseButtonWheelUp {
				n = -3
			}
			m.scroll(f, n)
		case ev.Button == tea.MouseButtonLeft && ev.Action == tea.MouseActionPress:
			m.setFocus(f)
			switch f {
			case focusRollouts:
				m.rollouts = m.rollouts.Click(y)
			case focusTrace:
				if m.overlay == overlayNone {
					m.trace = m.trace.Click(y)
				}
			case focusGroups:
				m.groups = m.groups.Click(y)
			}
		default:
			return m, nil
		}
		return m, m.afterChange()
	}
	return m, nil
}

func (m *Model) scroll(f focus, n int) {
	switch f {
	case focusRollouts:
		m.rollouts = m.rollouts.Scroll(n)
	case focusTrace:
		switch m.overlay {
		case overlayDetail:
			m.detail = m.detail.Scroll(n)
		case overlayStats:
			m.stats = m.stats.Scroll(n)
		default:
			m.trace = m.trace.Scroll(n)
		}
	case focusGroups:
		m.groups = m.groups.Scroll(n)
	}
}

// headerLines and footerLines are the rows outside the panels.
const (
	headerLines = 2
	footerLines = 1
	wideWidth   = 100
)

// layout computes every panel's box from the window size and the styles'
// frame sizes, and hands each panel its content size.
func (m *Model) layout() {
	avail := m.height - headerLines - footerLines
	if m.width < 30 || avail < 3*m.frameH+3 {
		return
	}
	if m.width >= wideWidth {
		top := max(avail*55/100, m.frameH+4)
		left := m.width * 2 / 5
		m.rects[focusRollouts] = rect{0, headerLines, left, top}
		m.rects[focusTrace] = rect{left, headerLines, m.width - left, top}
		m.rects[focusGroups] = rect{0, headerLines + top, m.width, avail - top}
	} else {
		// Stacked: the focused panel gets half the height.
		big := avail / 2
		small := (avail - big) / 2
		y := headerLines
		for f := focus(0); f < numFocus; f++ {
			h := small
			if f == m.focus {
				h = big
			}
			if f == numFocus-1 {
				h = headerLines + avail - y
			}
			m.rects[f] = rect{0, y, m.width, h}
			y += h
		}
	}
	cw := func(f focus) (int, int) { return m.rects[f].w - m.frameW, m.rects[f].h - m.frameH }
	m.rollouts = m.rollouts.SetSize(cw(focusRollouts))
	m.trace = m.trace.SetSize(cw(focusTrace))
	m.detail = m.detail.SetSize(cw(focusTrace))
	m.stats = m.stats.SetSize(cw(focusTrace))
	m.groups = m.groups.SetSize(cw(focusGroups))
	m.help.Width = m.width
	m.renderHeader()
}

// renderHeader caches the two header lines.
func (m *Model) renderHeader() {
	if m.width <= 0 {
		return
	}
	src := strings.TrimPrefix(m.opts.Title, "gymtrace ")
	if len(m.opts.Addrs) > 0 {
		src = strings.Join(m.opts.Addrs, " ")
		if t := strings.TrimPrefix(m.opts.Title, "gymtrace "); t != "" {
			src = t + " · " + src
		}
	}
	mode := "file"
	if m.opts.Live {
		mode = "live " + fmtRate(m.rate) + " spans/s"
	}
	l1 := m.st.App.Title.Render("gymtrace") + " " + m.st.App.Header.Render(src) + m.st.App.Dim.Render(" · "+mode+" · current "+m.opts.CurrentSpec)
	var parts []string
	if s := m.snap; s != nil {
		st := s.Stats
		if st.NotRecorded > 0 {
			// First, so a narrow terminal still shows it: the record file
			// is missing spans the screen has.
			parts = append(parts, m.st.App.Error.Render(fmt.Sprintf("record failed: %s, %s spans not recorded", st.RecordError, fmtCount(st.NotRecorded))))
		}
		parts = append(parts,
			"spans "+fmtCount(int64(st.Stored)),
			"rollouts "+fmtCount(int64(st.Rollouts)),
			"trace ids "+fmtCount(int64(st.Traces)))
		if st.Refused > 0 {
			parts = append(parts, m.st.App.Error.Render("refused "+fmtCount(st.Refused)))
		}
		if st.RequestsRefused > 0 {
			parts = append(parts, m.st.App.Error.Render(fmt.Sprintf("requests refused %s (last: %s)", fmtCount(st.RequestsRefused), st.LastRefusal)))
		}
		if st.EvictedSpans > 0 {
			parts = append(parts, m.st.App.Error.Render(fmt.Sprintf("evicted %s spans (%s rollouts)", fmtCount(st.EvictedSpans), fmtCount(st.EvictedRollouts))))
		}
		if st.Duplicates > 0 {
			parts = append(parts, "duplicates "+fmtCount(st.Duplicates))
		}
		if st.AttrsDropped > 0 || st.ValuesTruncated > 0 {
			parts = append(parts, fmt.Sprintf("capped %s attrs, %s values", fmtCount(st.AttrsDropped), fmtCount(st.ValuesTruncated)))
		}
		parts = append(parts, "metric points "+fmtCount(st.MetricPoints), "log records "+fmtCount(st.LogRecords))
	} else {
		parts = append(parts, "loading…")
	}
	if m.analysing {
		parts = append(parts, m.st.App.Dim.Render("analysing…"))
	}
	l2 := m.st.App.Header.Render(strings.Join(parts, " · "))
	m.header = clip(l1, m.width) + "\n" + clip(l2, m.width)
}

// View draws the screen from cached panel renders; it does no other work.
func (m Model) View() string {
	if m.width == 0 {
		return ""
	}
	avail := m.height - headerLines - footerLines
	if m.width < 30 || avail < 3*m.frameH+3 {
		return clip(fmt.Sprintf("too small: %d×%d, need 30×%d", m.width, m.height, 3*m.frameH+3+headerLines+footerLines), m.width)
	}
	var body string
	if m.showHelp {
		body = lipgloss.NewStyle().Height(avail).MaxHeight(avail).Render(
			m.st.Panel.Title.Render("Keys") + "\n\n" + m.help.FullHelpView(m.keys.FullHelp()) +
				"\n\n" + m.st.Panel.Title.Render("Filter (/)") + "\n" + gate.FilterHelp)
	} else {
		box := func(f focus, content string) string {
			st := m.st.Panel.Box
			if f == m.focus {
				st = m.st.Panel.Focused
			}
			r := m.rects[f]
			return st.Width(r.w - m.frameW).Height(r.h - m.frameH).Render(content)
		}
		traceContent := m.trace.View()
		switch m.overlay {
		case overlayDetail:
			traceContent = m.detail.View()
		case overlayStats:
			traceContent = m.stats.View()
		}
		roll := box(focusRollouts, m.rollouts.View())
		tr := box(focusTrace, traceContent)
		gr := box(focusGroups, m.groups.View())
		if m.width >= wideWidth {
			body = lipgloss.JoinVertical(lipgloss.Left, lipgloss.JoinHorizontal(lipgloss.Top, roll, tr), gr)
		} else {
			body = lipgloss.JoinVertical(lipgloss.Left, roll, tr, gr)
		}
	}
	footer := m.help.ShortHelpView(m.keys.ShortHelp())
	if m.status != "" {
		st := m.st.App.Status
		if m.statusErr {
			st = m.st.App.Error
		}
		footer = st.Render(clip(m.status, m.width))
	}
	return m.header + "\n" + body + "\n" + clip(footer, m.width)
}

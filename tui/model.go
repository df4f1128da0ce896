package tui

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/nemo-gym/gymtrace/gate/filter"
	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/gate/whatif"
	"github.com/nemo-gym/gymtrace/model"
)

// Options configure the interface.
type Options struct {
	Source      Source
	Registry    *groups.Registry
	Current     groups.Set // the span_groups setting in force
	CurrentSpec string     // as the user wrote it; Registry.Format(Current) when empty
	// Variant names the Gym variant the registry is for and what chose it
	// ("Gym G1 (resource nemo.gym.version=0.5.1)"), shown in the header.
	Variant string
	Addrs   []string // receiver addresses for the header; empty for files
	Live    bool     // spans may still arrive: fresh rollouts are pending
	Title   string   // file names or a run label for the header
	// SnippetPath is where copy-out writes; SnippetFile in the working
	// directory when empty.
	SnippetPath string
	// Clipboard receives the OSC 52 sequence on copy-out; nil skips it.
	Clipboard *os.File
	// Renderer decides the colour profile; lipgloss's default when nil.
	Renderer *lipgloss.Renderer
	// Now is the clock for the join check's grace window; time.Now when nil.
	Now func() time.Time
	// Export writes the rollout x exports; nil disables x. ExportDir is
	// where its files go (the working directory when empty).
	Export    ExportFunc
	ExportDir string
	// SpanCost is the CPU per enabled span of the cost and worth view
	// (whatif.DefaultSpanCost when zero); Budget, when set, is judged against
	// the previewed spec at RolloutRate rollouts/s (0: the capture's rate).
	SpanCost    time.Duration
	Budget      *whatif.Budget
	RolloutRate float64
	// Redetect, when set, is asked with each new snapshot until it settles
	// which Gym variant a live capture comes from; it returns the options to
	// rebuild the interface with when they change (registry, spec, header).
	Redetect func(*model.Snapshot) (rebuild *Options, settled bool)
}

// rect is a panel's box on screen, frame included.
type rect struct{ x, y, w, h int }

func (r rect) contains(x, y int) bool { return x >= r.x && x < r.x+r.w && y >= r.y && y < r.y+r.h }

// focusMsg asks the root to move the focus to a slot.
type focusMsg struct{ to slot }

// Model is the root of the interface. It owns the panels, routes messages to
// them and runs the analysis commands, one at a time per engine.
type Model struct {
	opts Options
	st   *Styles
	keys *KeyMap
	help help.Model
	reg  *groups.Registry
	eng  *whatif.Engine // previews and checks; used by one command at a time
	sim  *whatif.Engine // per-rollout simulations; likewise

	width, height int
	snap          *model.Snapshot
	check         *whatif.CheckReport
	ssnap         *model.Snapshot // snap as the last analysis structured it
	tally         whatif.Tally    // the last analysis's rollouts, as every face counts them
	haveTally     bool

	rollouts *rolloutList
	trace    *traceView
	groups   *groupsPanel
	detail   *detailView
	stats    *statsView
	compare  *compareView
	worth    *worthView
	cohort   *cohortView
	worthEng *whatif.Engine // the worth view's; used by one command at a time
	marked   string         // the rollout marked for comparison
	// panels is every panel, base panels before their overlays: the one
	// list that keys, sizes, help, the mouse and drawing go through.
	panels []panel
	env    env

	focus    slot
	showHelp bool
	helpView *pager
	preview  bool // the waterfall shows the previewed spec

	analysing bool
	dirty     bool   // inputs changed while an analysis ran
	curSeq    uint64 // snapshot the current spec's report was computed from
	curWhere  string // and the rollout filter it was narrowed by
	haveCur   bool
	simming   bool

	rate rateMeter // live spans/s

	status    string
	statusErr bool
	copied    bool
	wrote     string // the snippet file this run wrote, to overwrite it silently

	refresh time.Duration // throttle between snapshots; tests shorten it

	rects      [numSlots]rect
	groupsWant int // the span groups' wantLines at the last layout
	listWant   int // the list's wantW at the last layout
	header     string
	frameW     int
	frameH     int
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
	h.Styles.ShortSeparator = st.App.Help
	h.Styles.Ellipsis = st.App.Help
	hv := newPager(st, keys, "q quit · esc or ? close · ↑/↓ pgup/pgdn scroll")
	hv.title = "Help"
	m := Model{
		opts:     o,
		st:       st,
		keys:     keys,
		help:     h,
		reg:      o.Registry,
		eng:      whatif.NewEngine(o.Registry),
		sim:      whatif.NewEngine(o.Registry),
		rollouts: newRolloutListFor(st, keys, o.Live, o.Addrs),
		trace:    newTraceView(st, keys, o.Registry),
		groups:   newGroupsPanel(st, keys, o.Registry, o.Current, o.CurrentSpec),
		detail:   newDetailView(st, keys),
		stats:    newStatsView(st, keys, o.Registry),
		compare:  newCompareView(st, keys, o.Registry),
		worth:    newWorthView(st, keys, o.Registry, o.SpanCost, o.Budget, o.RolloutRate),
		cohort:   newCohortView(st, keys, o.Registry),
		worthEng: whatif.NewEngine(o.Registry),
		helpView: &hv,
		refresh:  refreshEvery,
	}
	m.panels = []panel{m.rollouts, m.trace, m.detail, m.stats, m.compare, m.cohort, m.groups, m.worth}
	m.groups.budget, m.groups.rate = o.Budget, o.RolloutRate
	m.frameW, m.frameH = st.Panel.Box.GetFrameSize()
	m.trace.SetPreview(false, o.Current)
	if o.Live {
		// What arrives before the first snapshot counts from now.
		m.rate.add(o.Now(), 0)
	}
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
	_, warn := m.groups.copyWarning()
	text, err := Snippet(m.reg, m.groups.Preview(), false, warn)
	if err != nil {
		return "# no span_groups snippet: " + err.Error() + "\n"
	}
	return text
}

// Update routes a message: keys, window size, mouse, then data messages.
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
		m.decayRate()
		return m, tea.Batch(m.requestAnalysis(), tickClock())
	case analysisMsg:
		return m.setAnalysis(msg)
	case simMsg:
		m.simming = false
		m.trace.SetSim(msg)
		m.syncPanels()
		return m, m.requestSim()
	case openDetailMsg:
		m.closeOverlays(slotTrace)
		m.syncEnv()
		if m.detail.open(&m.env) {
			m.setFocus(slotTrace)
		}
		return m, nil
	case focusMsg:
		m.setFocus(msg.to)
		return m, m.afterChange()
	case filterDoneMsg:
		// A span id typed in the filter: show that span.
		if m.revealFilteredSpan() {
			m.setFocus(slotTrace)
		}
		return m, m.afterChange()
	case copiedMsg:
		return m.setCopied(msg), nil
	case exportedMsg:
		return m.setExported(msg), nil
	case worthMsg:
		m.worth.set(msg)
		return m, m.afterChange()
	case cohortMsg:
		m.cohort.set(msg)
		return m, m.afterChange()
	case recommendMsg:
		return m.setRecommend(msg)
	}
	return m, nil
}

func (m Model) updateKey(km tea.KeyMsg) (tea.Model, tea.Cmd) {
	m.status, m.statusErr = "", false
	if km.Type == tea.KeyCtrlC {
		return m, tea.Quit
	}
	// An open input owns every other key.
	if p := m.front(m.focus); p != nil && p.capturing() {
		_, cmd := p.handle(km, &m.env)
		if p == panel(m.rollouts) {
			m.revealFilteredSpan()
		}
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
	if m.showHelp {
		switch {
		case key.Matches(km, k.Quit):
			return m, tea.Quit
		case key.Matches(km, k.Help), key.Matches(km, k.Back):
			m.showHelp = false
		default:
			m.helpView.handle(km, &m.env)
		}
		return m, nil
	}
	// The focused panel first: it may give a key its own meaning.
	if p := m.front(m.focus); p != nil {
		if ok, cmd := p.handle(km, &m.env); ok {
			return m, tea.Batch(cmd, m.afterChange())
		}
	}
	for _, p := range m.panels {
		if o, ok := p.(overlay); ok && key.Matches(km, o.opener()) {
			m.toggleOverlay(o)
			return m, m.afterChange()
		}
	}
	switch {
	case key.Matches(km, k.Quit):
		return m, tea.Quit
	case key.Matches(km, k.Help):
		m.openHelp()
		return m, nil
	case key.Matches(km, k.NextPanel):
		m.setFocus((m.focus + 1) % numSlots)
		return m, m.afterChange()
	case key.Matches(km, k.PrevPanel):
		m.setFocus((m.focus + numSlots - 1) % numSlots)
		return m, m.afterChange()
	case key.Matches(km, k.Back) && m.front(m.focus) != m.base(m.focus):
		m.closeOverlays(m.focus)
		return m, m.afterChange()
	case key.Matches(km, k.Back) && m.preview && m.focus == slotTrace:
		m.preview = false
		m.trace.SetPreview(false, m.groups.Preview())
		return m, m.afterChange()
	case key.Matches(km, k.Expand) && m.focus == slotRollouts:
		m.setFocus(slotTrace)
		return m, m.afterChange()
	case key.Matches(km, k.Filter):
		m.setFocus(slotRollouts)
		return m, m.rollouts.StartFilter()
	case key.Matches(km, k.Spec):
		m.setFocus(slotGroups)
		var cmd tea.Cmd
		cmd = m.groups.StartInput()
		return m, cmd
	case key.Matches(km, k.Sort):
		m.rollouts.CycleSort()
		return m, m.afterChange()
	case key.Matches(km, k.Reverse):
		m.rollouts.Reverse()
		return m, m.afterChange()
	case key.Matches(km, k.Preview):
		m.preview = !m.preview
		m.trace.SetPreview(m.preview, m.groups.Preview())
		return m, m.afterChange()
	case key.Matches(km, k.Copy):
		short, warn := m.groups.copyWarning()
		text, err := Snippet(m.reg, m.groups.Preview(), true, warn)
		if err != nil {
			// Never hand out a spec Gym would refuse or read otherwise.
			m.status, m.statusErr = "not copied: "+err.Error(), true
			return m, nil
		}
		return m, copySnippet(text, m.opts.SnippetPath, m.wrote, m.opts.Clipboard, short)
	case key.Matches(km, k.Default), key.Matches(km, k.PerRoll), key.Matches(km, k.All):
		name := map[string]string{"1": "default", "2": "per_rollout", "3": "all"}[km.String()]
		if set, ok := m.reg.PresetSet(name); ok {
			m.groups.SetPreview(set)
		}
		return m, m.afterChange()
	case key.Matches(km, k.Mark):
		m.toggleMark()
		return m, m.afterChange()
	case key.Matches(km, k.Recommend):
		return m, m.startRecommend()
	case key.Matches(km, k.Path):
		m.trace.TogglePath()
		return m, nil
	case key.Matches(km, k.Export):
		return m, m.startExport(false)
	case key.Matches(km, k.ExportShaped):
		return m, m.startExport(true)
	case key.Matches(km, k.More):
		m.groups.Project(1)
		return m, nil
	case key.Matches(km, k.Fewer):
		m.groups.Project(-1)
		return m, nil
	}
	return m, nil
}

// base is the base panel of s.
func (m *Model) base(s slot) panel {
	for _, p := range m.panels {
		if _, ok := p.(overlay); !ok && p.slot() == s {
			return p
		}
	}
	return nil
}

// revealFilteredSpan moves the waterfall to the span whose id the rollout
// filter holds (at least 6 hex digits of it); it reports whether it did.
func (m *Model) revealFilteredSpan() bool {
	needle := strings.ToLower(strings.TrimSpace(m.rollouts.filter))
	if len(needle) < 6 || strings.Trim(needle, "0123456789abcdef") != "" {
		return false
	}
	r := m.rollouts.Selected()
	if r == nil {
		return false
	}
	m.afterChange()
	for _, f := range r.Fragments {
		for i := range f.Spans {
			if strings.Contains(f.Spans[i].SpanID.String(), needle) {
				return m.trace.Reveal(f.Spans[i].SpanID)
			}
		}
	}
	return false
}

// afterChange follows a key: a new selection or a new previewed spec starts
// the work that depends on it, and every panel sees the new state.
func (m *Model) afterChange() tea.Cmd {
	var cmds []tea.Cmd
	sel := m.rollouts.Selected()
	if cur := m.trace.Rollout(); sel != cur {
		m.trace.SetRollout(m.snap, sel)
	}
	if spec := m.groups.Preview(); spec != m.trace.spec {
		m.trace.SetPreview(m.preview, spec)
		cmds = append(cmds, m.requestAnalysis())
	} else if m.rollouts.where().String() != m.curWhere && m.haveCur {
		// A new filter: the span groups preview the rollouts it shows.
		cmds = append(cmds, m.requestAnalysis())
	}
	m.trace.SetFocused(m.focus == slotTrace && m.front(slotTrace) == panel(m.trace))
	m.groups.SetFocused(m.focus == slotGroups)
	m.syncPanels()
	m.fitPanels()
	m.renderHeader()
	cmds = append(cmds, m.requestSim(), m.worth.request(m.worthEng, m.snap, m.groups.Preview()),
		m.cohort.request(m.reg, m.snap, m.rollouts.compiled))
	return tea.Batch(cmds...)
}

// syncEnv copies the shared state panels read into m.env.
func (m *Model) syncEnv() {
	e := &m.env
	e.reg, e.snap, e.current, e.preview = m.reg, m.snap, m.opts.Current, m.groups.Preview()
	e.rollout, e.sim, e.check = m.trace.Rollout(), m.trace.simAll, m.check
	e.cur, e.prev = m.groups.curRep, m.groups.prevRep
	e.marked = m.rollouts.Find(m.marked)
	e.rsnap, e.rows = m.rollouts.snap, m.rollouts.rows
	e.frag, e.hasSpan, e.group = nil, false, ""
	if fi, i, ok := m.trace.selectedRef(); ok {
		e.frag, e.fragIdx, e.spanIdx, e.hasSpan = e.rollout.Fragments[fi], fi, i, true
		g, gok := m.trace.GroupOf(fi, i)
		e.group = groupName(m.reg, g, gok)
	}
}

// syncPanels hands every panel the new shared state.
func (m *Model) syncPanels() {
	m.syncEnv()
	for _, p := range m.panels {
		p.refresh(&m.env)
	}
}

func (m *Model) setFocus(f slot) {
	if f == m.focus {
		return
	}
	if f != slotTrace {
		m.closeOverlays(slotTrace)
	}
	m.focus = f
	m.groups.SetFocused(f == slotGroups)
	m.layout() // the focused panel gets the room
}

func (m Model) setSnapshot(s *model.Snapshot) (tea.Model, tea.Cmd) {
	if s == nil || (m.snap != nil && s.Seq < m.snap.Seq) {
		return m, pauseRefresh(m.refresh)
	}
	m.rate.add(s.Taken, s.Stats.Accepted)
	if m.opts.Redetect != nil {
		if o, settled := m.opts.Redetect(s); settled {
			m.opts.Redetect = nil
			if o != nil {
				return m.rebuild(*o, s)
			}
		}
	}
	m.snap = s
	// The rollout list follows the analysis: rollouts are found by
	// structure there, off the UI goroutine.
	return m, tea.Batch(m.requestAnalysis(), pauseRefresh(m.refresh))
}

// decayRate samples the accepted count on the clock tick, so the live
// rate falls once spans stop coming.
func (m *Model) decayRate() {
	if m.snap == nil {
		return
	}
	m.rate.add(m.opts.Now(), m.snap.Stats.Accepted)
	m.renderHeader()
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
	where := m.rollouts.where()
	return runAnalysis(analysisJob{
		eng:         m.eng,
		snap:        m.snap,
		current:     m.opts.Current,
		preview:     m.groups.Preview(),
		where:       where,
		needCurrent: !m.haveCur || m.curSeq != m.snap.Seq || m.curWhere != where.String(),
		now:         m.opts.Now,
		grace:       grace,
	})
}

func (m Model) setAnalysis(a analysisMsg) (tea.Model, tea.Cmd) {
	m.analysing = false
	if a.cur != nil {
		m.groups.SetReports(a.cur, nil)
		m.curSeq, m.haveCur, m.curWhere = a.seq, true, a.where
	}
	// A preview for a spec or a filter no longer shown is stale: drop it.
	if a.preview == m.groups.Preview() && a.where == m.rollouts.where().String() {
		m.groups.SetReports(nil, a.prev)
		m.groups.SetWhere(a.where)
	} else {
		m.dirty = true
	}
	if a.check != nil {
		m.check = a.check
	}
	m.rollouts.SetCheck(a.check)
	m.groups.SetCheck(a.check)
	var cmd tea.Cmd
	if a.check != nil && a.check.Structure != nil {
		ss := a.check.Structure.Snap
		m.ssnap = ss
		m.tally, m.haveTally = a.check.Tally(m.opts.Now(), whatif.JobQuiet), true
		// Refresh the shown rollout with its newest version, even if unchanged id.
		sel := m.rollouts.Selected()
		if sel != nil && m.trace.Rollout() != nil && sel.ID == m.trace.Rollout().ID && sel != m.trace.Rollout() {
			m.trace.SetRollout(ss, sel)
		}
		cmd = m.afterChange()
	}
	m.syncPanels()
	m.fitPanels()
	m.renderHeader()
	if m.dirty || (m.snap != nil && a.seq != m.snap.Seq) {
		return m, tea.Batch(cmd, m.requestAnalysis())
	}
	return m, cmd
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
	if m.showHelp {
		return m, nil
	}
	for s := slot(0); s < numSlots; s++ {
		r := m.rects[s]
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
			m.front(s).scroll(n)
		case ev.Button == tea.MouseButtonLeft && ev.Action == tea.MouseActionPress:
			m.setFocus(s)
			m.front(s).click(y)
		default:
			return m, nil
		}
		return m, m.afterChange()
	}
	return m, nil
}

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
	if m.width >= wideWidth {
		top := max(avail*55/100, m.frameH+4)
		left := m.width * 2 / 5
		m.listWant = m.rollouts.wantW
		if m.width >= wideList {
			// Room to spare: the list takes what its ids and services need,
			// up to half the width; the waterfall keeps the other half.
			left = clamp(m.listWant+m.frameW, left, m.width/2)
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
		for s, h := range stackHeights(avail, m.focus, m.frameH, m.groupsWant) {
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

// fitPanels lays the screen out again when a panel's want changed: the
// span groups, narrow and not focused, need another number of lines (a
// verdict gained hops), or the list, wide, longer ids or services.
func (m *Model) fitPanels() {
	switch {
	case m.width <= 0:
	case m.width < wideWidth && m.groups.wantLines(m.width-m.frameW) != m.groupsWant,
		m.width >= wideList && m.rollouts.wantW != m.listWant:
		m.layout()
	}
}

// openHelp renders the help screen for the focused panel and shows it.
func (m *Model) openHelp() {
	m.showHelp = true
	m.helpView.setLines(m.helpLines())
	m.helpView.vp.GotoTop()
}

// helpLines is the help screen: how to leave first, then the focused
// panel's keys, the global keys, every other panel's keys and the legend.
func (m *Model) helpLines() []string {
	k := m.keys
	seen := map[string]bool{}
	type section struct {
		title string
		keys  []key.Binding
	}
	var secs []section
	add := func(title string, bs []key.Binding) {
		var out []key.Binding
		for _, b := range bs {
			id := b.Help().Key + " " + b.Help().Desc
			if !seen[id] {
				seen[id] = true
				out = append(out, b)
			}
		}
		if len(out) > 0 {
			secs = append(secs, section{title, out})
		}
	}
	add("leave", []key.Binding{k.Quit, k.Back, k.Help})
	front := m.front(m.focus)
	add(front.name()+" (focused)", front.help())
	add("everywhere", k.Global())
	for _, p := range m.panels {
		if p != front {
			add(p.name(), p.help())
		}
	}
	const keyW, colW = 9, 58
	var lines []string
	for _, sec := range secs {
		lines = append(lines, m.st.Panel.Title.Render(sec.title))
		for _, b := range sec.keys {
			lines = append(lines, "  "+m.st.App.Title.Render(fit(b.Help().Key, keyW))+" "+k.explain(b))
		}
	}
	lines = append(lines, m.st.Panel.Title.Render("legend"))
	if m.snap != nil {
		for _, sv := range m.services() {
			bar := strings.Repeat(string(m.st.Fill(uint32(sv.id))), 3)
			lines = append(lines, "  "+fit(m.st.Service(uint32(sv.id)).Render(bar), keyW)+" "+sv.name)
		}
	}
	for _, g := range [][2]string{
		{glyphError, "failed span (error status); rollouts: error spans"},
		{glyphSplit, "join broken: split rollout, broken hop, new trace"},
		{glyphJoined, "joined: the rollout is one trace tree"},
		{glyphPending, "pending: spans may still arrive"},
		{glyphTruncated, "truncated: force-closed at shutdown"},
		{glyphFolded + " +N", "collapsed node and the spans it hides"},
		{string(glyphEvent), "span event (an exception, say) on its bar"},
		{string(glyphPath), "the span holds the critical path there (P)"},
		{glyphMatch, "search hit"},
		{"·", "time-axis tick"},
		{"›", "cursor"},
		{glyphMarked, "rollout marked for comparison (m)"},
		{"name*", "group changed from the current spec"},
		{"trace ids", "header: distinct trace ids captured"},
		{"traces", "span groups: traces each spec would send"},
	} {
		lines = append(lines, "  "+fit(g[0], keyW)+" "+g[1])
	}
	// As many columns as fit, filled top to bottom.
	cols := clamp(m.width/colW, 1, 4)
	if cols == 1 {
		for i, l := range lines {
			lines[i] = clip(l, max(m.width, 1))
		}
		return append(lines, filterHelp(m.st, m.width)...)
	}
	h := (len(lines) + cols - 1) / cols
	out := make([]string, h)
	for i, l := range lines {
		if i/h < cols-1 {
			l = fit(l, colW)
		}
		out[i%h] += l
	}
	for i := range out {
		out[i] = clip(out[i], m.width)
	}
	return append(out, filterHelp(m.st, m.width)...)
}

// filterHelp is the rollout filter's syntax, full width.
func filterHelp(st *Styles, w int) []string {
	lines := []string{st.Panel.Title.Render("rollout filter (/)")}
	for _, l := range strings.Split(filter.Help, "\n") {
		lines = append(lines, clip("  "+l, w))
	}
	return lines
}

// service is a resource and its short service name.
type service struct {
	id   model.ResourceID
	name string
}

// services lists the capture's services in resource order, for the legend.
func (m *Model) services() []service {
	seen := map[model.ResourceID]bool{}
	var out []service
	for _, r := range m.snap.Rollouts {
		for _, f := range r.Fragments {
			for i := range f.Spans {
				if id := f.Spans[i].Resource; !seen[id] {
					seen[id] = true
					out = append(out, service{id, shortService(m.snap.ServiceName(id))})
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

func (m Model) setCopied(msg copiedMsg) Model {
	m.copied = true
	if msg.errText != "" && msg.path == "" && !msg.clip {
		m.status, m.statusErr = msg.errText, true
		return m
	}
	// What happened first (the clipboard's fate, never "copied" when it
	// was not); the env line, long and printed on exit anyway, last, where
	// the width cuts it.
	parts := []string{msg.clipText}
	if msg.warn != "" {
		// A spec that breaks joins is said first, where no width cuts it.
		parts = append([]string{glyphSplit + " " + msg.warn}, parts...)
	}
	if msg.path != "" {
		m.wrote = msg.path
		shown := msg.path
		if wd, err := os.Getwd(); err == nil {
			if rel, err := filepath.Rel(wd, msg.path); err == nil && !strings.HasPrefix(rel, "..") {
				shown = rel
			}
		}
		if msg.replaced {
			parts = append(parts, "replaced the earlier "+shown+" (kept as "+shown+".bak)")
		} else {
			parts = append(parts, "wrote "+shown)
		}
	}
	if msg.errText != "" {
		parts = append(parts, msg.errText)
	}
	spec, _ := m.reg.CopyOut(m.groups.Preview())
	parts = append(parts, groups.EnvLine(spec))
	m.status, m.statusErr = strings.Join(parts, " · "), msg.errText != "" || msg.warn != ""
	return m
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
		parts = append(parts,
			"spans "+fmtCount(int64(st.Stored)),
			rolls,
			"captured trace ids "+fmtCount(int64(st.Traces)))
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

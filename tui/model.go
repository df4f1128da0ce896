package tui

import (
	"os"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
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
	// Evidence, when set, reads Gym's outcome files (rewards, failures,
	// verdicts), polled each second while Live.
	Evidence EvidenceFunc
}

// rect is a panel's box on screen, frame included.
type rect struct{ x, y, w, h int }

func (r rect) contains(x, y int) bool { return x >= r.x && x < r.x+r.w && y >= r.y && y < r.y+r.h }

// focusMsg asks the root to move the focus to a slot.
type focusMsg struct{ to slot }

// Model is the root of the interface. It owns the panels, routes messages to
// them and runs the analysis commands, one at a time per engine. Its state
// is in parts, each with one owner: what is shown (feed) changes only with
// snapshots and analyses, the commands in flight (jobs) only as they start
// and end, the user's own state (interaction) only with keys and mouse,
// and the screen's geometry (screen) only in layout and renderHeader.
type Model struct {
	opts Options
	reg  *groups.Registry
	screen
	feed
	jobs
	views
	interaction
	evidenceState
}

// screen is the geometry and what is drawn outside the panels: written by
// layout (sizes, boxes, what the panels wanted then) and renderHeader.
type screen struct {
	st            *Styles
	keys          *KeyMap
	help          help.Model
	width, height int
	frameW        int
	frameH        int
	rects         [numSlots]rect
	groupsWant    int  // the span groups' wantLines at the last layout
	listWant      int  // the list's wantW at the last layout
	listEv        int  // the list's evidence columns at the last layout
	roomyAt       bool // a view that wants the height was in front at the last layout
	header        string
}

// feed is the data shown: the newest snapshot and what the last analysis
// made of it. Written by setSnapshot and setAnalysis only.
type feed struct {
	snap      *model.Snapshot
	check     *whatif.CheckReport
	tally     whatif.Tally // the last analysis's rollouts, as every face counts them
	haveTally bool
	rate      rateMeter // live spans/s, sampled by snapshots and clock ticks
}

// jobs are the commands that compute off the UI goroutine, one at a time
// per engine (an engine is not safe for concurrent use), and what the last
// results were computed from.
type jobs struct {
	eng       *whatif.Engine // previews and checks
	sim       *whatif.Engine // per-rollout simulations
	analysing bool
	dirty     bool // inputs changed while an analysis ran
	// Pacing: under a flood every snapshot is new, and an analysis of a
	// large store run back to back would hold a core the keys need. One
	// that new data asks for waits until analysisGap times as long as the
	// last took has passed since it ended; one the user asks for (a new
	// spec or filter: urgent) does not.
	analysedAt   time.Time
	analysisTook time.Duration
	urgent       bool
	paced        bool   // an analyseMsg is on its way
	curSeq       uint64 // snapshot the current spec's report was computed from
	curWhere     string // and the rollout filter it was narrowed by
	haveCur      bool
	simming      bool
	refresh      time.Duration // throttle between snapshots; tests shorten it
}

// views are the panels: each owns its state and cache; the root hands
// them the shared state (env) and routes keys through panels.
type views struct {
	rollouts *rolloutList
	trace    *traceView
	groups   *groupsPanel
	detail   *detailView
	stats    *statsView
	compare  *compareView
	worth    *worthView
	cohort   *cohortView
	helpView *pager
	// panels is every panel, base panels before their overlays: the one
	// list that keys, sizes, help, the mouse and drawing go through.
	panels []panel
	env    env
}

// interaction is the user's own state: what has focus, what is open or
// marked, what the status line says and what copy-out wrote.
type interaction struct {
	focus     slot
	showHelp  bool
	preview   bool   // the waterfall shows the previewed spec
	marked    string // the rollout marked for comparison
	status    string
	statusErr bool
	copied    bool
	wrote     string // the snippet file this run wrote, to overwrite it silently
	ask       budgetPrompt
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
	hold := &evidenceHold{}
	m := Model{
		evidenceState: evidenceState{evHold: hold},
		opts:          o,
		reg:           o.Registry,
		screen:        screen{st: st, keys: keys, help: h},
		interaction:   interaction{ask: newBudgetPrompt(st)},
		jobs: jobs{
			eng:     whatif.NewEngine(o.Registry),
			sim:     whatif.NewEngine(o.Registry),
			refresh: refreshEvery,
		},
		views: views{
			rollouts: newRolloutListFor(st, keys, o.Live, o.Addrs),
			trace:    newTraceView(st, keys, o.Registry),
			groups:   newGroupsPanel(st, keys, o.Registry, o.Current, o.CurrentSpec),
			detail:   newDetailView(st, keys),
			stats:    newStatsView(st, keys, o.Registry, o.Live),
			compare:  newCompareView(st, keys, o.Registry),
			worth:    newWorthView(st, keys, o.Registry, o.SpanCost, o.Budget, o.RolloutRate),
			cohort:   newCohortView(st, keys, o.Registry),
			helpView: &hv,
		},
	}
	m.rollouts.evLookup = hold.lookup
	m.cohort.outcome = hold.lookup
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
	if m.opts.Evidence != nil {
		cmds = append(cmds, pollEvidence(m.opts.Evidence, 0))
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
	case evidenceMsg:
		return m.setEvidence(msg)
	case matchMsg:
		m.rollouts.setMatches(msg)
		if m.rollouts.filtering {
			m.revealFilteredSpan()
		}
		return m, m.afterChange()
	case analyseMsg:
		m.paced = false
		if !m.dirty {
			return m, nil
		}
		return m, m.requestAnalysis()
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
	case filterTypedMsg:
		if !m.rollouts.applyTyped(msg) {
			return m, nil
		}
		m.revealFilteredSpan()
		return m, m.afterChange()
	case filterDoneMsg:
		// A span id typed in the filter: show that span.
		if m.revealFilteredSpan() {
			m.setFocus(slotTrace)
		}
		return m, m.afterChange()
	case statusMsg:
		m.status, m.statusErr = msg.text, msg.err
		return m, nil
	case copiedMsg:
		return m.setCopied(msg), nil
	case exportedMsg:
		return m.setExported(msg), nil
	case recommendMsg:
		return m.setRecommend(msg)
	}
	// A panel's own messages reach it whatever the focus.
	for _, p := range m.panels {
		if u, ok := p.(updater); ok && u.update(msg) {
			return m, m.afterChange()
		}
	}
	return m, nil
}

func (m Model) updateKey(km tea.KeyMsg) (tea.Model, tea.Cmd) {
	m.status, m.statusErr = "", false
	if km.Type == tea.KeyCtrlC {
		return m, tea.Quit
	}
	if m.ask.on {
		return m.updateBudgetPrompt(km)
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
	for _, pk := range k.presets() {
		if key.Matches(km, pk.Binding) {
			if set, ok := m.reg.PresetSet(pk.preset); ok {
				m.groups.SetPreview(set)
			}
			return m, m.afterChange()
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
	case key.Matches(km, k.Mark):
		m.toggleMark()
		return m, m.afterChange()
	case key.Matches(km, k.Recommend):
		return m, m.startRecommend()
	case key.Matches(km, k.Path):
		// Shown, the path wants the waterfall's room: the trace gets focus.
		m.trace.TogglePath()
		if m.trace.marks.on {
			m.setFocus(slotTrace)
		}
		return m, m.afterChange()
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
	if r != m.trace.Rollout() {
		m.trace.SetRollout(m.snap, r)
	}
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
		m.urgent = true
		cmds = append(cmds, m.requestAnalysis())
	} else if m.rollouts.where().String() != m.curWhere && m.haveCur {
		// A new filter: the span groups preview the rollouts it shows.
		m.urgent = true
		cmds = append(cmds, m.requestAnalysis())
	}
	m.trace.SetFocused(m.focus == slotTrace && m.front(slotTrace) == panel(m.trace))
	m.groups.SetFocused(m.focus == slotGroups)
	m.syncPanels()
	m.fitPanels()
	m.renderHeader()
	cmds = append(cmds, m.rollouts.matchCmd(), m.requestSim())
	for _, p := range m.panels {
		if r, ok := p.(requester); ok {
			cmds = append(cmds, r.request(&m.env))
		}
	}
	return tea.Batch(cmds...)
}

// syncEnv copies the shared state panels read into m.env.
func (m *Model) syncEnv() {
	e := &m.env
	e.reg, e.snap, e.current, e.preview = m.reg, m.snap, m.opts.Current, m.groups.Preview()
	e.rollout, e.sim, e.check = m.trace.Rollout(), m.trace.simAll, m.check
	e.cur, e.prev = m.groups.curRep, m.groups.prevRep
	e.marked = m.rollouts.Find(m.marked)
	e.rsnap, e.rows, e.where = m.rollouts.snap, m.rollouts.rows, m.rollouts.compiled
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

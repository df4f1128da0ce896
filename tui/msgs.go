package tui

import (
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/nemo-gym/gymtrace/gate/evidence"
	"github.com/nemo-gym/gymtrace/gate/filter"
	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/gate/whatif"
	"github.com/nemo-gym/gymtrace/model"
)

// Source is where the interface gets its data: *model.Store satisfies it.
type Source interface {
	Snapshot() *model.Snapshot
	Changed() <-chan struct{}
}

// refreshEvery throttles snapshot refreshes to at most ten a second.
const refreshEvery = 100 * time.Millisecond

// clockEvery re-runs the join check while live, so rollouts leave "pending".
const clockEvery = time.Second

// liveGrace is how long a fresh rollout stays pending: gate's, which the
// headless status line uses too.
const liveGrace = whatif.LiveGrace

// snapshotMsg carries a newly published snapshot.
type snapshotMsg struct{ snap *model.Snapshot }

// refreshMsg ends a throttle pause: the next change may be waited for.
type refreshMsg struct{}

// clockMsg is the once-a-second tick of live mode.
type clockMsg struct{}

// analyseMsg ends an analysis's pacing pause.
type analyseMsg struct{}

// analysisMsg is a finished preview and join check. It is tagged with what it
// was computed from so results for an old spec are dropped.
type analysisMsg struct {
	seq     uint64
	current groups.Set
	preview groups.Set
	where   string         // the rollout filter the previews were narrowed by
	cur     *whatif.Report // nil when the current report was still fresh
	prev    *whatif.Report
	check   *whatif.CheckReport
	joined  *evidence.Joined // Gym's files joined to the check's rollouts; nil without
	took    time.Duration    // wall time of the analysis
	// What the span groups panel derives from the reports and the check,
	// derived here, off the UI goroutine: each walks every rollout.
	derived groupsDerived
}

// groupsDerived is the span groups panel's derived figures for one check:
// the rollouts it still waits for, and each report's verdict and breaks.
type groupsDerived struct {
	check    *whatif.CheckReport
	pending  []string
	verdicts map[*whatif.Report]whatif.JoinVerdict
	breaks   map[*whatif.Report][]breakSum
}

// deriveGroups computes groupsDerived for the reports under check.
func deriveGroups(check *whatif.CheckReport, reps ...*whatif.Report) groupsDerived {
	d := groupsDerived{check: check, verdicts: map[*whatif.Report]whatif.JoinVerdict{}, breaks: map[*whatif.Report][]breakSum{}}
	if check == nil {
		return d
	}
	d.pending = pendingOf(check)
	for _, r := range reps {
		if r != nil {
			d.verdicts[r] = whatif.Verdict(r, check)
			d.breaks[r] = aggregateBreaks(r, d.pending)
		}
	}
	return d
}

// simMsg is one rollout simulated under every group (for group tags) and
// under the previewed spec.
type simMsg struct {
	key  simKey
	all  *whatif.RolloutSim
	prev *whatif.RolloutSim
}

// simKey identifies a simulation's inputs; a result for another key is stale.
type simKey struct {
	id      string
	version uint64
	spec    groups.Set
}

// statusMsg is a panel's word for the status line, an error when err.
type statusMsg struct {
	text string
	err  bool
}

// copiedMsg reports the outcome of a copy-out.
type copiedMsg struct {
	path     string // the file written, "" if none
	replaced bool   // a different file was there; kept as path.bak
	clip     bool   // OSC 52 sent
	clipText string // what happened to the clipboard
	errText  string
	warn     string // what the copied spec breaks, "" when nothing
}

// waitForChange blocks until the source publishes, then delivers the latest
// snapshot. The root re-issues it after each refresh pause.
func waitForChange(src Source) tea.Cmd {
	ch := src.Changed()
	return func() tea.Msg {
		<-ch
		return snapshotMsg{snap: src.Snapshot()}
	}
}

// pauseRefresh waits out the throttle interval after a snapshot.
func pauseRefresh(d time.Duration) tea.Cmd {
	return tea.Tick(d, func(time.Time) tea.Msg { return refreshMsg{} })
}

// tickClock schedules the next live-mode clock tick.
func tickClock() tea.Cmd {
	return tea.Tick(clockEvery, func(time.Time) tea.Msg { return clockMsg{} })
}

// analysisJob is what runAnalysis needs, captured by value.
type analysisJob struct {
	eng              *whatif.Engine
	snap             *model.Snapshot
	current, preview groups.Set
	// where narrows both previews to the rollouts the list's filter
	// shows, as preview --where does; the join check stays whole.
	where       *filter.Filter
	needCurrent bool
	curRep      *whatif.Report // the current spec's report kept when !needCurrent
	// shown is the preview's report the panel shows: kept when the new
	// one comes stale (the filter or spec changed meanwhile), so it is
	// judged against the new check here too.
	shown *whatif.Report
	now   func() time.Time
	grace time.Duration
	// ev is Gym's files as last read, joined to the check's rollouts;
	// ended says the run is over (files, or the live job ended).
	ev    *evidence.Set
	ended bool
}

// runAnalysis computes both previews and the join check. Only one runs at a
// time per engine (the root tracks it), because the engine is not safe for
// concurrent use.
func runAnalysis(j analysisJob) tea.Cmd {
	return func() tea.Msg {
		t0 := time.Now()
		m := analysisMsg{seq: j.snap.Seq, current: j.current, preview: j.preview, where: j.where.String()}
		sel := j.eng.Select(j.snap, j.where)
		if j.needCurrent {
			m.cur = j.eng.Preview(sel, j.current)
		}
		m.prev = j.eng.Preview(sel, j.preview)
		m.check = j.eng.Check(j.snap, j.now(), j.grace)
		cur := m.cur
		if cur == nil {
			cur = j.curRep
		}
		m.derived = deriveGroups(m.check, cur, m.prev, j.shown)
		if j.ev != nil && m.check.Structure != nil {
			m.joined = evidence.Join(j.ev, m.check.Structure, j.ended)
		}
		m.took = time.Since(t0)
		return m
	}
}

// runSimulation simulates one rollout on its own engine, so moving the
// cursor never waits behind a large preview.
func runSimulation(eng *whatif.Engine, snap *model.Snapshot, r *model.Rollout, spec groups.Set) tea.Cmd {
	key := simKey{id: r.ID, version: r.Version, spec: spec}
	all := eng.Registry().All()
	return func() tea.Msg {
		m := simMsg{key: key}
		m.all = eng.SimulateRollout(snap, r, all)
		if spec == all {
			m.prev = m.all
		} else {
			m.prev = eng.SimulateRollout(snap, r, spec)
		}
		return m
	}
}

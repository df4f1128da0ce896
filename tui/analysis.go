package tui

import (
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/nemo-gym/gymtrace/gate/whatif"
	"github.com/nemo-gym/gymtrace/model"
)

// Snapshots in, analyses out: what the root does when data arrives, and
// the commands that compute off the UI goroutine.

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

// analysisGap is how many times the last analysis's time passes between
// its end and the start of one that new data asks for: analyses take at
// most a third of the time, the rest is the keys'.
const analysisGap = 2

// requestAnalysis starts a preview and check unless one is running, in which
// case the result triggers another run, or unless the last one ended too
// recently (see jobs' pacing), in which case a tick starts it later.
func (m *Model) requestAnalysis() tea.Cmd {
	if m.snap == nil {
		return nil
	}
	if m.analysing || m.paced && !m.urgent {
		m.dirty = true
		return nil
	}
	if wait := analysisGap*m.analysisTook - time.Since(m.analysedAt); wait > 0 && !m.urgent {
		m.dirty, m.paced = true, true
		return tea.Tick(wait, func(time.Time) tea.Msg { return analyseMsg{} })
	}
	m.analysing, m.dirty, m.urgent = true, false, false
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
		curRep:      m.groups.curRep,
		shown:       m.groups.prevRep,
		now:         m.opts.Now,
		grace:       grace,
		ev:          m.evSet,
		ended:       !m.opts.Live || m.haveTally && m.tally.Job == whatif.JobEnded,
	})
}

func (m Model) setAnalysis(a analysisMsg) (tea.Model, tea.Cmd) {
	m.analysing = false
	m.analysedAt, m.analysisTook = time.Now(), a.took
	if a.derived.check != nil {
		m.groups.seed(a.derived)
	}
	if a.cur != nil {
		m.curSeq, m.haveCur, m.curWhere = a.seq, true, a.where
	}
	// A preview for a spec or a filter no longer shown is stale: drop it.
	// Both reports are installed at once: each render judges the panel's
	// reports, and one judged against a check it was not derived with
	// costs a walk of every rollout.
	if a.preview == m.groups.Preview() && a.where == m.rollouts.where().String() {
		m.groups.where = a.where
		m.groups.SetReports(a.cur, a.prev)
	} else {
		m.groups.SetReports(a.cur, nil)
		m.dirty, m.urgent = true, true
	}
	if a.check != nil {
		m.check = a.check
	}
	m.rollouts.SetCheck(a.check)
	if a.joined != nil {
		m.evHold.p.Store(a.joined)
		m.rollouts.SetEvidence(a.joined)
	}
	if a.derived.check != nil {
		m.groups.render()
	} else {
		m.groups.SetCheck(a.check)
	}
	var cmd tea.Cmd
	if a.check != nil && a.check.Structure != nil {
		ss := a.check.Structure.Snap
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

// Analysed reports whether the rollout list shows an analysis: the
// rollouts found by structure, with their join figures.
func (m Model) Analysed() bool { return m.rollouts.haveJoin && m.rollouts.structure != nil }

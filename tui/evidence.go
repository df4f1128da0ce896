package tui

import (
	"sync/atomic"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/nemo-gym/gymtrace/gate/evidence"
)

// Gym's outcome files beside the traces: polled off the UI goroutine,
// joined to the rollouts with each analysis, read by the list's columns
// and the filter's evidence terms.

// EvidenceFunc reads what Gym's files hold so far: the latest set, whether
// it changed since the last call, or why the files could not be read. It is
// called from one command at a time, never on the UI goroutine.
type EvidenceFunc func() (set *evidence.Set, changed bool, err error)

// evidencePoll is how often a live run's files are read again.
const evidencePoll = time.Second

// evidenceMsg is one poll's answer.
type evidenceMsg struct {
	set     *evidence.Set
	changed bool
	err     error
}

// pollEvidence reads the files after wait (0: at once).
func pollEvidence(read EvidenceFunc, wait time.Duration) tea.Cmd {
	poll := func() tea.Msg {
		s, changed, err := read()
		return evidenceMsg{set: s, changed: changed, err: err}
	}
	if wait <= 0 {
		return poll
	}
	return tea.Tick(wait, func(time.Time) tea.Msg { return poll() })
}

// evidenceHold is the latest join, shared by pointer among the Model's
// copies and read by the filter's evidence terms from any goroutine.
type evidenceHold struct {
	p atomic.Pointer[evidence.Joined]
}

// lookup is the filter's view of the join.
func (h *evidenceHold) lookup(id string) *evidence.Outcome {
	return h.p.Load().Lookup(id)
}

// evidenceState is the root's part of the evidence.
type evidenceState struct {
	evSet  *evidence.Set
	evErr  string
	evHold *evidenceHold
}

// setEvidence takes a poll's answer and asks for the next while live.
func (m Model) setEvidence(msg evidenceMsg) (tea.Model, tea.Cmd) {
	var cmds []tea.Cmd
	if err := ""; msg.err != nil || m.evErr != "" {
		if msg.err != nil {
			err = msg.err.Error()
		}
		m.evErr = err
		m.renderHeader()
	}
	if msg.changed && msg.set != nil {
		m.evSet = msg.set
		m.urgent = true
		cmds = append(cmds, m.requestAnalysis())
	}
	if m.opts.Live {
		cmds = append(cmds, pollEvidence(m.opts.Evidence, evidencePoll))
	}
	return m, tea.Batch(cmds...)
}

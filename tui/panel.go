package tui

import (
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/nemo-gym/gymtrace/gate/filter"
	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/gate/whatif"
	"github.com/nemo-gym/gymtrace/model"
)

// slot is an area of the screen. Focus moves between slots; each shows its
// base panel, or the overlay opened over it.
type slot uint8

const (
	slotRollouts slot = iota
	slotTrace
	slotGroups
	numSlots
)

// String names the slot.
func (s slot) String() string {
	switch s {
	case slotTrace:
		return "trace"
	case slotGroups:
		return "groups"
	}
	return "rollouts"
}

// panel is the contract every panel keeps. The root model sizes it, hands it
// the keys while its slot has focus (before the global keys, so a panel may
// give a key its own meaning), draws its view, and shows its own keys in the
// footer and on the help screen. Data reaches it through refresh.
type panel interface {
	slot() slot
	// name titles the panel's section of the help screen.
	name() string
	setSize(w, h int)
	// refresh follows a change of the shared state; a panel re-derives only
	// what depends on what changed.
	refresh(e *env)
	// handle takes a key while the panel has focus and reports whether it
	// used it; unused keys go on to the global bindings.
	handle(km tea.KeyMsg, e *env) (bool, tea.Cmd)
	// capturing reports an open text input: it then gets every key.
	capturing() bool
	view() string
	// help lists the panel's own keys, most used first.
	help() []key.Binding
	scroll(n int)
	click(y int)
}

// updater is a panel with messages of its own, the results of the
// commands it requested: the root offers it every message it does not
// route itself, whatever the focus, and follows one it took (true) as it
// follows a key.
type updater interface {
	update(msg tea.Msg) bool
}

// requester is a panel that computes off the UI goroutine: after every
// change the root asks it for the command its state now needs, nil when
// none (it is current, closed, or one of its commands still runs).
type requester interface {
	request(e *env) tea.Cmd
}

// overlay is a panel shown over its slot's base panel while open. Its opener
// is a global key: pressing it opens the overlay (and focuses its slot) or,
// when it is already in front, closes it.
type overlay interface {
	panel
	opener() key.Binding
	isOpen() bool
	// open shows the overlay for the current state; false when there is
	// nothing to show (no span selected, say).
	open(e *env) bool
	close()
}

// env is the state every panel may read, kept by the root model. Panels
// must treat it as read-only.
type env struct {
	reg              *groups.Registry
	snap             *model.Snapshot
	current, preview groups.Set
	rollout          *model.Rollout     // the rollout list's selection
	sim              *whatif.RolloutSim // rollout classified under every group
	cur, prev        *whatif.Report     // the current and previewed spec's reports
	check            *whatif.CheckReport
	marked           *model.Rollout // marked for comparison (m), nil when none
	// rsnap is the snapshot the rollout list shows (rollouts found by
	// structure); rows the rollouts it lists, filtered and sorted.
	rsnap *model.Snapshot
	rows  []*model.Rollout
	where *filter.Filter // the list's compiled filter, nil when none
	// The waterfall's cursor span, when on a span.
	frag    *model.Fragment
	fragIdx int
	spanIdx int
	hasSpan bool
	group   string // the cursor span's group name, "" until classified
}

// basePanel gives a panel the contract's no-op defaults; panels embed it and
// override what they use.
type basePanel struct{}

func (basePanel) refresh(*env)        {}
func (basePanel) capturing() bool     { return false }
func (basePanel) help() []key.Binding { return nil }
func (basePanel) scroll(int)          {}
func (basePanel) click(int)           {}

// front is the panel drawn in s: the open overlay, else the base panel.
func (m *Model) front(s slot) panel {
	var base panel
	for _, p := range m.panels {
		if p.slot() != s {
			continue
		}
		if o, ok := p.(overlay); ok {
			if o.isOpen() {
				return o
			}
			continue
		}
		if base == nil {
			base = p
		}
	}
	return base
}

// closeOverlays closes every overlay of s.
func (m *Model) closeOverlays(s slot) {
	for _, p := range m.panels {
		if o, ok := p.(overlay); ok && p.slot() == s {
			o.close()
		}
	}
}

// toggleOverlay opens o over its slot, or closes it when it is in front.
func (m *Model) toggleOverlay(o overlay) {
	if o.isOpen() && m.front(o.slot()) == o {
		o.close()
		return
	}
	m.closeOverlays(o.slot())
	m.syncEnv()
	if o.open(&m.env) {
		m.setFocus(o.slot())
	}
}

// matchesAny reports whether km is one of bs.
func matchesAny(km tea.KeyMsg, bs ...key.Binding) bool {
	for _, b := range bs {
		if key.Matches(km, b) {
			return true
		}
	}
	return false
}

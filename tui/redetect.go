package tui

import (
	tea "github.com/charmbracelet/bubbletea"
	"github.com/nemo-gym/gymtrace/model"
)

// rebuild starts the interface over with o, keeping the window size: a live
// capture told the Gym variant only once spans arrived, and the registry,
// the spec read under it and every panel built on them change with it. It
// happens with the first spans, before the user has done much.
func (m Model) rebuild(o Options, s *model.Snapshot) (tea.Model, tea.Cmd) {
	o.Redetect = nil
	n := New(o)
	n.width, n.height = m.width, m.height
	n.rate = m.rate
	n.layout()
	n.status = "variant from the capture: " + o.Variant
	return n.setSnapshot(s)
}

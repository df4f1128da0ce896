package tui

import (
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
)

// groupsSlot puts the span-groups panel under the panel contract.
type groupsSlot struct {
	basePanel
	groupsPanel
}

func (g *groupsSlot) slot() slot      { return slotGroups }
func (g *groupsSlot) name() string    { return "span groups" }
func (g *groupsSlot) view() string    { return g.out }
func (g *groupsSlot) capturing() bool { return g.inputting }
func (g *groupsSlot) setSize(w, h int) {
	g.groupsPanel = g.SetSize(w, h)
}
func (g *groupsSlot) scroll(n int) { g.groupsPanel = g.Scroll(n) }
func (g *groupsSlot) click(y int)  { g.groupsPanel = g.Click(y) }

func (g *groupsSlot) help() []key.Binding {
	k := g.keys
	return []key.Binding{k.Toggle, k.Default, k.PerRoll, k.All, k.Spec, k.More, k.Fewer, k.Copy, k.Up, k.Down, k.PageUp, k.PageDown}
}

func (g *groupsSlot) handle(km tea.KeyMsg, _ *env) (bool, tea.Cmd) {
	k := g.keys
	if !g.inputting && !matchesAny(km, k.Up, k.Down, k.Top, k.Bottom, k.PageUp, k.PageDown, k.Toggle, k.Expand) {
		return false, nil
	}
	var cmd tea.Cmd
	g.groupsPanel, cmd = g.Update(km)
	return true, cmd
}

package tui

import (
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/viewport"
	tea "github.com/charmbracelet/bubbletea"
)

// pager is a titled block of lines scrolled by bubbles' viewport. The span
// detail and the statistics views embed it and only build the lines.
type pager struct {
	basePanel
	st   *Styles
	keys *KeyMap

	width, height int
	title         string
	more          []titlePart // said after the title while they fit (counts)
	hint          string      // how to leave, after the title ("esc back")
	lines         []string    // already fitted to width
	vp            viewport.Model
	opened        bool
}

func newPager(st *Styles, keys *KeyMap, hint string) pager {
	vp := viewport.New(0, 0)
	// The root's movement keys drive it; the viewport's own map is unused.
	vp.KeyMap = viewport.KeyMap{}
	vp.MouseWheelEnabled = false
	return pager{st: st, keys: keys, hint: hint, vp: vp}
}

func (p *pager) slot() slot   { return slotTrace }
func (p *pager) isOpen() bool { return p.opened }
func (p *pager) close()       { p.opened = false }
func (p *pager) view() string { return p.render() }
func (p *pager) scroll(n int) { p.move(n) }
func (p *pager) setLines(ls []string) {
	p.lines = ls
	p.vp.SetContent(strings.Join(ls, "\n"))
}

func (p *pager) resize(w, h int) {
	p.width, p.height = w, h
	p.vp.Width, p.vp.Height = max(w, 0), max(h-1, 0)
	p.vp.SetContent(strings.Join(p.lines, "\n"))
}

func (p *pager) move(n int) {
	if n > 0 {
		p.vp.ScrollDown(n)
	} else if n < 0 {
		p.vp.ScrollUp(-n)
	}
}

func (p *pager) help() []key.Binding {
	return []key.Binding{p.keys.Up, p.keys.Down, p.keys.PageUp, p.keys.PageDown, p.keys.Top, p.keys.Bottom}
}

// handle applies a movement key.
func (p *pager) handle(km tea.KeyMsg, _ *env) (bool, tea.Cmd) {
	page := max(p.vp.Height, 1)
	switch {
	case key.Matches(km, p.keys.Up):
		p.move(-1)
	case key.Matches(km, p.keys.Down):
		p.move(1)
	case key.Matches(km, p.keys.Top):
		p.vp.GotoTop()
	case key.Matches(km, p.keys.Bottom):
		p.vp.GotoBottom()
	case key.Matches(km, p.keys.PageUp):
		p.move(-page)
	case key.Matches(km, p.keys.PageDown):
		p.move(page)
	default:
		return false, nil
	}
	return true, nil
}

// render draws the title line and the visible lines; the viewport cuts to
// the window, so this is cheap whatever the length.
func (p *pager) render() string {
	if p.width <= 0 || p.height <= 0 {
		return ""
	}
	// On a narrow panel the counts give way first, then how to leave (the
	// footer says it too), never which lines show.
	parts := append(append([]titlePart(nil), p.more...), titlePart{p.hint, 2})
	if n := len(p.lines); n > p.vp.Height && p.vp.Height > 0 {
		parts = append(parts, titlePart{itoa(p.vp.YOffset+1) + "–" + itoa(min(p.vp.YOffset+p.vp.Height, n)) + " of " + itoa(n), 1})
	}
	return p.st.Panel.Title.Render(fitTitle(p.width, p.title, parts)) + "\n" + p.vp.View()
}

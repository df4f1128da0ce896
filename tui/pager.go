package tui

import (
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
)

// pager is a titled block of lines that scrolls with the movement keys. The
// span detail and the statistics views embed it and only build the lines.
type pager struct {
	st   *Styles
	keys *KeyMap

	width, height int
	title         string
	hint          string   // how to leave, after the title ("esc back")
	lines         []string // already fitted to width
	offset        int
	out           string
}

// scroll applies a movement key; it reports whether the key was one.
func (p *pager) scroll(msg tea.Msg) bool {
	km, ok := msg.(tea.KeyMsg)
	if !ok {
		return false
	}
	page := max(p.height-1, 1)
	switch {
	case key.Matches(km, p.keys.Up):
		p.offset--
	case key.Matches(km, p.keys.Down):
		p.offset++
	case key.Matches(km, p.keys.Top):
		p.offset = 0
	case key.Matches(km, p.keys.Bottom):
		p.offset = len(p.lines)
	case key.Matches(km, p.keys.PageUp):
		p.offset -= page
	case key.Matches(km, p.keys.PageDown):
		p.offset += page
	default:
		return false
	}
	p.render()
	return true
}

func (p *pager) render() {
	if p.width <= 0 || p.height <= 0 {
		p.out = ""
		return
	}
	h := p.height - 1
	p.offset = clamp(p.offset, 0, max(len(p.lines)-h, 0))
	lines := []string{p.st.Panel.Title.Render(clip(p.title+" · "+p.hint, p.width))}
	for i := p.offset; i < len(p.lines) && i < p.offset+h; i++ {
		lines = append(lines, clip(p.lines[i], p.width))
	}
	p.out = padLines(lines, p.height)
}

// View returns the rendered content.
func (p pager) View() string { return p.out }

package tui

import (
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
)

// listCursor is the cursor of a list panel (rollouts, waterfall, span
// groups) and the first row its window shows: one model of movement, so
// the keys, the mouse and scrolling mean the same in each.
type listCursor struct {
	cursor, offset int
}

// moveKey applies a movement key over n rows with a page of page rows; it
// reports whether km was one. The cursor is left in [0, n).
func (c *listCursor) moveKey(k *KeyMap, km tea.KeyMsg, n, page int) bool {
	page = max(page, 1)
	switch {
	case key.Matches(km, k.Up):
		c.cursor--
	case key.Matches(km, k.Down):
		c.cursor++
	case key.Matches(km, k.Top):
		c.cursor = 0
	case key.Matches(km, k.Bottom):
		c.cursor = n - 1
	case key.Matches(km, k.PageUp):
		c.cursor -= page
	case key.Matches(km, k.PageDown):
		c.cursor += page
	default:
		return false
	}
	c.clampTo(n)
	return true
}

// clampTo keeps the cursor on one of n rows (on 0 when there are none).
func (c *listCursor) clampTo(n int) { c.cursor = clamp(c.cursor, 0, n-1) }

// rowAt is the row at content line y below head lines of title and
// column headers, or -1 above them or past the last of n rows.
func (c *listCursor) rowAt(y, head, n int) int {
	if i := y - head + c.offset; y >= head && i < n {
		return i
	}
	return -1
}

// follow moves the window of h rows over n as little as keeps the cursor
// in it, and returns the first row shown.
func (c *listCursor) follow(h, n int) int {
	c.offset = window(c.cursor, c.offset, h, n)
	return c.offset
}

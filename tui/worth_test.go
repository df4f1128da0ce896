package tui

import (
	"fmt"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// TestWorthColumnsFitContent: with room to spare the cost and worth view
// gives each column the width its cells need, so a join count of three
// digits is shown whole at 120 columns; on 80 columns each row still fits.
func TestWorthColumnsFitContent(t *testing.T) {
	for _, sz := range []struct{ w, h int }{{80, 24}, {120, 40}, {200, 50}} {
		t.Run(fmt.Sprintf("%dx%d", sz.w, sz.h), func(t *testing.T) {
			b := newBuilder(t)
			b.capture(t, 120, false)
			m := newTestModel(t, b, sz.w, sz.h, "default")
			m = keys(t, m, "w")
			if !m.worth.have {
				t.Fatal("no rows")
			}
			kept := 0
			for _, g := range m.worth.rows {
				if !g.KeepsJoins {
					continue
				}
				kept++
				want := fmt.Sprintf("keeps (%d vs %d)", g.JoinedWith, g.JoinedWithout)
				found := false
				for _, l := range m.worth.lines {
					l = ansi.Strip(l)
					if w := ansi.StringWidth(l); w > m.worth.width {
						t.Errorf("line %d cells wide, panel %d: %q", w, m.worth.width, l)
					}
					if strings.HasPrefix(l, " "+m.reg.Name(g.Group)+" ") && strings.Contains(l, want) {
						found = true
					}
				}
				if sz.w >= 120 && !found {
					t.Errorf("%s: %q not shown whole:\n%s", m.reg.Name(g.Group), want, ansi.Strip(strings.Join(m.worth.lines, "\n")))
				}
			}
			if kept == 0 {
				t.Fatal("no group keeps joins: the test shows nothing")
			}
		})
	}
}

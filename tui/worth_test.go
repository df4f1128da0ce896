package tui

import (
	"fmt"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
	"github.com/nemo-gym/gymtrace/gate/whatif"
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

// TestBudgetNarrowAndWide: at 80×24 the short span groups panel says the
// budget's verdict for both specs, and the cost and worth view says the
// budget's sentence whole, wrapped; at 120×40 that sentence is one line.
func TestBudgetNarrowAndWide(t *testing.T) {
	withBudget := func(o *Options) {
		b, err := whatif.ParseBudget("2GB/day")
		if err != nil {
			t.Fatal(err)
		}
		o.Budget = &b
	}
	m := realModelWith(t, "s41-obs0-iso/all", 80, 24, "default", withBudget)
	m = keys(t, m, "3")
	cur, prev := m.opts.Budget.Judge(m.groups.curRep, 0), m.opts.Budget.Judge(m.groups.prevRep, 0)
	want := "budget " + prev.Against() + ": " + cur.Brief() + " → " + prev.Brief()
	if v := ansi.Strip(m.View()); !strings.Contains(v, "│"+want) {
		t.Errorf("the short span groups lack %q:\n%s", want, v)
	}
	for _, sz := range []struct{ w, h, lines int }{{80, 24, 2}, {120, 40, 1}} {
		m := realModelWith(t, "s41-obs0-iso/all", sz.w, sz.h, "default", withBudget)
		m = keys(t, m, "w")
		sentence := m.opts.Budget.Judge(m.worth.prev, 0).String()
		var got []string
		for _, l := range m.worth.lines[:sz.lines] {
			got = append(got, strings.TrimSpace(ansi.Strip(l)))
		}
		if strings.Join(got, " ") != sentence || strings.TrimSpace(ansi.Strip(m.worth.lines[sz.lines])) != "" {
			t.Errorf("%dx%d: the verdict reads %q, want %q in %d lines", sz.w, sz.h, got, sentence, sz.lines)
		}
	}
}

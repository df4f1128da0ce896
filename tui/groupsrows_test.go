package tui

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
	"github.com/nemo-gym/gymtrace/gate/groups"
)

// groupRow is a row of the span groups list: a group's name and captured
// spans.
var groupRow = regexp.MustCompile(`^[ ›](?:\[[x ]\]|   ) ([a-z_.]+)\*?\s+(\d+)\s+(?:\d+|–|…)\s+(?:\d+|–|…)`)

// TestRealGymGroupRowsAddUp: on the capture NeMo-RL drove (the aiohttp
// instrumentation on, spans no rule matches), the span groups list has a
// row for every group with spans, the aiohttp and unclassified ones too,
// their captured spans add up to the header's, and moving the cursor down
// to the last group brings every row into view, at 120×40 and 80×24.
func TestRealGymGroupRowsAddUp(t *testing.T) {
	for _, size := range [][2]int{{120, 40}, {80, 24}} {
		m := realModel(t, "s61-rl-iso/rl-all", size[0], size[1], "default")
		total := m.snap.Stats.Stored
		if head := strings.Split(ansi.Strip(m.View()), "\n")[1]; !strings.HasPrefix(head, "spans "+strconv.Itoa(int(total))+" ") {
			t.Fatalf("header %q, want %d spans", head, total)
		}
		want := map[string]int{}
		for _, c := range m.groups.prevRep.PerGroup {
			if c.Captured > 0 {
				want[m.reg.Name(c.Group)] = c.Captured
			}
		}
		for _, g := range []groups.Group{groups.Ungated, groups.Unclassified} {
			if want[m.reg.Name(g)] == 0 {
				t.Fatalf("the capture has no %s spans: %v", m.reg.Name(g), want)
			}
		}
		m = keys(t, m, "tab", "tab")
		if m.focus != slotGroups {
			t.Fatalf("focus %v", m.focus)
		}
		seen := map[string]int{}
		// Down as far as the cursor goes, to the last group: the rows after
		// it, which it never selects, come into view with it.
		for range len(m.reg.Groups()) {
			for _, l := range strings.Split(ansi.Strip(m.groups.view()), "\n") {
				if f := groupRow.FindStringSubmatch(strings.Trim(l, "│┃")); f != nil {
					seen[f[1]], _ = strconv.Atoi(f[2])
				}
			}
			m = keys(t, m, "down")
		}
		sum := 0
		for name, n := range seen {
			sum += n
			if want[name] != n {
				t.Errorf("%dx%d: row %s has %d spans, the preview %d", size[0], size[1], name, n, want[name])
			}
		}
		for name, n := range want {
			if _, ok := seen[name]; !ok {
				t.Errorf("%dx%d: no row reached for %s (%d spans)", size[0], size[1], name, n)
			}
		}
		if sum != int(total) {
			t.Errorf("%dx%d: the rows add up to %d spans, the header says %d: %v", size[0], size[1], sum, total, seen)
		}
	}
}

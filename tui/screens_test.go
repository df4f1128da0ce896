package tui

import (
	"regexp"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/internal/golden"
)

func TestScreens(t *testing.T) {
	tests := []struct {
		name    string
		w, h    int
		current string
		job     bool
		keys    []string
		text    string // typed after keys
		after   []string
		metric  int64 // concurrency metric points received
	}{
		{name: "list-80x24", w: 80, h: 24, current: "default"},
		{name: "list-120x40", w: 120, h: 40, current: "default", job: true},
		{name: "narrow-60x30", w: 60, h: 30, current: "default"},
		{name: "tree-120x40", w: 120, h: 40, current: "all", keys: []string{"down", "tab"}},
		{name: "tree-collapsed-120x40", w: 120, h: 40, current: "all", keys: []string{"tab", "down", "down", "down", "enter"}},
		{name: "tree-80x24", w: 80, h: 24, current: "all", keys: []string{"tab", "down", "down", "down"}},
		{name: "groups-120x40", w: 120, h: 40, current: "all", job: true, keys: []string{"2", "tab", "tab", "down", "down", " "}},
		{name: "groups-80x24", w: 80, h: 24, current: "default", job: true, keys: []string{"shift+tab", "down", " "}},
		{name: "preview-120x40", w: 120, h: 40, current: "all", keys: []string{"2", "tab", "tab", "down", "down", " ", "shift+tab", "p"}},
		{name: "help-120x40", w: 120, h: 40, current: "default", keys: []string{"?"}},
		{name: "filter-120x40", w: 120, h: 40, current: "default", keys: []string{"/"}, text: "error"},
		{name: "filter-applied-120x40", w: 120, h: 40, current: "default", keys: []string{"/"}, text: "r0002", after: []string{"enter"}},
		{name: "spec-error-120x40", w: 120, h: 40, current: "default", keys: []string{":"}, text: "default,defualt,sandbox", after: []string{"enter"}},
		{name: "spec-error-80x24", w: 80, h: 24, current: "default", keys: []string{"i"}, text: "default,verfy", after: []string{"enter"}},
		{name: "detail-120x40", w: 120, h: 40, current: "all", keys: []string{"down", "tab", "G", "d"}},
		{name: "stats-120x40", w: 120, h: 40, current: "all", keys: []string{"t"}},
		{name: "list-200x50", w: 200, h: 50, current: "default", job: true},
		{name: "tree-200x50", w: 200, h: 50, current: "all", keys: []string{"down", "tab"}},
		{name: "help-80x24", w: 80, h: 24, current: "default", keys: []string{"?"}},
		{name: "help-trace-200x50", w: 200, h: 50, current: "default", keys: []string{"tab", "?"}},
		{name: "search-120x40", w: 120, h: 40, current: "all", keys: []string{"down", "down", "tab", "/"}, text: "gym.model", after: []string{"enter", "n"}},
		{name: "search-typing-80x24", w: 80, h: 24, current: "all", keys: []string{"tab", "/"}, text: "verify"},
		{name: "break-80x24", w: 80, h: 24, current: "all", keys: []string{"2", "shift+tab", "down", "down", " "}},
		{name: "break-120x40", w: 120, h: 40, current: "all", keys: []string{"2", "shift+tab", "down", "down", " "}},
		{name: "worth-80x24", w: 80, h: 24, current: "default", keys: []string{"3", "w"}},
		{name: "worth-120x40", w: 120, h: 40, current: "default", keys: []string{"w"}},
		{name: "groups-metric-120x40", w: 120, h: 40, current: "per_rollout", metric: 1234, keys: []string{"2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder(t)
			b.st.Count(tc.metric, 0)
			b.st.CountMetric(groups.ConcurrencyMetric, tc.metric)
			b.capture(t, 6, tc.job)
			m := newTestModel(t, b, tc.w, tc.h, tc.current)
			m = keys(t, m, tc.keys...)
			m = typeText(t, m, tc.text)
			m = keys(t, m, tc.after...)
			got := m.View()
			if strings.Contains(got, "\x1b[") {
				t.Errorf("view has escape codes with the ASCII profile")
			}
			lines := strings.Split(got, "\n")
			if len(lines) != tc.h {
				t.Errorf("view has %d lines, want %d", len(lines), tc.h)
			}
			for i, l := range lines {
				if w := ansi.StringWidth(l); w > tc.w {
					t.Errorf("line %d is %d cells wide, want ≤ %d: %q", i, w, tc.w, l)
				}
			}
			// From 120 columns on, no verdict or figure of the comparison is cut.
			if tc.w >= 120 {
				row := regexp.MustCompile(`(joining|× \S+ rollouts|rate|bytes|traces|spans)\s{2,}`)
				for _, l := range lines {
					if loc := row.FindStringIndex(l); loc != nil && strings.Contains(l[loc[0]:], "…") && !strings.Contains(l[loc[0]:], "… pending") {
						t.Errorf("cut figure: %q", l)
					}
				}
			}
			golden.Check(t, []byte(got))
		})
	}
}

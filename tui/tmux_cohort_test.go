package tui_test

import (
	"regexp"
	"strings"
	"testing"
)

// TestTmuxCohort compares real Gym's failing rollouts with the others at
// 80×24: the cohort takes the screen's height, j moves its cursor, and
// the cursor's feature is said below the rows.
func TestTmuxCohort(t *testing.T) {
	bin := tmuxBinary(t)
	s := startTmux(t, t.TempDir(), bin+" open "+realConsole(t, "s41-obs0-iso/all"), 80, 24)
	s.waitFor("the join check", regexp.MustCompile(`✓ joined`))
	s.keys("/")
	s.tmux("send-keys", "-t", "gt", "-l", "status=error")
	s.keys("Enter", "C")
	s.waitFor("the cohort", regexp.MustCompile(`Cohort status=error · 1 of \d+`))
	s.keys("j", "j", "j")
	scr := s.waitFor("the cursor on the fourth row", regexp.MustCompile(`Cohort status=error · 4 of \d+`))
	rows := regexp.MustCompile(`(?m)^┃[ ›] [+-][01]\.\d\d `).FindAllString(scr, -1)
	if len(rows) < 5 || !strings.Contains(scr, "┃› ") {
		t.Errorf("%d rows, cursor shown %v:\n%s", len(rows), strings.Contains(scr, "┃› "), scr)
	}
	if !regexp.MustCompile(`(?m)^┃─+┃\n┃ \S+ .*\n(┃ .*\n)*┃   effect [+-]\d\.\d\d: `).MatchString(scr) {
		t.Errorf("no detail below the rows:\n%s", scr)
	}
	s.keys("q")
	s.waitFor("exit", regexp.MustCompile(`GYMTRACE-EXITED`))
}

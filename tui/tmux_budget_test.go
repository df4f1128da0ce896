package tui_test

import (
	"regexp"
	"strings"
	"testing"
)

// TestTmuxBudgetOneLine opens real Gym's logs with a budget at 120×40 and
// previews all: the span groups say the budget on one line and each
// spec's verdict on the next, neither going on to a third.
func TestTmuxBudgetOneLine(t *testing.T) {
	bin := tmuxBinary(t)
	s := startTmux(t, t.TempDir(), bin+" open --budget 30spans/rollout "+realConsole(t, "s41-obs0-iso/all"), 120, 40)
	s.waitFor("the join check", regexp.MustCompile(`✓ joined`))
	s.keys("3")
	cell := `misses by \d+(\.\d+)? \(\d+(\.\d+)?\)`
	scr := s.waitFor("the budget's verdicts", regexp.MustCompile(`budget {10}30 spans/rollout +│\n.* {17}`+cell+` +`+cell+` +│\n`))
	lines := strings.Split(scr, "\n")
	for i, l := range lines {
		if !strings.Contains(l, "budget          30 spans/rollout") || i+2 >= len(lines) {
			continue
		}
		at := strings.Index(l, "budget")
		// The line after the verdicts starts no third line of them.
		if next := lines[i+2]; len(next) > at+16 && strings.TrimSpace(next[at:at+16]) == "" && strings.HasPrefix(strings.TrimSpace(next[at+16:]), "(") {
			t.Errorf("a verdict goes on to a third line:\n%s", scr)
		}
	}
	s.keys("q")
	s.waitFor("exit", regexp.MustCompile(`GYMTRACE-EXITED`))
}

// TestTmuxRecommendTypedBudget: without --budget, r asks for one on the
// footer line; a budget that does not read says why, and one that does
// is searched and its spec previewed.
func TestTmuxRecommendTypedBudget(t *testing.T) {
	bin := tmuxBinary(t)
	s := startTmux(t, t.TempDir(), bin+" open "+realConsole(t, "s41-obs0-iso/all"), 120, 40)
	s.waitFor("the join check", regexp.MustCompile(`✓ joined`))
	s.keys("r")
	s.waitFor("the prompt", regexp.MustCompile(`(?m)^budget to recommend a spec for: e\.g\. 50spans/rollout`))
	s.tmux("send-keys", "-t", "gt", "-l", "50 furlongs/rollout")
	s.keys("Enter")
	s.waitFor("the problem", regexp.MustCompile(`(?m)^budget to recommend a spec for: 50 furlongs/rollout +✗ unknown unit "furlongs"`))
	s.keys("Escape")
	s.waitFor("the prompt gone", regexp.MustCompile(`(?m)^no budget typed: nothing recommended`))
	s.keys("r")
	s.tmux("send-keys", "-t", "gt", "-l", "50spans/rollout")
	s.keys("Enter")
	s.waitFor("the recommendation", regexp.MustCompile(`(?m)^recommended \S+: \d+\.\d+ spans/rollout, keeps`))
	s.waitFor("the budget judged", regexp.MustCompile(`budget {10}50 spans/rollout`))
	s.keys("q")
	s.waitFor("exit", regexp.MustCompile(`GYMTRACE-EXITED`))
}

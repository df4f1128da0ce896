package tui_test

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestTmuxEvidence opens a real Gym capture with its outcome files as a
// person would, at 80×24 and 120×40: the header says what joined, the list
// shows rewards and failure classes, the filter keeps the rollouts
// rewarded 0, and the reward sort brings them first.
func TestTmuxEvidence(t *testing.T) {
	bin := tmuxBinary(t)
	dir := t.TempDir()
	ev, err := filepath.Abs(filepath.Join("..", "testdata", "real-gym", "s41-obs1-iso", "all", "evidence-perf"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := bin + " open --evidence " + ev + " " + realConsole(t, "s41-obs1-iso/all")
	s := startTmux(t, dir, cmd, 120, 40)
	scr := s.waitFor("the join of the files", regexp.MustCompile(`evidence 20/20 joined`))
	if !strings.Contains(scr, "reward") || !strings.Contains(scr, "http_error") {
		t.Errorf("no reward or failure column at 120×40:\n%s", scr)
	}
	s.keys("/")
	s.tmux("send-keys", "-t", "gt", "-l", "reward=0")
	s.keys("Enter")
	scr = s.waitFor("the filtered list", regexp.MustCompile(`Rollouts 4/20`))
	rows := regexp.MustCompile(`(?m)^┃[ ›★]\d+-0 .* ✓ joined +0 (ok|healthy|unhealthy)`).FindAllString(scr, -1)
	if len(rows) != 4 {
		t.Errorf("%d rows rewarded 0 under reward=0, want 4:\n%s", len(rows), scr)
	}
	s.keys("q")
	s.waitFor("exit", regexp.MustCompile(`GYMTRACE-EXITED`))

	s.tmux("resize-window", "-t", "gt", "-x", "80", "-y", "24")
	s.tmux("respawn-pane", "-k", "-t", "gt", "-c", dir, cmd+"; echo GYMTRACE-EXITED; sleep 600")
	s.waitFor("the join of the files at 80×24", regexp.MustCompile(`evidence 20/20`))
	for i := 0; i < 6; i++ {
		s.keys("s")
	}
	scr = s.waitFor("the reward sort", regexp.MustCompile(`sort: lowest reward`))
	first := regexp.MustCompile(`(?m)^[│┃]›(\d+-0) .*`).FindStringSubmatch(scr)
	if first == nil || !regexp.MustCompile(`joined +0 `).MatchString(first[0]) {
		t.Errorf("the reward sort does not start with a rollout rewarded 0:\n%s", scr)
	}
	s.keys("q")
	s.waitFor("exit", regexp.MustCompile(`GYMTRACE-EXITED`))
}

// TestTmuxDemoShowsRewards: the demo on screen, with no flag, joins the
// fleet's own rollout files and shows their rewards.
func TestTmuxDemoShowsRewards(t *testing.T) {
	bin := tmuxBinary(t)
	s := startTmux(t, t.TempDir(), bin+" demo --grpc-addr 127.0.0.1:0 --http-addr 127.0.0.1:0 --rollouts 12 --rate 20 --latency 1ms --batch-timeout 100ms", 120, 40)
	scr := s.waitFor("the fleet's rewards", regexp.MustCompile(`evidence [1-9]\d*/\d+ joined[\s\S]*reward avg`))
	if !strings.Contains(scr, "reward outcome") {
		t.Errorf("no reward column in the demo:\n%s", scr)
	}
	s.keys("q")
	s.waitFor("exit", regexp.MustCompile(`GYMTRACE-EXITED`))
}

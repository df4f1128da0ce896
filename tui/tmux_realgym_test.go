package tui_test

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// realConsole returns the absolute paths of a real-Gym capture's console logs.
func realConsole(t *testing.T, name string) string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "testdata", "real-gym", name, "console", "*.log.gz"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no console logs for %s: %v", name, err)
	}
	for i, f := range files {
		if files[i], err = filepath.Abs(f); err != nil {
			t.Fatal(err)
		}
	}
	return strings.Join(files, " ")
}

// TestTmuxRealGymSizes opens real Gym's logs as a person at a small and a
// common terminal would: at 80×24 a capture taken with http_client off
// shows how many hops break and the first one's finding and fixes whole;
// at 120×40 with the waterfall focused, the narrowed rollout list still
// tells the rollouts of one run trace apart, and the search keeps its hit
// count in view.
func TestTmuxRealGymSizes(t *testing.T) {
	bin := tmuxBinary(t)
	dir := t.TempDir()

	s := startTmux(t, dir, bin+" open "+realConsole(t, "s41-obs0-iso/spec-server+rollout+verify"), 80, 24)
	scr := s.waitFor("the short what-if", regexp.MustCompile(`joining ✓ intact 20/20 \(both\) · as captured: ✗ 20/20 split · 9 broken hops`))
	// Four long paths: the header still names the spec in force and the variant.
	if l1 := strings.SplitN(scr, "\n", 2)[0]; !strings.Contains(l1, "open agent.log.gz ") || !regexp.MustCompile(`· current default · Gym G\w+`).MatchString(l1) {
		t.Errorf("the 80-column header drops the files, the spec or the variant: %q", l1)
	}
	// The first hop is said whole, wrapped within the panel.
	flat := strings.Join(strings.Fields(strings.NewReplacer("│", " ", "┃", " ").Replace(scr)), " ")
	if !strings.Contains(flat, "✗ in capture ? → policy_model (POST /v1/responses): no CLIENT span calls it (http_client off? server off?)") {
		t.Errorf("the first broken hop's finding and fixes are cut at 80×24:\n%s", scr)
	}
	s.keys("q")
	s.waitFor("exit", regexp.MustCompile(`GYMTRACE-EXITED`))

	// The same terminal, grown to 120×40, opens a capture with job on.
	s.tmux("resize-window", "-t", "gt", "-x", "120", "-y", "40")
	s.tmux("respawn-pane", "-k", "-t", "gt", "-c", dir, bin+" open "+realConsole(t, "s41-obs0-iso/all")+"; echo GYMTRACE-EXITED; sleep 600")
	s.waitFor("the join check", regexp.MustCompile(`✓ joined`))
	s.keys("Tab")
	scr = s.waitFor("the focused waterfall", regexp.MustCompile(`(?m)^│›…[0-9a-f]+`))
	seen := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^│[ ›★](…[0-9a-f]+…?) `).FindAllStringSubmatch(scr, -1) {
		if seen[m[1]] {
			t.Errorf("two rollouts read %q in the narrowed list:\n%s", m[1], scr)
		}
		seen[m[1]] = true
	}
	if len(seen) < 10 {
		t.Errorf("%d rollouts told apart in the narrowed list:\n%s", len(seen), scr)
	}
	s.keys("/")
	s.tmux("send-keys", "-t", "gt", "-l", "gym.verify")
	s.keys("Enter")
	s.waitFor("the search's hit count in the title", regexp.MustCompile(`Trace .* · /gym\.verify 1/1`))
	s.keys("q")
	s.waitFor("exit", regexp.MustCompile(`GYMTRACE-EXITED`))
}

// TestTmuxNarrowIDsOfFewTraces opens a capture where several rollouts
// share each trace (a context carried over between rollouts), so the
// inferred ids of a trace all start "~<trace>/": at 120×40, with the
// list beside the waterfall and then narrowed by focusing the waterfall,
// no two rollout rows read alike.
func TestTmuxNarrowIDsOfFewTraces(t *testing.T) {
	bin := tmuxBinary(t)
	s := startTmux(t, t.TempDir(), bin+" open "+realConsole(t, "s41-obs0-leak/spec-per_rollout"), 120, 40)
	row := regexp.MustCompile(`(?m)^[┃│][ ›★]([~…]\S+) +(?:ok|! \d+) `)
	check := func(what string, scr string) {
		seen := map[string]bool{}
		for _, m := range row.FindAllStringSubmatch(scr, -1) {
			if seen[m[1]] {
				t.Errorf("%s: two rollouts read %q:\n%s", what, m[1], scr)
			}
			seen[m[1]] = true
		}
		if len(seen) < 15 {
			t.Errorf("%s: %d rollouts told apart, want 15 or more:\n%s", what, len(seen), scr)
		}
	}
	check("the list beside the waterfall", s.waitFor("the join check", regexp.MustCompile(`✗ split`)))
	s.keys("Tab")
	check("the narrowed list", s.waitFor("the focused waterfall", regexp.MustCompile(`(?m)^│›…[0-9a-f]+ `)))
	s.keys("q")
	s.waitFor("exit", regexp.MustCompile(`GYMTRACE-EXITED`))
}

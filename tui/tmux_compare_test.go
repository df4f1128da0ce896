package tui_test

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestTmuxCompareExport filters the rollouts by attribute, marks one,
// compares it with another, exports the selected rollout with x and reads
// the export back, as a person at the terminal would.
func TestTmuxCompareExport(t *testing.T) {
	bin := tmuxBinary(t)
	dir := t.TempDir()
	copyCapture(t, dir, "all.console.jsonl")
	s := startTmux(t, dir, bin+" open --spec all all.console.jsonl", 140, 45)
	s.waitFor("the rollout list", regexp.MustCompile(`Rollouts 6 `))
	s.waitFor("the join check", regexp.MustCompile(`✓ joined`))

	// The rollouts with no failing span: s3-r0004 and s3-r0005.
	s.keys("/")
	s.tmux("send-keys", "-t", "gt", "-l", "--", "-status=error")
	s.keys("Enter")
	scr := s.waitFor("the filtered list", regexp.MustCompile(`Rollouts 2/6 `))
	if strings.Contains(scr, "s3-r0001") || !strings.Contains(scr, "s3-r0004") || !strings.Contains(scr, "s3-r0005") {
		t.Errorf("-status=error lists the wrong rollouts:\n%s", scr)
	}

	// Mark the first, move to the second, compare.
	s.keys("m")
	first := s.waitFor("the mark", regexp.MustCompile(`marked (s3-r000[45]): select another`))
	a := regexp.MustCompile(`marked (s3-r000[45])`).FindStringSubmatch(first)[1]
	s.keys("j", "c")
	scr = s.waitFor("the comparison", regexp.MustCompile(`Compare A `+a+` \(marked\) · B s3-r000[45]`))
	for _, want := range []string{"first divergence under", "changed operations"} {
		if !strings.Contains(scr, want) {
			t.Errorf("the comparison lacks %q:\n%s", want, scr)
		}
	}
	b := regexp.MustCompile(`· B (s3-r000[45])`).FindStringSubmatch(scr)[1]
	s.keys("NPage", "NPage")
	s.waitFor("the spans only one has", regexp.MustCompile(`only in [AB] \(\d+\)`))
	if b == a {
		t.Fatalf("compared %s with itself", a)
	}

	// Export the selected rollout, then read the file back.
	s.keys("Escape")
	s.waitFor("the comparison closed", regexp.MustCompile(`Trace `+b))
	s.keys("x")
	out := filepath.Join(dir, "gymtrace-"+b+".jsonl")
	s.waitFor("the export status", regexp.MustCompile(`exported \d+ spans to `+regexp.QuoteMeta(out)))
	s.keys("q")
	s.waitFor("exit", regexp.MustCompile(`GYMTRACE-EXITED`))
	text, err := exec.Command(bin, "open", "--text", out).CombinedOutput()
	if err != nil {
		t.Fatalf("open the export: %v\n%s", err, text)
	}
	if !strings.Contains(string(text), "rollout "+b) || strings.Contains(string(text), "rollout "+a) {
		t.Errorf("the export does not hold %s alone:\n%s", b, text)
	}
}

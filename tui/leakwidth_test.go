package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// TestLeakMarkKeepsEvidence: the leak mark takes no room from the evidence
// columns: a list wide enough for them at 120 columns shows them beside
// the marks, the mark where their gap was.
func TestLeakMarkKeepsEvidence(t *testing.T) {
	m := evidenceModel(t, "s41-obs1-iso/all", 120, 40)
	before := ansi.Strip(m.rollouts.view())
	if !strings.Contains(before, "reward") {
		t.Fatalf("no evidence columns before any leak:\n%s", before)
	}
	id := listed(m)[0]
	m.rollouts.leaks = map[string]int{id: 1}
	m.layout()
	m.rollouts.render()
	v := ansi.Strip(m.rollouts.view())
	if !strings.Contains(v, "reward") || !strings.Contains(v, glyphLeak) {
		t.Errorf("with a leak the list lost its evidence columns or the mark:\n%s", v)
	}
	// Only the gap before the reward turned into the mark's column.
	b, a := strings.Split(before, "\n"), strings.Split(v, "\n")
	for i := range min(len(a), len(b)) {
		if strings.Replace(a[i], glyphLeak, " ", 1) != b[i] {
			t.Errorf("line %d\n%q, before the leak\n%q", i, a[i], b[i])
		}
	}
}

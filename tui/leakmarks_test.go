package tui

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// TestRealGymLeakMarks: on the capture whose keep-alive connections carry
// request contexts over, the rollout list marks each rollout that owns a
// context leak and no other, the header counts them with the figure check
// --json gives (context_leak_rollouts), and the waterfall marks each leaked
// request span: a rollout's marks are its leaks in check, and all of them
// the leaked spans the capture's truth records.
func TestRealGymLeakMarks(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	const capture = "s41-obs0-leak/all"
	var checked struct {
		Leaks        int `json:"context_leaks"`
		LeakRollouts int `json:"context_leak_rollouts"`
	}
	out, _ := exec.Command(cli(t), append([]string{"check", "--json"}, realFiles(t, capture)...)...).Output()
	if err := json.Unmarshal(out, &checked); err != nil {
		t.Fatalf("check --json: %v\n%s", err, out)
	}
	var truth struct {
		Leaked int `json:"leaked_server_spans"`
	}
	data, err := os.ReadFile(filepath.Join(realGym, capture, "summary.json"))
	if err != nil || json.Unmarshal(data, &truth) != nil || truth.Leaked == 0 {
		t.Fatalf("summary: %v %+v", err, truth)
	}
	if checked.Leaks != truth.Leaked || checked.LeakRollouts == 0 {
		t.Fatalf("check says %+v, the truth %d leaked spans", checked, truth.Leaked)
	}

	m := realModel(t, capture, 120, 40, "all")
	want := map[string]int{} // the leaks check counts in each rollout
	for id, rc := range m.check.ByRollout {
		for _, h := range rc.Hops {
			if h.Cause.Leak() {
				want[id] += h.Count
			}
		}
	}
	if len(want) != checked.LeakRollouts {
		t.Fatalf("%d rollouts with a leak hop, check --json says %d", len(want), checked.LeakRollouts)
	}
	for _, size := range [][2]int{{80, 24}, {120, 40}} {
		m := realModel(t, capture, size[0], size[1], "all")
		head := fmt.Sprintf("%s context leaks in %d rollouts", glyphLeak, checked.LeakRollouts)
		if v := strings.Split(ansi.Strip(m.View()), "\n"); len(v) < 2 || !strings.Contains(v[1], head) {
			t.Errorf("%dx%d: no %q in the header:\n%s", size[0], size[1], head, strings.Join(v, "\n"))
		}
	}

	marked, spans := 0, 0
	for i, r := range m.rollouts.rows {
		m.setFocus(slotRollouts)
		m.rollouts.setCursor(i)
		m = run(t, m, m.afterChange())
		row := ""
		for _, l := range strings.Split(ansi.Strip(m.rollouts.view()), "\n") {
			if strings.HasPrefix(strings.TrimLeft(l, "┃│"), "›") {
				row = l
			}
		}
		if has := strings.Contains(row, glyphLeak); has != (want[r.ID] > 0) {
			t.Errorf("%s with %d leaks: row %q", r.ID, want[r.ID], row)
		}
		if strings.Contains(row, glyphLeak) {
			marked++
		}
		tv := m.trace
		if isApart(r.ID) || tv.r == nil || tv.r.ID != r.ID {
			continue
		}
		c := layoutColumns(tv.width-tv.leakLead, tv.needName, tv.needSvc, tv.focused, !tv.st.Color)
		ax := newAxis(tv.r.End-tv.r.Start, c.bar)
		n := 0
		for j := range tv.rows {
			if strings.Contains(ansi.Strip(tv.renderRow(j, c, &ax)), glyphLeak) {
				n++
			}
		}
		if n != want[r.ID] {
			t.Errorf("%s: %d spans marked in the waterfall, check counts %d leaks", r.ID, n, want[r.ID])
		}
		spans += n
	}
	if marked != checked.LeakRollouts || spans != truth.Leaked {
		t.Errorf("%d rollouts and %d spans marked; check says %d rollouts, the truth %d spans", marked, spans, checked.LeakRollouts, truth.Leaked)
	}
}

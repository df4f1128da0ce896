package tui

import (
	"strings"
	"testing"

	"github.com/nemo-gym/gymtrace/gate/rollouts"
	"github.com/nemo-gym/gymtrace/gate/whatif"
)

// TestCutNoteIsTheBreaksCause: under a previewed spec the waterfall's
// "new trace" note before each cut span says the cause the preview cut that
// span for, never one read back off another break of the same name. In the
// leaking capture under server,rollout,verify one rollout has POST
// /search_web cut both for http_client off and as a carried-over context.
func TestCutNoteIsTheBreaksCause(t *testing.T) {
	m := realModel(t, "s41-obs0-leak/all", 120, 40, "all")
	m = keys(t, m, ":")
	m = typeText(t, m, "server,rollout,verify")
	m = keys(t, m, "enter")
	spec := m.groups.Preview()
	e := whatif.NewEngine(m.reg)
	carried := 0
	for i, r := range m.rollouts.rows {
		if isApart(r.ID) {
			continue
		}
		m.setFocus(slotRollouts)
		m.rollouts.setCursor(i)
		m = run(t, m, m.afterChange())
		m = keys(t, m, "enter")
		if !m.preview {
			m = keys(t, m, "p")
		}
		sim := e.SimulateRollout(m.snap, r, spec)
		tv := m.trace
		if tv.r == nil || tv.r.ID != r.ID || tv.simPrev == nil {
			t.Fatalf("%s: the waterfall shows %v", r.ID, tv.r)
		}
		for j, row := range tv.rows {
			if row.noteStyle != 1 || j+1 >= len(tv.rows) || !tv.rows[j+1].isSpan() {
				continue
			}
			next := tv.rows[j+1]
			sp := &r.Fragments[next.frag].Spans[next.idx]
			cause := sim.Frags[next.frag].Cut[next.idx]
			if cause == whatif.CauseNone {
				t.Errorf("%s: a note before %s, which the preview does not cut", r.ID, rollouts.DisplayName(m.snap.Interner(), sp))
				continue
			}
			if cause == whatif.CauseCarried {
				carried++
			}
			if !strings.Contains(row.note, "new trace: "+cause.Sentence()) {
				t.Errorf("%s: %s cut for %s, noted %q", r.ID, rollouts.DisplayName(m.snap.Interner(), sp), cause.Code(), row.note)
			}
		}
		m = keys(t, m, "esc")
	}
	if carried == 0 {
		t.Errorf("no carried-over context noted")
	}
}

package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
	"github.com/nemo-gym/gymtrace/model"
)

// f and F on a rollout with no failed span say so in the status line; on
// one with a failed span they go to it and say nothing.
func TestNextFailedSpanNone(t *testing.T) {
	b := newBuilder(t)
	b.capture(t, 6, false)
	for _, k := range []string{"f", "F"} {
		m := newTestModel(t, b, 120, 40, "default")
		if r := m.rollouts.Selected(); r == nil || r.Errors != 0 {
			t.Fatalf("the first rollout %+v, want one without errors", r)
		}
		m = keys(t, m, "tab", k)
		if v := ansi.Strip(m.View()); !strings.Contains(v, "no failed span in this rollout") {
			t.Errorf("%s with no failed span: the status line does not say so:\n%s", k, v)
		}
		m = keys(t, m, "shift+tab", "j", "tab", k) // r0001 fails
		fi, i, ok := m.trace.selectedRef()
		if !ok || m.trace.Rollout().Fragments[fi].Spans[i].Status != model.StatusError {
			t.Errorf("%s on a failing rollout: cursor not on a failed span", k)
		}
		if v := ansi.Strip(m.View()); strings.Contains(v, "no failed span") {
			t.Errorf("%s on a failing rollout still says no failed span", k)
		}
	}
}

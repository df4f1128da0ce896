package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/nemo-gym/gymtrace/model"
)

// TestDetailWrapsInColumn opens a failed span whose status message is too
// long for the panel: the value wraps under its own column, and the field
// names stay in theirs.
func TestDetailWrapsInColumn(t *testing.T) {
	b := newBuilder(t)
	tree := rolloutTree("r0000", 1, true)
	spans, _ := b.emit(model.Batch{}, traceID(1), model.SpanID{}, t0.UnixNano(), tree)
	msg := "500, Internal Server Error: the verifier's sandbox refused the answer because its output exceeded the limit"
	for i := range spans.Spans {
		if spans.Spans[i].Extra != nil {
			spans.Spans[i].Extra.StatusMessage = msg
		}
	}
	if err := b.st.Add(spans); err != nil {
		t.Fatal(err)
	}
	b.st.Sync()
	snap := b.st.Snapshot()
	r := snap.Rollouts[0]
	d := newDetailView(DefaultStyles(lipgloss.DefaultRenderer()), DefaultKeyMap())
	d.resize(60, 30)
	d.setSize(60, 30)
	for _, f := range r.Fragments {
		for i := range f.Spans {
			if f.Spans[i].Extra != nil && f.Spans[i].Extra.StatusMessage != "" {
				d.SetSpan(snap, r, f, i, "verify")
			}
		}
	}
	var status []string
	for i, l := range d.lines {
		if strings.HasPrefix(l, "status ") {
			status = d.lines[i : i+3]
		}
	}
	if status == nil {
		t.Fatalf("no status line:\n%s", strings.Join(d.lines, "\n"))
	}
	if !strings.HasPrefix(status[0], "status         ERROR: 500,") {
		t.Errorf("the status field lost its column: %q", status[0])
	}
	for _, l := range status[1:] {
		if !strings.HasPrefix(l, strings.Repeat(" ", 15)) || l[15] == ' ' {
			t.Errorf("a wrapped status line is not under the value column: %q", l)
		}
	}
	for _, l := range d.lines {
		if ansi.StringWidth(l) > 60 {
			t.Errorf("line wider than the panel: %q", l)
		}
	}
}

package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/nemo-gym/gymtrace/gate/whatif"
	"github.com/nemo-gym/gymtrace/model"
)

// TestSplitOpensAtItsExplanation shows a rollout that live grows and
// reorders under a cursor nobody moved: first a lone orphan, then the whole
// tree before it, then the check calls it split. The waterfall keeps its
// top in view, the split's explanation first; once the user moves, the
// cursor follows its span instead.
func TestSplitOpensAtItsExplanation(t *testing.T) {
	b := newBuilder(t)
	b.capture(t, 1, false)
	snap := b.st.Snapshot()
	whole := snap.Rollouts[0]
	// A lone span of another process, waiting for its parent.
	lone := &model.Fragment{TraceID: traceID(50), TopParent: b.id(), Spans: []model.Span{{SpanID: b.id(),
		Parent: -1, Name: b.str("POST /verify"), Resource: b.resource("example_tools"), Kind: model.KindServer,
		Start: whole.End - 1000, End: whole.End}}}
	v1 := &model.Rollout{ID: whole.ID, Version: 1, Fragments: []*model.Fragment{lone}, Spans: 1, Start: lone.Spans[0].Start, End: whole.End, Traces: 1}
	v2 := &model.Rollout{ID: whole.ID, Version: 2, Fragments: append(append([]*model.Fragment(nil), whole.Fragments...), lone),
		Spans: whole.Spans + 1, Start: whole.Start, End: whole.End, Traces: 2}
	split := &whatif.CheckReport{ByRollout: map[string]whatif.RolloutCheck{whole.ID: {Status: whatif.Split, Hops: []whatif.BrokenHop{{
		FromService: "nemo-gym/simple_agent", ToService: "nemo-gym/example_tools", SpanName: "POST /verify",
		Cause: whatif.CauseServerRoot, Reason: whatif.CauseServerRoot.Sentence("nemo-gym/simple_agent"), Count: 1}}}}}

	tv := newTraceView(DefaultStyles(lipgloss.DefaultRenderer()), DefaultKeyMap(), testRegistry())
	tv.setSize(78, 8)
	tv.SetRollout(snap, v1)
	tv.SetRollout(snap, v2)
	tv.refresh(&env{snap: snap, check: split})
	lines := strings.Split(ansi.Strip(tv.view()), "\n")
	if !strings.HasPrefix(strings.TrimSpace(lines[2]), "✗ split: simple_agent → example_tools (POST /verify)") {
		t.Errorf("the first row is not the split's explanation:\n%s", tv.view())
	}
	if f, i, ok := tv.SelectedSpan(); !ok || snap.Str(f.Spans[i].Name) != "HTTP POST" {
		t.Errorf("the cursor is not on the rollout's first span:\n%s", tv.view())
	}

	// Moved, the cursor stays on its span through the next version.
	tv.handle(keyMsg("G"), nil)
	f, i, _ := tv.SelectedSpan()
	at := f.Spans[i].SpanID
	v3 := v2.Clone()
	v3.Version = 3
	tv.SetRollout(snap, v3)
	if f, i, ok := tv.SelectedSpan(); !ok || f.Spans[i].SpanID != at {
		t.Errorf("a moved cursor did not keep its span across a new version")
	}
}

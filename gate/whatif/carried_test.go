package whatif_test

import (
	"testing"

	"github.com/nemo-gym/gymtrace/gate/internal/realgym"
	"github.com/nemo-gym/gymtrace/model"
)

// TestCarriedSpansKeepTheirTrace: in the real run whose keep-alive
// connections carried contexts over between rollouts, the structure hangs
// carried spans in fragments of another trace; each still reads as the
// trace it was captured in, and the export as captured writes every span
// with that trace.
func TestCarriedSpansKeepTheirTrace(t *testing.T) {
	eng, snap := realgym.Capture(t, "s41-obs0-leak/spec-per_rollout")
	captured := map[model.SpanID]model.TraceID{}
	for _, j := range snap.Jobs {
		captured[j.Spans[0].SpanID] = j.TraceID
	}
	for _, r := range snap.Rollouts {
		for _, f := range r.Fragments {
			for i := range f.Spans {
				captured[f.Spans[i].SpanID] = f.TraceID
			}
		}
	}
	mixed := 0
	for _, r := range eng.Structure(snap).Snap.Rollouts {
		for _, f := range r.Fragments {
			for i := range f.Spans {
				if got, want := f.Trace(i), captured[f.Spans[i].SpanID]; got != want {
					t.Fatalf("rollout %s: span %s reads trace %s, captured in %s", r.ID, f.Spans[i].SpanID, got, want)
				}
				if f.Trace(i) != f.TraceID {
					mixed++
				}
			}
		}
	}
	if mixed == 0 {
		t.Fatal("no span of another trace in a rollout's fragment: the capture no longer shows what the test is about")
	}
	out := eng.ExportAll(snap, nil)
	if len(out.Spans) != len(captured) {
		t.Fatalf("exported %d spans, captured %d", len(out.Spans), len(captured))
	}
	for i := range out.Spans {
		if id := out.Spans[i].SpanID; out.Traces[i] != captured[id] {
			t.Errorf("span %s exported in trace %s, captured in %s", id, out.Traces[i], captured[id])
		}
	}
	t.Logf("%d spans of another trace in rollouts' fragments", mixed)
}

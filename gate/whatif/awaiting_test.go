package whatif

import (
	"testing"
	"time"

	"github.com/nemo-gym/gymtrace/gate/rollouts"
	"github.com/nemo-gym/gymtrace/model"
)

// TestAwaitingGraceFromSpans: an orphan's parent is awaited for the grace
// after spans last arrived; snapshots published later for metric points
// alone do not keep it awaited.
func TestAwaitingGraceFromSpans(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	orphan := &model.Fragment{TopParent: model.SpanID{1}, Spans: []model.Span{{SpanID: model.SpanID{2}, Parent: -1}}}
	st := &rollouts.Structure{Snap: &model.Snapshot{Taken: t0.Add(10 * time.Second), SpansAt: t0}, Unattributed: []*model.Fragment{orphan}}
	if n := awaiting(st, t0.Add(11*time.Second), 5*time.Second); n != 0 {
		t.Errorf("10 s after the last span, with a snapshot of metrics 1 s ago: %d spans awaiting, want 0", n)
	}
	if n := awaiting(st, t0.Add(2*time.Second), 5*time.Second); n != 1 {
		t.Errorf("2 s after the last span: %d spans awaiting, want 1", n)
	}
	st.Snap.SpansAt = time.Time{}
	if n := awaiting(st, t0.Add(11*time.Second), 5*time.Second); n != 1 {
		t.Errorf("no span time kept, a snapshot 1 s ago: %d spans awaiting, want 1 (the snapshot's time)", n)
	}
}

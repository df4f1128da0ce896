package rollouts

import (
	"reflect"
	"testing"

	"github.com/nemo-gym/gymtrace/model"
)

// TestLeakOwner: a leak is counted in its own rollout, else in the one it
// was put under, else in none; Traffic's figures count by the same owner.
func TestLeakOwner(t *testing.T) {
	s := &Structure{Leaks: []Leak{
		{Service: "agent", Name: "POST /run", Rollout: "r1", Host: "r2", Span: model.SpanID{1}},
		{Service: "agent", Name: "POST /run", Rollout: "r1", Host: "r1", Span: model.SpanID{2}},
		{Service: "agent", Name: "POST /aggregate_metrics", Host: "r3", Span: model.SpanID{3}},
		{Service: "agent", Name: "POST /aggregate_metrics", Span: model.SpanID{4}},
	}}
	if got, want := s.LeaksByRollout(), map[string]int{"r1": 2, "r3": 1}; !reflect.DeepEqual(got, want) {
		t.Errorf("leaks by rollout %v, want %v", got, want)
	}
	if got := s.LeakedSpans(); len(got) != 4 || !got[model.SpanID{3}] || got[model.SpanID{5}] {
		t.Errorf("leaked spans %v, want the four leaks'", got)
	}
	tr := s.Traffic()
	if tr.LeakSpans != 4 || tr.LeakRollouts != 2 {
		t.Errorf("traffic: %d leaks in %d rollouts, want 4 in 2", tr.LeakSpans, tr.LeakRollouts)
	}
}

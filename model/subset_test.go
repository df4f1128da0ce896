package model

import "testing"

func TestSnapshotSelect(t *testing.T) {
	st := NewStore(Options{})
	defer st.Close()
	var a, b TraceID
	a[0], b[0] = 1, 2
	spans := cat(build(t, st, a, []tspan{
		{name: "gym.rollout", id: "a1", rid: "r-a", res: 1},
		{name: "x", id: "a2", parent: "a1", rid: "r-a", res: 2},
	}), build(t, st, b, []tspan{
		{name: "gym.rollout", id: "b1", rid: "r-b", res: 1},
	}))
	if err := st.Add(spans); err != nil {
		t.Fatal(err)
	}
	st.Sync()
	snap := st.Snapshot()
	if len(snap.Rollouts) != 2 {
		t.Fatalf("%d rollouts, want 2", len(snap.Rollouts))
	}
	sub := snap.Select(snap.Rollouts[:1])
	if got := sub.Stats; got.Stored != 2 || got.Rollouts != 1 || got.Traces != 1 || got.Fragments != 1 {
		t.Errorf("Select stats = %+v, want 2 spans, 1 rollout, 1 trace, 1 fragment", got)
	}
	if len(sub.Services) < 3 || sub.Services[1] != 1 || sub.Services[2] != 1 {
		t.Errorf("Select services = %v, want one span each for resources 1 and 2", sub.Services)
	}
	if snap.Stats.Stored != 3 || len(snap.Rollouts) != 2 {
		t.Errorf("Select changed the original snapshot: %+v", snap.Stats)
	}
	if sub.Str(snap.Rollouts[0].Fragments[0].Spans[0].Name) != "gym.rollout" {
		t.Error("the selection resolves strings through the same interner")
	}
}

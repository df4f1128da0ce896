package rollouts

import (
	"slices"
	"testing"

	"github.com/nemo-gym/gymtrace/model"
)

// walk cuts a NeMo-RL step's trace at each call to /run made under its
// own INTERNAL span, marks the step's unit a caller, and gives every span
// its unit and depth; listSpans then lists each unit's spans in order.
func TestUnitCutWalk(t *testing.T) {
	st := model.NewStore(model.Options{QueueLen: 4})
	t.Cleanup(st.Close)
	f := newFleet(t, st)
	f.NewTrace()
	step := f.Add(model.SpanID{}, "nemo-rl", "rl.gym.run_rollouts", model.KindInternal)
	for range 2 {
		c := f.Add(step, "nemo-rl", "HTTP POST", model.KindClient, kv{K: "http.request.method", V: "POST"}, kv{K: "url.full", V: "http://127.0.0.1:8001/run"})
		s := f.Add(c, "nemo-gym/agent", "POST /run", model.KindServer)
		f.Add(s, "nemo-gym/agent", "gym.rollout", model.KindInternal)
	}
	// The store holds a fragment's spans parents first, by depth: the
	// step, its two calls, their /run spans, their gym.rollout spans.
	snap := f.Flush()
	var frag *model.Fragment
	for _, r := range snap.Rollouts {
		for _, g := range r.Fragments {
			if frag == nil || len(g.Spans) > len(frag.Spans) {
				frag = g
			}
		}
	}
	if frag == nil || len(frag.Spans) != 7 {
		t.Fatalf("no fragment of the 7 spans")
	}
	e := NewFinder()
	e.sync(snap)
	var sc scratch
	c := unitCut{k: &e.keys, f: frag, units: sc.units[:0], leaked: sc.leaked[:0]}
	c.unitOf, c.depth, c.called = sc.unitWalk(len(frag.Spans))
	c.served = sc.served
	c.walk()
	c.listSpans()

	if got, want := c.unitOf, []int32{0, 1, 2, 1, 2, 1, 2}; !slices.Equal(got, want) {
		t.Errorf("unitOf = %v, want %v", got, want)
	}
	if got, want := c.depth, []uint8{0, 0, 0, 1, 1, 2, 2}; !slices.Equal(got, want) {
		t.Errorf("depth = %v, want %v", got, want)
	}
	if len(c.units) != 3 {
		t.Fatalf("%d units, want 3", len(c.units))
	}
	wantIdx := [][]int32{{0}, {1, 3, 5}, {2, 4, 6}}
	for i, u := range c.units {
		if !slices.Equal(u.idx, wantIdx[i]) || u.spans != int32(len(wantIdx[i])) {
			t.Errorf("unit %d: spans %v (%d), want %v", i, u.idx, u.spans, wantIdx[i])
		}
		if wantCut := i > 0; u.cut != wantCut || u.caller != !wantCut {
			t.Errorf("unit %d: cut %v caller %v, want cut %v caller %v", i, u.cut, u.caller, wantCut, !wantCut)
		}
		if wantHost := int32(min(i, 1) - 1); u.hostUnit != wantHost {
			t.Errorf("unit %d: hostUnit %d, want %d", i, u.hostUnit, wantHost)
		}
	}
	if got, want := c.served, []bool{false, false, false, true, true, true, true}; !slices.Equal(got, want) {
		t.Errorf("served = %v, want %v: the /run server spans and below", got, want)
	}
}

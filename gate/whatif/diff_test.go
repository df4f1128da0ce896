package whatif

import (
	"slices"
	"sort"
	"testing"

	"github.com/nemo-gym/gymtrace/model"
)

func names(ss []DiffSpan) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Name)
	}
	sort.Strings(out)
	return out
}

func TestCompareRollouts(t *testing.T) {
	st := model.NewStore(model.Options{QueueLen: 4})
	t.Cleanup(st.Close)
	f := newFleet(t, st)
	f.Rollout(model.SpanID{}, "r-a", 2, 2)
	f.Rollout(model.SpanID{}, "r-b", 3, 2)
	snap := f.Flush()
	byID := map[string]*model.Rollout{}
	for _, r := range snap.Rollouts {
		byID[r.ID] = r
	}
	a, b := RolloutSide(snap, byID["r-a"]), RolloutSide(snap, byID["r-b"])

	for _, side := range []DiffSide{a, b} {
		d := CompareRollouts(side, side)
		if len(d.OnlyA)+len(d.OnlyB)+len(d.Changed)+len(d.ErrorsA)+len(d.ErrorsB) > 0 || d.First != nil {
			t.Errorf("%s against itself: %+v", side.Rollout, d)
		}
	}

	// One more turn: the agent's call to itself (CLIENT, SERVER, receive,
	// two sends, gym.agent.responses) and its model call (CLIENT, SERVER,
	// receive, two sends, gym.model.responses).
	d := CompareRollouts(a, b)
	want := []string{
		"HTTP POST", "HTTP POST",
		"POST /v1/responses", "POST /v1/responses",
		"POST /v1/responses http receive", "POST /v1/responses http receive",
		"POST /v1/responses http send", "POST /v1/responses http send", "POST /v1/responses http send", "POST /v1/responses http send",
		"gym.agent.responses", "gym.model.responses",
	}
	if got := names(d.OnlyB); !slices.Equal(got, want) || len(d.OnlyA) != 0 {
		t.Errorf("only_a %v, only_b %v; want only_b %v", names(d.OnlyA), got, want)
	}
	if d.First == nil || d.First.A != "" || d.First.B != "HTTP POST → POST /v1/responses" ||
		!slices.Equal(d.First.Path, []string{"HTTP POST", "POST /run", "gym.rollout"}) {
		t.Errorf("first divergence %+v, want B's third turn under gym.rollout", d.First)
	}
	var changed []string
	for _, o := range d.Changed {
		changed = append(changed, o.Service+" "+o.Name)
		if o.CountB-o.CountA < 1 {
			t.Errorf("changed %s: %d vs %d", o.Name, o.CountA, o.CountB)
		}
	}
	// agent: HTTP POST, POST /v1/responses, its receive and send, gym.agent.responses;
	// model: POST /v1/responses, its receive and send, gym.model.responses.
	if len(changed) != 9 {
		t.Errorf("changed operations %v", changed)
	}
	if d.A.Spans+len(d.OnlyB) != d.B.Spans {
		t.Errorf("A %d spans + %d only in B != B %d spans", d.A.Spans, len(d.OnlyB), d.B.Spans)
	}
}

// Error differences: the same span, failing on one side only.
func TestCompareRolloutsErrors(t *testing.T) {
	snap := filterCapture(t, []filterSpan{
		{RID: "a", Parent: -1, Svc: "nemo-gym/simple_agent", Name: "POST /run", Kind: model.KindServer, Status: 0, DurMS: 100, Attrs: nil, TraceNo: 1},
		{RID: "a", Parent: 0, Svc: "nemo-gym/example_tools", Name: "gym.verify", Kind: model.KindInternal, Status: model.StatusError, DurMS: 10, Attrs: nil, TraceNo: 1},
		{RID: "b", Parent: -1, Svc: "nemo-gym/simple_agent", Name: "POST /run", Kind: model.KindServer, Status: 0, DurMS: 100, Attrs: nil, TraceNo: 2},
		{RID: "b", Parent: 0, Svc: "nemo-gym/example_tools", Name: "gym.verify", Kind: model.KindInternal, Status: 0, DurMS: 30, Attrs: nil, TraceNo: 2},
	})
	sides := map[string]DiffSide{}
	for _, r := range snap.Rollouts {
		sides[r.ID] = RolloutSide(snap, r)
	}
	d := CompareRollouts(sides["a"], sides["b"])
	if len(d.OnlyA)+len(d.OnlyB) != 0 || d.First != nil {
		t.Errorf("same structure, yet only_a %v only_b %v first %+v", names(d.OnlyA), names(d.OnlyB), d.First)
	}
	if got := names(d.ErrorsA); !slices.Equal(got, []string{"gym.verify"}) || len(d.ErrorsB) != 0 {
		t.Errorf("errors_only_a %v errors_only_b %v, want gym.verify in A", got, names(d.ErrorsB))
	}
	if len(d.Changed) != 1 || d.Changed[0].Name != "gym.verify" || d.Changed[0].ErrorsA != 1 {
		t.Errorf("changed %+v, want gym.verify with one error in A", d.Changed)
	}
	// Self time: POST /run lasts 100ms, its child 10ms (A) and 30ms (B).
	for _, o := range d.Operations {
		if o.Name == "POST /run" && (o.SelfNSA != 90e6 || o.SelfNSB != 70e6) {
			t.Errorf("POST /run self time %d / %d, want 90ms / 70ms", o.SelfNSA, o.SelfNSB)
		}
	}
}

// Sides sharing span ids are matched by id: a span inserted between a
// parent and its child is the one span only B has, and the child is on
// both sides, moved, never "only in A" and "only in B" at once.
func TestCompareRolloutsByID(t *testing.T) {
	st := model.NewStore(model.Options{QueueLen: 4})
	t.Cleanup(st.Close)
	f := newFleet(t, st)
	f.Rollout(model.SpanID{}, "r-a", 2, 2)
	snap := f.Flush()
	a := RolloutSide(snap, snap.Rollouts[0])
	k := -1
	for i := range a.Spans {
		if !a.ParentOf(i).IsZero() {
			k = i
			break
		}
	}
	if k < 0 {
		t.Fatal("no span with a parent")
	}
	var b model.Batch
	mid := a.Spans[k]
	mid.SpanID = model.SpanID{0xfe, 0xed}
	for i := range a.Spans {
		up := a.ParentOf(i)
		if i == k {
			b.Append(a.Traces[i], mid.SpanID, a.Spans[i])
			b.Append(a.Traces[i], up, mid)
			continue
		}
		b.Append(a.Traces[i], up, a.Spans[i])
	}
	bs := DiffSide{Snap: snap, Rollout: a.Rollout, Batch: b}
	d := CompareRollouts(a, bs)
	if len(d.OnlyA) != 0 || len(d.OnlyB) != 1 || d.OnlyB[0].SpanID != mid.SpanID {
		t.Errorf("only_a %v only_b %+v, want the inserted span only in B", names(d.OnlyA), d.OnlyB)
	}
	if len(d.Moved) != 1 || d.Moved[0].SpanID != a.Spans[k].SpanID ||
		len(d.Moved[0].PathB) != len(d.Moved[0].Path)+1 {
		t.Fatalf("moved %+v, want span %d one level deeper", d.Moved, k)
	}
	if d.First == nil || d.First.B == "" {
		t.Errorf("first divergence %+v, want the inserted span", d.First)
	}
	if back := CompareRollouts(bs, bs); len(back.Moved)+len(back.OnlyA)+len(back.OnlyB) != 0 || back.First != nil {
		t.Errorf("B against itself: %+v", back)
	}
}

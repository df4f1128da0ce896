package rollouts

import (
	"testing"
	"time"

	"github.com/nemo-gym/gymtrace/model"
)

// TestServerOffRolloutsMatchedWhole: with server off in the agent each
// gym.rollout is a root of its own, to be paired with the driver's call to
// /run that started it. Rollout Y fits only call A; rollout X fits A best
// but B too. Pairing the closest first gives X to A and leaves Y and B as
// two rollouts of their own (three in all); the whole matching gives two.
func TestServerOffRolloutsMatchedWhole(t *testing.T) {
	st := model.NewStore(model.Options{QueueLen: 4})
	t.Cleanup(st.Close)
	f := newFleet(t, st)
	const ms = int64(time.Millisecond)
	t0 := f.Clock
	at := func(start, end int64) {
		sp := &f.Spans.Spans[len(f.Spans.Spans)-1]
		sp.Start, sp.End = t0+start*ms, t0+end*ms
	}
	f.NewTrace()
	job := f.Add(model.SpanID{}, "nemo-gym/orchestrator", "gym.job", model.KindInternal)
	at(0, 3000)
	url := "http://127.0.0.1:8001/run"
	f.Add(job, "nemo-gym/orchestrator", "HTTP POST", model.KindClient, kv{K: "http.request.method", V: "POST"}, kv{K: "url.full", V: url})
	at(0, 1000) // A
	f.Add(job, "nemo-gym/orchestrator", "HTTP POST", model.KindClient, kv{K: "http.request.method", V: "POST"}, kv{K: "url.full", V: url})
	at(10, 2000) // B
	f.NewTrace()
	f.Add(model.SpanID{}, "nemo-gym/agent", "gym.rollout", model.KindInternal)
	at(1, 950) // Y: started before B was called
	f.NewTrace()
	f.Add(model.SpanID{}, "nemo-gym/agent", "gym.rollout", model.KindInternal)
	at(12, 990) // X
	snap := f.Flush()

	str := NewFinder().Structure(snap)
	if n := len(str.Rollouts); n != 2 {
		t.Fatalf("rollouts %d, want 2 (each gym.rollout with the call that started it)", n)
	}
	for _, r := range str.Rollouts {
		if r.Spans != 2 {
			t.Errorf("rollout %s has %d spans, want its call and its gym.rollout", r.ID, r.Spans)
		}
	}
}

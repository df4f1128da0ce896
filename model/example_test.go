package model_test

import (
	"fmt"

	"github.com/nemo-gym/gymtrace/model"
)

// A Store takes batches of spans, links each to its parent by id, and
// hands out immutable snapshots: rollouts, each the fragments of its
// trace.
func ExampleStore() {
	st := model.NewStore(model.Options{QueueLen: 4})
	defer st.Close()
	l := model.NewLocal(st.Interner())
	var b model.AttrBuilder
	b.String(l, l.Intern([]byte("service.name")), []byte("nemo-gym/agent"))
	agent := st.Interner().InternResource(b.Sorted(st.Interner()), l.Intern([]byte("nemo-gym/agent")))

	trace := model.TraceID{1}
	run := model.Span{SpanID: model.SpanID{1}, Start: 1e18, End: 1e18 + 2e9, Name: l.Intern([]byte("POST /run")), Resource: agent, Kind: model.KindServer}
	b.Reset()
	b.String(l, l.Intern([]byte(model.RolloutIDKey)), []byte("r-1"))
	roll := model.Span{SpanID: model.SpanID{2}, Start: 1e18 + 1e6, End: 1e18 + 1e9, Name: l.Intern([]byte("gym.rollout")), Resource: agent, Kind: model.KindInternal, Attrs: b.Attrs()}
	var batch model.Batch
	batch.Append(trace, model.SpanID{}, run)
	batch.Append(trace, run.SpanID, roll) // the child may come first too: it waits for its parent
	if err := st.Add(batch); err != nil {
		panic(err)
	}
	st.Sync() // the store's goroutine has taken every batch added
	snap := st.Snapshot()
	fmt.Printf("%d spans, %d traces, %d rollouts\n", snap.Stats.Stored, snap.Stats.Traces, len(snap.Rollouts))
	for _, r := range snap.Rollouts {
		f := r.Fragments[0]
		fmt.Printf("rollout %s: %d spans, top %s\n", r.ID, r.Spans, snap.Str(f.Spans[0].Name))
	}
	// Output:
	// 2 spans, 1 traces, 1 rollouts
	// rollout r-1: 2 spans, top POST /run
}

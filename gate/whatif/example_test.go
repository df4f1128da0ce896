package whatif_test

import (
	"fmt"
	"time"

	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/gate/whatif"
	"github.com/nemo-gym/gymtrace/model"
)

// capture stores two rollouts of Gym's shape, each the agent's POST /run
// with gym.rollout and one model call. In the second the model server did
// not read the caller's traceparent: its spans start a trace of their own.
func capture() *model.Snapshot {
	st := model.NewStore(model.Options{QueueLen: 4})
	defer st.Close()
	in := st.Interner()
	l := model.NewLocal(in)
	key := func(k string) model.Str { return l.Intern([]byte(k)) }
	res := map[string]model.ResourceID{}
	for _, svc := range []string{"agent", "model"} {
		var b model.AttrBuilder
		b.String(l, key("service.name"), []byte("nemo-gym/"+svc))
		res[svc] = in.InternResource(b.Sorted(in), key("nemo-gym/"+svc))
	}
	var batch model.Batch
	next, clock := uint64(0), int64(1_700_000_000_000_000_000)
	add := func(trace model.TraceID, parent model.SpanID, svc, name string, kind model.Kind, attrs ...[2]string) model.SpanID {
		next++
		var id model.SpanID
		id[7] = byte(next)
		var b model.AttrBuilder
		for _, a := range attrs {
			b.String(l, key(a[0]), []byte(a[1]))
		}
		clock += int64(time.Millisecond)
		sp := model.Span{SpanID: id, Start: clock, End: clock + int64(time.Second) - int64(next)*int64(time.Millisecond),
			Name: key(name), Resource: res[svc], Kind: kind, Attrs: b.Attrs()}
		sp.SetWireSize(100)
		batch.Append(trace, parent, sp)
		return id
	}
	for r := byte(1); r <= 2; r++ {
		trace := model.TraceID{r}
		run := add(trace, model.SpanID{}, "agent", "POST /run", model.KindServer, [2]string{"http.url", "http://127.0.0.1:8001/run"})
		roll := add(trace, run, "agent", "gym.rollout", model.KindInternal, [2]string{model.RolloutIDKey, fmt.Sprint("r-", r)})
		call := add(trace, roll, "agent", "HTTP POST", model.KindClient,
			[2]string{"http.url", "http://127.0.0.1:8002/v1/responses"}, [2]string{"http.status_code", "200"})
		if r == 2 {
			trace, call = model.TraceID{0xee}, model.SpanID{} // no traceparent read
		}
		srv := add(trace, call, "model", "POST /v1/responses", model.KindServer, [2]string{"http.url", "http://127.0.0.1:8002/v1/responses"})
		add(trace, srv, "model", "gym.model.responses", model.KindInternal)
	}
	if err := st.Add(batch); err != nil {
		panic(err)
	}
	st.Sync()
	return st.Snapshot()
}

// Check tells which rollouts are one trace, and names each broken hop with
// its cause.
func ExampleEngine_Check() {
	e := whatif.NewEngine(groups.Default())
	rep := e.Check(capture(), time.Now(), 0)
	fmt.Printf("intact %v: %d joined, %d split\n", rep.Intact, rep.Joined, rep.Split)
	for _, h := range rep.Hops {
		fmt.Printf("%s -> %s %s: %s (%d)\n", h.FromService, h.ToService, h.SpanName, h.Reason, h.Count)
	}
	// Output:
	// intact false: 1 joined, 1 split
	// nemo-gym/agent -> nemo-gym/model POST /v1/responses: the caller's CLIENT span exists but the SERVER span has no parent: the caller did not inject traceparent (a call that bypasses Gym's HTTP client?) (1)
}

// Preview predicts what a span_groups value would keep of the capture.
func ExampleEngine_Preview() {
	reg := groups.Default()
	e := whatif.NewEngine(reg)
	snap := capture()
	for _, spec := range []string{"default", "rollout,model_call"} {
		set, err := reg.Parse(spec)
		if err != nil {
			panic(err)
		}
		r := e.Preview(snap, set).Result
		fmt.Printf("%s: %d spans kept, %d dropped, %d rollouts joined, %d split\n", spec, r.Spans, r.Dropped, r.RolloutsJoined, r.RolloutsSplit)
	}
	// Output:
	// default: 8 spans kept, 2 dropped, 1 rollouts joined, 1 split
	// rollout,model_call: 4 spans kept, 6 dropped, 0 rollouts joined, 2 split
}

// Package testfleet builds captures of NeMo Gym's shape through a real
// model.Store, for the tests of the gate packages. It imports model only,
// so the tests of every gate package can use it.
package testfleet

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/nemo-gym/gymtrace/model"
)

// Fleet builds captures of Gym's shape through a real model.Store: one
// resource per process, spans linked by ids exactly as the exporters send
// them, so the store does the tree building.
type Fleet struct {
	TB    testing.TB
	St    *model.Store
	L     *model.Local
	Res   map[string]model.ResourceID
	Trace model.TraceID
	Next  uint64
	Clock int64
	// Spans holds the spans built and not yet submitted, with their traces.
	Spans model.Batch
	// Cut, when set, decides per process whether a call into it keeps its
	// trace: false makes the callee's SERVER span a new root, as when the
	// caller sends no traceparent.
	Cut func(caller, callee string) bool
	// NoServer lists processes whose SERVER spans are not emitted (server
	// off there): their handler spans start new traces.
	NoServer map[string]bool
	// NoClient lists processes that emit no CLIENT spans (http_client off
	// there); use with Cut, since they send no traceparent either.
	NoClient map[string]bool
	// DoubleClient adds a second CLIENT span per call under Gym's own, as a
	// build that also instruments aiohttp does; the SERVER span hangs under
	// the inner one.
	DoubleClient bool
	// Eager submits each rollout as soon as it is built, parents first,
	// one batch per rollout: how large captures are built quickly.
	Eager bool
}

// NewFleet returns a fleet that stores into st.
func NewFleet(tb testing.TB, st *model.Store) *Fleet {
	tb.Helper()
	return &Fleet{TB: tb, St: st, L: model.NewLocal(st.Interner()), Res: map[string]model.ResourceID{}, Clock: 1_700_000_000_000_000_000}
}

// KV is one string or int attribute.
type KV struct {
	K string
	V any
}

func (f *Fleet) Resource(svc string) model.ResourceID {
	if id, ok := f.Res[svc]; ok {
		return id
	}
	var b model.AttrBuilder
	b.String(f.L, f.L.Intern([]byte("service.name")), []byte(svc))
	b.String(f.L, f.L.Intern([]byte("nemo.gym.service_group")), []byte("nemo-gym"))
	id := f.St.Interner().InternResource(b.Sorted(f.St.Interner()), f.L.Intern([]byte(svc)))
	f.Res[svc] = id
	return id
}

func (f *Fleet) NewTrace() {
	f.Next++
	binary.BigEndian.PutUint64(f.Trace[8:], f.Next)
	f.Trace[0] = 0xab
}

// Add appends a span and returns its id. parent may be zero for a root.
func (f *Fleet) Add(parent model.SpanID, svc, name string, kind model.Kind, attrs ...KV) model.SpanID {
	f.Next++
	var id model.SpanID
	binary.BigEndian.PutUint64(id[:], f.Next)
	var b model.AttrBuilder
	for _, a := range attrs {
		k := f.L.Intern([]byte(a.K))
		switch v := a.V.(type) {
		case string:
			b.String(f.L, k, []byte(v))
		case int:
			b.Int(k, int64(v))
		}
	}
	f.Clock += 1000
	sp := model.Span{
		SpanID: id, Start: f.Clock, End: f.Clock + 500_000,
		Name: f.L.Intern([]byte(name)), Resource: f.Resource(svc), Kind: kind, Attrs: b.Attrs(),
	}
	sp.SetWireSize(100 + len(name))
	f.Spans.Append(f.Trace, parent, sp)
	return id
}

var ports = map[string]int{"agent": 8001, "model": 8002, "resources": 8003}

// Call is one HTTP call from caller to callee's route: a CLIENT span, then
// the callee's SERVER span with its ASGI children, then body inside it.
func (f *Fleet) Call(parent model.SpanID, caller, callee, route, rid string, body func(server model.SpanID)) {
	url := fmt.Sprintf("http://127.0.0.1:%d/ng-rollout/%s%s", ports[callee], rid, route)
	if rid == "" {
		url = fmt.Sprintf("http://127.0.0.1:%d%s", ports[callee], route)
	}
	cl := parent
	if !f.NoClient[caller] {
		cl = f.Add(parent, "nemo-gym/"+caller, "HTTP POST", model.KindClient, KV{"http.method", "POST"}, KV{"http.url", url}, KV{"http.status_code", 200})
	}
	if f.NoServer[callee] {
		if body != nil {
			saved := f.Trace
			f.NewTrace()
			body(model.SpanID{})
			f.Trace = saved
		}
		return
	}
	if f.DoubleClient {
		cl = f.Add(cl, "nemo-gym/"+caller, "POST", model.KindClient, KV{"http.request.method", "POST"}, KV{"url.full", url}, KV{"http.response.status_code", 200})
	}
	up := cl
	if f.Cut != nil && f.Cut(caller, callee) {
		up = model.SpanID{}
		saved := f.Trace
		f.NewTrace()
		defer func() { f.Trace = saved }()
	}
	name := "POST " + route
	svc := "nemo-gym/" + callee
	s := f.Add(up, svc, name, model.KindServer, KV{"http.url", url}, KV{"http.target", url[len("http://127.0.0.1:8001"):]})
	f.Add(s, svc, name+" http receive", model.KindInternal)
	if body != nil {
		body(s)
	}
	f.Add(s, svc, name+" http send", model.KindInternal)
	f.Add(s, svc, name+" http send", model.KindInternal)
}

// Rollout emits one rollout of Gym's shape: the driver's call to /run, an
// agent self-call per turn, a model call per turn, tools (one sandboxed)
// and verify. turns=8, tools=6 gives 102 spans.
func (f *Fleet) Rollout(job model.SpanID, rid string, turns, tools int) {
	if job.IsZero() {
		f.NewTrace()
	}
	f.Call(job, "rollout_collection", "agent", "/run", "", func(run model.SpanID) {
		r := f.Add(run, "nemo-gym/agent", "gym.rollout", model.KindInternal, KV{model.RolloutIDKey, rid})
		for t := 0; t < turns; t++ {
			f.Call(r, "agent", "agent", "/v1/responses", rid, func(s model.SpanID) {
				a := f.Add(s, "nemo-gym/agent", "gym.agent.responses", model.KindInternal, KV{model.RolloutIDKey, rid})
				f.Call(a, "agent", "model", "/v1/responses", rid, func(s model.SpanID) {
					f.Add(s, "nemo-gym/model", "gym.model.responses", model.KindInternal, KV{model.RolloutIDKey, rid})
				})
			})
		}
		for t := 0; t < tools; t++ {
			route := "/get_weather"
			if t == 0 {
				route = "/run_code"
			}
			f.Call(r, "agent", "resources", route, rid, func(s model.SpanID) {
				if route == "/run_code" {
					f.Add(s, "nemo-gym/resources", "gym.sandbox.exec", model.KindInternal, KV{model.RolloutIDKey, rid})
				}
			})
		}
		f.Call(r, "agent", "resources", "/verify", rid, func(s model.SpanID) {
			f.Add(s, "nemo-gym/resources", "gym.verify", model.KindInternal, KV{model.RolloutIDKey, rid})
		})
	})
	if f.Eager {
		if err := f.St.Add(f.Spans); err != nil {
			f.TB.Fatal(err)
		}
		f.Spans = model.Batch{}
	}
}

// Job emits a gym.job span and n rollouts under it.
func (f *Fleet) Job(n, turns, tools int) {
	f.NewTrace()
	j := f.Add(model.SpanID{}, "nemo-gym/rollout_collection", "gym.job", model.KindInternal)
	for i := 0; i < n; i++ {
		f.Rollout(j, fmt.Sprintf("r-%d", i), turns, tools)
	}
}

// Flush submits the spans built so far, in reverse order (children before
// parents, as exporters send them), and returns the snapshot.
func (f *Fleet) Flush() *model.Snapshot {
	f.TB.Helper()
	const chunk = 4096
	n := len(f.Spans.Spans)
	var rev model.Batch
	for i := n - 1; i >= 0; i-- {
		rev.Append(f.Spans.Traces[i], f.Spans.ParentOf(i), f.Spans.Spans[i])
	}
	for at := 0; at < n; at += chunk {
		if err := f.St.Add(rev.Slice(at, min(at+chunk, n))); err != nil {
			f.TB.Fatal(err)
		}
	}
	f.Spans = model.Batch{}
	f.St.Sync()
	return f.St.Snapshot()
}

// GymCapture builds a snapshot of n rollouts under one job (or none).
func GymCapture(tb testing.TB, n, turns, tools int, withJob bool, mod func(*Fleet)) *model.Snapshot {
	tb.Helper()
	st := model.NewStore(model.Options{QueueLen: 4})
	tb.Cleanup(st.Close)
	f := NewFleet(tb, st)
	if mod != nil {
		mod(f)
	}
	if withJob {
		f.Job(n, turns, tools)
	} else {
		for i := 0; i < n; i++ {
			f.Rollout(model.SpanID{}, fmt.Sprintf("r-%d", i), turns, tools)
		}
	}
	return f.Flush()
}

// Span is one span of a hand-built capture: rollout rid, a parent
// index within the rollout (-1 for its root), and what filters look at.
type Span struct {
	RID     string
	Parent  int
	Svc     string
	Name    string
	Kind    model.Kind
	Status  model.StatusCode
	DurMS   int64
	Attrs   []KV
	TraceNo byte
}

// Capture stores spans through a real model.Store, one trace per
// rollout, and returns the snapshot.
func Capture(t *testing.T, spans []Span) *model.Snapshot {
	t.Helper()
	st := model.NewStore(model.Options{QueueLen: 4})
	t.Cleanup(st.Close)
	f := NewFleet(t, st)
	ids := map[string][]model.SpanID{}
	var out model.Batch
	for i, s := range spans {
		var tid model.TraceID
		tid[0], tid[15] = 0xcd, s.TraceNo
		var id, parent model.SpanID
		id[0], id[7] = 0xee, byte(i+1)
		if s.Parent >= 0 {
			parent = ids[s.RID][s.Parent]
		}
		ids[s.RID] = append(ids[s.RID], id)
		var b model.AttrBuilder
		for _, a := range append([]KV{{model.RolloutIDKey, s.RID}}, s.Attrs...) {
			k := f.L.Intern([]byte(a.K))
			switch v := a.V.(type) {
			case string:
				b.String(f.L, k, []byte(v))
			case int:
				b.Int(k, int64(v))
			}
		}
		start := int64(1_700_000_000_000_000_000) + int64(i)*1_000_000
		sp := model.Span{
			SpanID: id, Start: start, End: start + s.DurMS*int64(time.Millisecond),
			Name: f.L.Intern([]byte(s.Name)), Resource: f.Resource(s.Svc), Kind: s.Kind, Status: s.Status, Attrs: b.Attrs(),
		}
		sp.SetWireSize(100)
		out.Append(tid, parent, sp)
	}
	if err := st.Add(out); err != nil {
		t.Fatal(err)
	}
	st.Sync()
	return st.Snapshot()
}

// ThreeRollouts: a is healthy and fast; b has a slow model call and a 500
// from a tool; c has a verify error.
var ThreeRollouts = []Span{
	{"a", -1, "nemo-gym/simple_agent", "POST /run", model.KindServer, 0, 900, []KV{{"http.status_code", 200}}, 1},
	{"a", 0, "nemo-gym/simple_agent", "gym.rollout", model.KindInternal, 0, 850, nil, 1},
	{"a", 1, "nemo-gym/policy_model", "gym.model.responses", model.KindInternal, 0, 40, []KV{{"gen.model", "tiny-1"}}, 1},
	{"b", -1, "nemo-gym/simple_agent", "POST /run", model.KindServer, 0, 3000, []KV{{"http.status_code", 200}}, 2},
	{"b", 0, "nemo-gym/simple_agent", "gym.rollout", model.KindInternal, 0, 2900, nil, 2},
	{"b", 1, "nemo-gym/policy_model", "gym.model.responses", model.KindInternal, 0, 2000, []KV{{"gen.model", "Big-Model-7"}}, 2},
	{"b", 1, "nemo-gym/example_tools", "POST /get_weather", model.KindServer, model.StatusError, 30, []KV{{"http.status_code", 500}}, 2},
	{"c", -1, "nemo-gym/simple_agent", "POST /run", model.KindServer, 0, 500, []KV{{"http.status_code", 200}}, 3},
	{"c", 0, "nemo-gym/example_tools", "gym.verify", model.KindInternal, model.StatusError, 20, []KV{{"url.full", "http://h/verify?x=1"}}, 3},
	{"c", 0, "nemo-gym/policy_model", "gym.model.responses", model.KindInternal, model.StatusOK, 60, []KV{{"gen.model", "tiny-1"}}, 3},
}

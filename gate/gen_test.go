package gate

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/nemo-gym/gymtrace/model"
)

// fleet builds captures of Gym's shape through a real model.Store: one
// resource per process, spans linked by ids exactly as the exporters send
// them, so the store does the tree building.
type fleet struct {
	tb    testing.TB
	st    *model.Store
	l     *model.Local
	res   map[string]model.ResourceID
	trace model.TraceID
	next  uint64
	clock int64
	spans []model.Span
	// cut, when set, decides per process whether a call into it keeps its
	// trace: false makes the callee's SERVER span a new root, as when the
	// caller sends no traceparent.
	cut func(caller, callee string) bool
	// noServer lists processes whose SERVER spans are not emitted (server
	// off there): their handler spans start new traces.
	noServer map[string]bool
	// noClient lists processes that emit no CLIENT spans (http_client off
	// there); use with cut, since they send no traceparent either.
	noClient map[string]bool
	// doubleClient adds a second CLIENT span per call under Gym's own, as a
	// build that also instruments aiohttp does; the SERVER span hangs under
	// the inner one.
	doubleClient bool
	// eager submits each rollout as soon as it is built, parents first,
	// one batch per rollout: how large captures are built quickly.
	eager bool
}

func newFleet(tb testing.TB, st *model.Store) *fleet {
	tb.Helper()
	return &fleet{tb: tb, st: st, l: model.NewLocal(st.Interner()), res: map[string]model.ResourceID{}, clock: 1_700_000_000_000_000_000}
}

// kv is one string or int attribute.
type kv struct {
	k string
	v any
}

func (f *fleet) resource(svc string) model.ResourceID {
	if id, ok := f.res[svc]; ok {
		return id
	}
	var b model.AttrBuilder
	b.String(f.l, f.l.Intern([]byte("service.name")), []byte(svc))
	b.String(f.l, f.l.Intern([]byte("nemo.gym.service_group")), []byte("nemo-gym"))
	id := f.st.Interner().InternResource(b.Sorted(f.st.Interner()), f.l.Intern([]byte(svc)))
	f.res[svc] = id
	return id
}

func (f *fleet) newTrace() {
	f.next++
	binary.BigEndian.PutUint64(f.trace[8:], f.next)
	f.trace[0] = 0xab
}

// add appends a span and returns its id. parent may be zero for a root.
func (f *fleet) add(parent model.SpanID, svc, name string, kind model.Kind, attrs ...kv) model.SpanID {
	f.next++
	var id model.SpanID
	binary.BigEndian.PutUint64(id[:], f.next)
	var b model.AttrBuilder
	for _, a := range attrs {
		k := f.l.Intern([]byte(a.k))
		switch v := a.v.(type) {
		case string:
			b.String(f.l, k, []byte(v))
		case int:
			b.Int(k, int64(v))
		}
	}
	f.clock += 1000
	f.spans = append(f.spans, model.Span{
		TraceID: f.trace, SpanID: id, ParentID: parent, Start: f.clock, End: f.clock + 500_000,
		Name: f.l.Intern([]byte(name)), Resource: f.resource(svc), Kind: kind,
		WireSize: uint32(100 + len(name)), Attrs: b.Attrs(),
	})
	return id
}

var ports = map[string]int{"agent": 8001, "model": 8002, "resources": 8003}

// call is one HTTP call from caller to callee's route: a CLIENT span, then
// the callee's SERVER span with its ASGI children, then body inside it.
func (f *fleet) call(parent model.SpanID, caller, callee, route, rid string, body func(server model.SpanID)) {
	url := fmt.Sprintf("http://127.0.0.1:%d/ng-rollout/%s%s", ports[callee], rid, route)
	if rid == "" {
		url = fmt.Sprintf("http://127.0.0.1:%d%s", ports[callee], route)
	}
	cl := parent
	if !f.noClient[caller] {
		cl = f.add(parent, "nemo-gym/"+caller, "HTTP POST", model.KindClient, kv{"http.method", "POST"}, kv{"http.url", url}, kv{"http.status_code", 200})
	}
	if f.noServer[callee] {
		if body != nil {
			saved := f.trace
			f.newTrace()
			body(model.SpanID{})
			f.trace = saved
		}
		return
	}
	if f.doubleClient {
		cl = f.add(cl, "nemo-gym/"+caller, "POST", model.KindClient, kv{"http.request.method", "POST"}, kv{"url.full", url}, kv{"http.response.status_code", 200})
	}
	up := cl
	if f.cut != nil && f.cut(caller, callee) {
		up = model.SpanID{}
		saved := f.trace
		f.newTrace()
		defer func() { f.trace = saved }()
	}
	name := "POST " + route
	svc := "nemo-gym/" + callee
	s := f.add(up, svc, name, model.KindServer, kv{"http.url", url}, kv{"http.target", url[len("http://127.0.0.1:8001"):]})
	f.add(s, svc, name+" http receive", model.KindInternal)
	if body != nil {
		body(s)
	}
	f.add(s, svc, name+" http send", model.KindInternal)
	f.add(s, svc, name+" http send", model.KindInternal)
}

// rollout emits one rollout of Gym's shape: the driver's call to /run, an
// agent self-call per turn, a model call per turn, tools (one sandboxed)
// and verify. turns=8, tools=6 gives 102 spans.
func (f *fleet) rollout(job model.SpanID, rid string, turns, tools int) {
	if job.IsZero() {
		f.newTrace()
	}
	f.call(job, "rollout_collection", "agent", "/run", "", func(run model.SpanID) {
		r := f.add(run, "nemo-gym/agent", "gym.rollout", model.KindInternal, kv{model.RolloutIDKey, rid})
		for t := 0; t < turns; t++ {
			f.call(r, "agent", "agent", "/v1/responses", rid, func(s model.SpanID) {
				a := f.add(s, "nemo-gym/agent", "gym.agent.responses", model.KindInternal, kv{model.RolloutIDKey, rid})
				f.call(a, "agent", "model", "/v1/responses", rid, func(s model.SpanID) {
					f.add(s, "nemo-gym/model", "gym.model.responses", model.KindInternal, kv{model.RolloutIDKey, rid})
				})
			})
		}
		for t := 0; t < tools; t++ {
			route := "/get_weather"
			if t == 0 {
				route = "/run_code"
			}
			f.call(r, "agent", "resources", route, rid, func(s model.SpanID) {
				if route == "/run_code" {
					f.add(s, "nemo-gym/resources", "gym.sandbox.exec", model.KindInternal, kv{model.RolloutIDKey, rid})
				}
			})
		}
		f.call(r, "agent", "resources", "/verify", rid, func(s model.SpanID) {
			f.add(s, "nemo-gym/resources", "gym.verify", model.KindInternal, kv{model.RolloutIDKey, rid})
		})
	})
	if f.eager {
		if err := f.st.Add(model.Batch{Spans: f.spans}); err != nil {
			f.tb.Fatal(err)
		}
		f.spans = nil
	}
}

// job emits a gym.job span and n rollouts under it.
func (f *fleet) job(n, turns, tools int) {
	f.newTrace()
	j := f.add(model.SpanID{}, "nemo-gym/rollout_collection", "gym.job", model.KindInternal)
	for i := 0; i < n; i++ {
		f.rollout(j, fmt.Sprintf("r-%d", i), turns, tools)
	}
}

// flush submits the spans built so far, in reverse order (children before
// parents, as exporters send them), and returns the snapshot.
func (f *fleet) flush() *model.Snapshot {
	f.tb.Helper()
	const chunk = 4096
	rev := make([]model.Span, len(f.spans))
	for i, sp := range f.spans {
		rev[len(f.spans)-1-i] = sp
	}
	for len(rev) > 0 {
		n := min(chunk, len(rev))
		if err := f.st.Add(model.Batch{Spans: rev[:n:n]}); err != nil {
			f.tb.Fatal(err)
		}
		rev = rev[n:]
	}
	f.spans = nil
	f.st.Sync()
	return f.st.Snapshot()
}

// gymCapture builds a snapshot of n rollouts under one job (or none).
func gymCapture(tb testing.TB, n, turns, tools int, withJob bool, mod func(*fleet)) *model.Snapshot {
	tb.Helper()
	st := model.NewStore(model.Options{QueueLen: 4})
	tb.Cleanup(st.Close)
	f := newFleet(tb, st)
	if mod != nil {
		mod(f)
	}
	if withJob {
		f.job(n, turns, tools)
	} else {
		for i := 0; i < n; i++ {
			f.rollout(model.SpanID{}, fmt.Sprintf("r-%d", i), turns, tools)
		}
	}
	return f.flush()
}

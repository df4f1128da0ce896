package model

import (
	"encoding/binary"
	"fmt"
	"slices"
)

// gymGen makes Gym-shaped rollouts: a driver CLIENT call, the agent's SERVER
// /run with ASGI children, gym.rollout, model turns and tool calls across
// four processes, with Gym's attributes.
type gymGen struct {
	l    *Local
	res  [4]ResourceID
	keys map[string]Str
	next uint64
	b    AttrBuilder
}

func newGymGen(st *Store) *gymGen {
	g := &gymGen{l: NewLocal(st.Interner()), keys: map[string]Str{}}
	for i, name := range []string{"rollout_collection", "simple_agent", "policy_model", "example_tools"} {
		var b AttrBuilder
		b.String(g.l, g.key("service.name"), []byte("nemo-gym/"+name))
		b.String(g.l, g.key("nemo.gym.server.name"), []byte(name))
		b.String(g.l, g.key("nemo.run.id"), []byte("374598f6823c"))
		g.res[i] = st.Interner().InternResource(b.Sorted(st.Interner()), g.l.Intern([]byte("nemo-gym/"+name)))
	}
	return g
}

func (g *gymGen) key(k string) Str {
	if id, ok := g.keys[k]; ok {
		return id
	}
	id := g.l.Intern([]byte(k))
	g.keys[k] = id
	return id
}

func (g *gymGen) id() SpanID {
	g.next++
	var s SpanID
	binary.BigEndian.PutUint64(s[:], g.next*0x9E3779B97F4A7C15|1)
	return s
}

// rolloutTrace is the trace of rollout n's spans.
func rolloutTrace(n int) TraceID {
	var trace TraceID
	binary.BigEndian.PutUint64(trace[:8], uint64(n)+1)
	binary.BigEndian.PutUint64(trace[8:], 0xabcdef)
	return trace
}

// rollout appends the spans of rollout n (about 4+turns*9 spans, all of
// rolloutTrace(n)) to out.
func (g *gymGen) rollout(out Batch, n int, turns int) Batch {
	rid := []byte(fmt.Sprintf("r-%06d", n))
	trace := rolloutTrace(n)
	t0 := int64(n) * 1e9
	// mk appends a span under parent to out and returns it.
	mk := func(parent SpanID, name string, kind Kind, res int, dur int64, withRID bool, url string) Span {
		g.b.Reset()
		if withRID {
			g.b.String(g.l, g.key(RolloutIDKey), rid)
		}
		if url != "" {
			g.b.String(g.l, g.key("http.request.method"), []byte("POST"))
			g.b.String(g.l, g.key("url.full"), []byte(url))
			g.b.Int(g.key("http.response.status_code"), 200)
		}
		t0 += 1000
		sp := Span{SpanID: g.id(), Start: t0, End: t0 + dur,
			Name: g.l.Intern([]byte(name)), Kind: kind, Resource: g.res[res], Attrs: g.b.Attrs()}
		sp.SetWireSize(200)
		out.Append(trace, parent, sp)
		return sp
	}
	call := func(parent SpanID, from, to int, route, inner string) {
		c := mk(parent, "HTTP POST", KindClient, from, 5e6, true, "http://127.0.0.1:8000/ng-rollout/"+string(rid)+route)
		s := mk(c.SpanID, "POST "+route, KindServer, to, 4e6, false, "")
		mk(s.SpanID, "POST "+route+" http receive", KindInternal, to, 1e3, false, "")
		mk(s.SpanID, inner, KindInternal, to, 3e6, true, "")
		mk(s.SpanID, "POST "+route+" http send", KindInternal, to, 1e3, false, "")
		mk(s.SpanID, "POST "+route+" http send", KindInternal, to, 1e3, false, "")
	}
	c := mk(SpanID{}, "HTTP POST", KindClient, 0, 1e9, false, "http://127.0.0.1:8000/run")
	s := mk(c.SpanID, "POST /run", KindServer, 1, 1e9, false, "")
	r := mk(s.SpanID, "gym.rollout", KindInternal, 1, 1e9, true, "")
	for i := 0; i < turns; i++ {
		call(r.SpanID, 1, 2, "/v1/responses", "gym.model.responses")
		call(r.SpanID, 1, 3, "/get_weather", "gym.sandbox.exec")
	}
	call(r.SpanID, 1, 3, "/verify", "gym.verify")
	return out
}

// traced is a batch of spans all of one trace. parents, if given, are
// the spans' parent ids, one a span; none given, every span is a root.
func traced(trace TraceID, spans []Span, parents ...SpanID) Batch {
	if len(parents) != 0 && len(parents) != len(spans) {
		panic(fmt.Sprintf("traced: %d spans, %d parents", len(spans), len(parents)))
	}
	b := Batch{Spans: spans, Traces: make([]TraceID, len(spans))}
	for i := range b.Traces {
		b.Traces[i] = trace
	}
	if len(parents) != 0 {
		b.Parents = parents
	}
	return b
}

// batch is rollout n as a batch of its own.
func (g *gymGen) batch(n, turns int) Batch {
	return g.rollout(Batch{}, n, turns)
}

// slice is a copy of spans [i, j) of b, with their traces and parents.
func (b Batch) slice(i, j int) Batch {
	s := b.Slice(i, j)
	return Batch{Spans: slices.Clone(s.Spans), Traces: slices.Clone(s.Traces), Parents: slices.Clone(s.Parents)}
}

// pick is a batch of b's spans at the indexes given, in that order.
func (b Batch) pick(idx ...int) Batch {
	var out Batch
	for _, i := range idx {
		out.Append(b.Traces[i], b.ParentOf(i), b.Spans[i])
	}
	return out
}

// swap exchanges spans i and j with their traces and parents, for shuffles.
func (b Batch) swap(i, j int) {
	b.Spans[i], b.Spans[j] = b.Spans[j], b.Spans[i]
	b.Traces[i], b.Traces[j] = b.Traces[j], b.Traces[i]
	if b.Parents != nil {
		b.Parents[i], b.Parents[j] = b.Parents[j], b.Parents[i]
	}
}

// reverse puts b's spans in the opposite order.
func (b Batch) reverse() {
	for i, j := 0, len(b.Spans)-1; i < j; i, j = i+1, j-1 {
		b.swap(i, j)
	}
}

// cat joins batches, in order, into a new one.
func cat(bs ...Batch) Batch {
	var out Batch
	for _, b := range bs {
		out.AppendBatch(b)
	}
	return out
}

package rollouts

import (
	"testing"

	"github.com/nemo-gym/gymtrace/model"
)

// tokenSpans builds spans by hand: the cases the store rarely makes, such
// as a call's two usage spans in two fragments of one rollout.
type tokenSpans struct {
	in *model.Interner
	l  *model.Local
}

// span is span id under the span at index up of its fragment (-1: none,
// the top, whose parent id is the fragment's TopParent), with attrs as
// key, value pairs.
func (ts *tokenSpans) span(id byte, up int32, attrs ...any) model.Span {
	var b model.AttrBuilder
	for i := 0; i < len(attrs); i += 2 {
		k := ts.l.Intern([]byte(attrs[i].(string)))
		switch v := attrs[i+1].(type) {
		case int:
			b.Int(k, int64(v))
		case float64:
			b.Double(k, v)
		case string:
			b.String(ts.l, k, []byte(v))
		}
	}
	return model.Span{SpanID: model.SpanID{id}, Parent: up, Attrs: b.Attrs()}
}

func TestTokensNested(t *testing.T) {
	ts := &tokenSpans{in: model.NewInterner()}
	ts.l = model.NewLocal(ts.in)
	// Fragment a: a model SERVER span, a gateway CLIENT span reporting
	// 50/5 under it, and a call reporting 7/3 as a double and a string.
	a := &model.Fragment{Spans: []model.Span{
		ts.span(1, -1),
		ts.span(2, 0, "gen_ai.usage.input_tokens", 50, "gen_ai.usage.output_tokens", 5, "gen_ai.response.model", "m-gw"),
		ts.span(3, 0, "llm.usage.prompt_tokens", 7.0, "llm.usage.completion_tokens", "3", "gen_ai.request.model", "m-req"),
	}}
	// Fragment b: vLLM's span for the gateway's call, under span 2 of a
	// by id only, naming no model; and a span with a negative count
	// (no count) beside a real output count.
	b := &model.Fragment{TopParent: model.SpanID{2}, Spans: []model.Span{
		ts.span(4, -1, "gen_ai.usage.prompt_tokens", 50, "gen_ai.usage.completion_tokens", 5),
		ts.span(5, 0, "gen_ai.usage.prompt_tokens", -1, "gen_ai.usage.completion_tokens", 2, "gen_ai.response.model", "m-b"),
	}}
	r := &model.Rollout{Fragments: []*model.Fragment{a, b}, Spans: 5}
	var k TokenKeys
	k.Resolve(ts.in)
	got := k.Rollout(r)
	// Span 5 is under span 4, which is under span 2: only span 5 and span
	// 3 count (the deepest of each chain).
	if got.Input != 7 || got.Output != 5 || got.Calls != 2 {
		t.Fatalf("got %+v, want 7 in, 5 out, 2 calls", got)
	}
	if len(got.Models) != 2 || got.Models[0] != "m-b" || got.Models[1] != "m-req" {
		t.Fatalf("models %q", got.Models)
	}
	// Without span 5, vLLM's span 4 counts and names the gateway's model.
	b.Spans = b.Spans[:1]
	r.Spans = 4
	got = k.Rollout(r)
	if got.Input != 57 || got.Output != 8 || got.Calls != 2 || len(got.Models) != 2 || got.Models[0] != "m-gw" {
		t.Fatalf("got %+v, want 57 in, 8 out, models m-gw and m-req", got)
	}
}

func TestTokensNoKeys(t *testing.T) {
	in := model.NewInterner()
	var k TokenKeys
	k.Resolve(in)
	r := &model.Rollout{Fragments: []*model.Fragment{{Spans: []model.Span{{}}}}, Spans: 1}
	if got := k.Rollout(r); got.Present() {
		t.Fatalf("got %+v from a capture without usage keys", got)
	}
}

// BenchmarkTokensRollout: a 100-span rollout whose model calls (10) carry
// usage, the rest Gym's HTTP attributes.
func BenchmarkTokensRollout(b *testing.B) {
	ts := &tokenSpans{in: model.NewInterner()}
	ts.l = model.NewLocal(ts.in)
	f := &model.Fragment{}
	for i := 0; i < 100; i++ {
		up := int32(i - 1)
		if i%10 == 9 {
			// A leaf under the root: calls are siblings, never nested.
			f.Spans = append(f.Spans, ts.span(byte(i+1), 0, "http.method", "POST", "gen_ai.usage.prompt_tokens", 300+i, "gen_ai.usage.completion_tokens", 40, "gen_ai.response.model", "m"))
			continue
		}
		f.Spans = append(f.Spans, ts.span(byte(i+1), up, "http.method", "POST", "http.url", "http://127.0.0.1:8000/v1/responses", "http.status_code", 200, "http.target", "/v1/responses"))
	}
	r := &model.Rollout{Fragments: []*model.Fragment{f}, Spans: len(f.Spans)}
	var k TokenKeys
	k.Resolve(ts.in)
	b.ReportAllocs()
	for b.Loop() {
		if t := k.Rollout(r); t.Calls != 10 {
			b.Fatal(t)
		}
	}
}

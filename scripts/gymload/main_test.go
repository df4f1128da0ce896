package main

import (
	"testing"

	tr "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// The request has the span shapes real Gym emits, whole traces, every parent
// present, and the id patch keeps every link while changing every id.
func TestGymRequestShape(t *testing.T) {
	req := GymRequest(512, 1)
	byID := map[string]*tr.Span{}
	var all []*tr.Span
	for _, rs := range req.ResourceSpans {
		if len(rs.Resource.Attributes) != 15 {
			t.Errorf("resource has %d attributes, want 15", len(rs.Resource.Attributes))
		}
		for _, ss := range rs.ScopeSpans {
			for _, sp := range ss.Spans {
				byID[string(sp.TraceId)+string(sp.SpanId)] = sp
				all = append(all, sp)
			}
		}
	}
	if len(all) < 512 || len(all) > 700 {
		t.Fatalf("%d spans, want 512..700", len(all))
	}
	kinds := map[string]int{}
	for _, sp := range all {
		if len(sp.ParentSpanId) > 0 && byID[string(sp.TraceId)+string(sp.ParentSpanId)] == nil {
			t.Fatalf("span %q has no parent in the request", sp.Name)
		}
		switch {
		case sp.Kind == tr.Span_SPAN_KIND_SERVER:
			kinds["server"]++
			if len(sp.Attributes) != 13 || sp.Attributes[0].Key != "http.scheme" || sp.Attributes[12].Key != "http.status_code" {
				t.Fatalf("SERVER span %q attributes %v", sp.Name, sp.Attributes)
			}
		case sp.Name == "HTTP POST":
			kinds["client"]++
			if len(sp.Attributes) != 3 || sp.Attributes[1].Key != "url.full" {
				t.Fatalf("CLIENT span attributes %v", sp.Attributes)
			}
		case sp.Kind == tr.Span_SPAN_KIND_INTERNAL && len(sp.Attributes) > 0 && sp.Attributes[0].Key == "asgi.event.type":
			kinds["asgi"]++
		}
	}
	if kinds["server"] == 0 || kinds["client"] == 0 || kinds["asgi"] < 3*kinds["server"] {
		t.Fatalf("span kinds %v", kinds)
	}

	b, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	p, n := newIDPatcher(b)
	if n != len(all) {
		t.Fatalf("patcher counted %d spans, want %d", n, len(all))
	}
	out := make([]byte, len(b))
	p.apply(out, b, 7)
	var got tr.TracesData
	if err := proto.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	var spans []*tr.Span
	for _, rs := range got.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, sp := range ss.Spans {
				ids[string(sp.TraceId)+string(sp.SpanId)] = true
				spans = append(spans, sp)
			}
		}
	}
	for _, sp := range spans {
		if byID[string(sp.TraceId)+string(sp.SpanId)] != nil {
			t.Fatalf("span %q kept its id", sp.Name)
		}
		if len(sp.ParentSpanId) > 0 && !ids[string(sp.TraceId)+string(sp.ParentSpanId)] {
			t.Fatalf("patched span %q lost its parent", sp.Name)
		}
	}
}

package receiver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/nemo-gym/gymtrace/model"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// fixtureLines returns the lines of a testdata file, for seeding fuzzers.
func fixtureLines(f *testing.F, name string) [][]byte {
	f.Helper()
	file, err := os.Open("testdata/" + name)
	if err != nil {
		f.Fatal(err)
	}
	defer file.Close()
	var out [][]byte
	sc := bufio.NewScanner(file)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		out = append(out, bytes.Clone(sc.Bytes()))
	}
	return out
}

// anyOf rebuilds an attribute value. Arrays, maps and bytes are kept as
// text by the decoders, so they come back as strings (normalized in dumps).
func anyOf(v model.Value) *commonpb.AnyValue {
	switch v.Kind {
	case model.ValBool:
		return boolv(v.Bool)
	case model.ValInt:
		return intv(v.Int)
	case model.ValDouble:
		return dblv(v.Float)
	}
	return str(v.Str)
}

func kvsOf(in *model.Interner, a model.Attrs) []*commonpb.KeyValue {
	var out []*commonpb.KeyValue
	a.Each(in, func(k string, v model.Value) bool {
		out = append(out, kv(k, anyOf(v)))
		return true
	})
	return out
}

// spansToRequest encodes decoded spans back into an OTLP request.
func spansToRequest(in *model.Interner, b model.Batch) *coltrace.ExportTraceServiceRequest {
	req := &coltrace.ExportTraceServiceRequest{}
	for i := range b.Spans {
		sp := &b.Spans[i]
		p := &tracepb.Span{
			TraceId: b.Traces[i][:], SpanId: sp.SpanID[:], Name: in.Str(sp.Name), Kind: tracepb.Span_SpanKind(sp.Kind),
			StartTimeUnixNano: uint64(sp.Start), EndTimeUnixNano: uint64(sp.End), Attributes: kvsOf(in, sp.Attrs),
			Status: &tracepb.Status{Code: tracepb.Status_StatusCode(sp.Status)},
		}
		if parent := b.ParentOf(i); !parent.IsZero() {
			p.ParentSpanId = parent[:]
		}
		if ex := sp.Extra; ex != nil {
			p.Status.Message = ex.StatusMessage
			p.DroppedAttributesCount = ex.DroppedAttrs
			for _, e := range ex.Events {
				p.Events = append(p.Events, &tracepb.Span_Event{TimeUnixNano: uint64(e.Time), Name: in.Str(e.Name), Attributes: kvsOf(in, e.Attrs)})
			}
			for _, l := range ex.Links {
				p.Links = append(p.Links, &tracepb.Span_Link{TraceId: l.TraceID[:], SpanId: l.SpanID[:], Attributes: kvsOf(in, l.Attrs)})
			}
		}
		res := in.Resource(sp.Resource)
		req.ResourceSpans = append(req.ResourceSpans, &tracepb.ResourceSpans{
			Resource:   &resourcepb.Resource{Attributes: kvsOf(in, res.Attrs)},
			ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{p}}},
		})
	}
	return req
}

// normDump dumps spans for a round-trip comparison: text kinds read as
// strings, and the attrs-capped mark (a second decode has nothing to cap)
// ignored.
func normDump(in *model.Interner, b model.Batch) string {
	cp := model.Batch{Spans: append([]model.Span(nil), b.Spans...), Traces: b.Traces, Parents: b.Parents}
	for i := range cp.Spans {
		cp.Spans[i].ClearFlags(model.FlagAttrsCapped)
	}
	d := dumpSpans(in, cp, dumpOpts{times: true})
	return strings.NewReplacer(`=arr:"`, `=s:"`, `=map:"`, `=s:"`, `=bytes:"`, `=s:"`).Replace(d)
}

func FuzzDecodeProto(f *testing.F) {
	f.Add(marshal(f, sampleRequest()))
	bin, err := os.ReadFile("testdata/req-telemetrygen-512.bin")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(bin[:4096])
	in, l := newLocal()
	for _, line := range fixtureLines(f, "all.otlp.jsonl")[:1] {
		b, _, err := DecodeJSON(l, line, Limits{})
		if err != nil {
			f.Fatal(err)
		}
		n := min(20, len(b.Spans))
		f.Add(marshal(f, spansToRequest(in, b.Slice(0, n))))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		in, l := newLocal()
		b, rep, err := DecodeProto(l, data, Limits{})
		if err != nil {
			return
		}
		// Strings DecodeProto repaired, the record's rewrite repairs too: the
		// generated types then read the request.
		if rep.ValuesRepaired > 0 {
			data = repairProtoStrings(data)
			if err := proto.Unmarshal(data, new(coltrace.ExportTraceServiceRequest)); err != nil && strings.Contains(err.Error(), "UTF-8") {
				t.Fatalf("repaired request still refused: %v", err)
			}
		}
		// What DecodeProto accepts, the generated types read as the same spans.
		var req coltrace.ExportTraceServiceRequest
		if proto.Unmarshal(data, &req) == nil {
			n := 0
			for _, rs := range req.ResourceSpans {
				for _, ss := range rs.ScopeSpans {
					n += len(ss.Spans)
				}
			}
			if n != len(b.Spans)+rep.Rejected {
				t.Fatalf("generated types see %d spans, DecodeProto %d + %d rejected", n, len(b.Spans), rep.Rejected)
			}
			in2, l2 := newLocal()
			b2, rep2, err := DecodeProto(l2, marshal(t, &req), Limits{})
			if err != nil || rep2.Rejected != rep.Rejected || len(b2.Spans) != len(b.Spans) {
				t.Fatalf("re-encoded: %d spans, %d rejected, %v; want %d, %d", len(b2.Spans), rep2.Rejected, err, len(b.Spans), rep.Rejected)
			}
			for i := range b.Spans {
				x, y := &b.Spans[i], &b2.Spans[i]
				if b.Traces[i] != b2.Traces[i] || x.SpanID != y.SpanID || b.ParentOf(i) != b2.ParentOf(i) || x.Kind != y.Kind ||
					x.Start != y.Start || x.End != y.End || in.Str(x.Name) != in2.Str(y.Name) || x.Attrs.Len(in) != y.Attrs.Len(in2) {
					t.Fatalf("span %d differs after re-encoding:\n%s\n%s", i, dumpSpan(in, b.Traces[i], b.ParentOf(i), x, dumpOpts{times: true}), dumpSpan(in2, b2.Traces[i], b2.ParentOf(i), y, dumpOpts{times: true}))
				}
			}
		}
		// The decoded spans, encoded again, decode to themselves.
		in3, l3 := newLocal()
		b3, _, err := DecodeProto(l3, marshal(t, spansToRequest(in, b)), Limits{})
		if err != nil {
			t.Fatalf("decode of re-encoded spans: %v", err)
		}
		if x, y := normDump(in, b), normDump(in3, b3); x != y {
			t.Fatalf("round trip differs:\n%s\nvs\n%s", x, y)
		}
	})
}

func FuzzDecodeJSON(f *testing.F) {
	addHostile(f)
	f.Add([]byte(specShaped))
	f.Add(otlpJSON(f, sampleRequest()))
	for _, line := range fixtureLines(f, "all.otlp.jsonl") {
		f.Add(line)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		in, l := newLocal()
		b, _, err := DecodeJSON(l, data, Limits{})
		if err != nil {
			return
		}
		in2, l2 := newLocal()
		b2, _, err := DecodeJSON(l2, otlpJSON(t, spansToRequest(in, b)), Limits{})
		if err != nil {
			t.Fatalf("decode of re-encoded spans: %v", err)
		}
		if x, y := normDump(in, b), normDump(in2, b2); x != y {
			t.Fatalf("round trip differs:\n%s\nvs\n%s", x, y)
		}
	})
}

// consoleLine writes a span, of trace and under parent (zero: a root), the
// way the Python SDK's console exporter does.
func consoleLine(in *model.Interner, trace model.TraceID, parent model.SpanID, sp *model.Span) []byte {
	iso := func(ns int64) any {
		if ns == 0 {
			return nil
		}
		return time.Unix(0, ns).UTC().Format("2006-01-02T15:04:05.000000000Z")
	}
	attrs := func(a model.Attrs) string {
		var parts []string
		a.Each(in, func(k string, v model.Value) bool {
			kb, _ := json.Marshal(k)
			var vb []byte
			switch v.Kind {
			case model.ValBool, model.ValInt:
				vb = []byte(v.String())
			case model.ValDouble:
				vb = appendFloat(nil, v.Float)
				if !bytes.ContainsAny(vb, ".eIN") {
					vb = append(vb, ".0"...)
				}
			case model.ValArray, model.ValMap:
				vb = []byte(v.Str)
			default:
				vb = appendJSONString(nil, []byte(v.Str))
			}
			parts = append(parts, string(kb)+": "+string(vb))
			return true
		})
		return "{" + strings.Join(parts, ", ") + "}"
	}
	j := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	var pid any
	if !parent.IsZero() {
		pid = "0x" + parent.String()
	}
	status := `{"status_code": "` + sp.Status.String() + `"`
	var events, links []string
	if ex := sp.Extra; ex != nil {
		if ex.StatusMessage != "" {
			status += `, "description": ` + string(appendJSONString(nil, []byte(ex.StatusMessage)))
		}
		for _, e := range ex.Events {
			events = append(events, fmt.Sprintf(`{"name": %s, "timestamp": %s, "attributes": %s}`, appendJSONString(nil, []byte(in.Str(e.Name))), j(iso(e.Time)), attrs(e.Attrs)))
		}
		for _, l := range ex.Links {
			links = append(links, fmt.Sprintf(`{"context": {"trace_id": "0x%s", "span_id": "0x%s"}, "attributes": %s}`, l.TraceID, l.SpanID, attrs(l.Attrs)))
		}
	}
	return fmt.Appendf(nil, `{"name": %s, "context": {"trace_id": "0x%s", "span_id": "0x%s", "trace_state": "[]"}, "kind": "SpanKind.%s", "parent_id": %s, "start_time": %s, "end_time": %s, "status": %s}, "attributes": %s, "events": [%s], "links": [%s], "resource": {"attributes": %s, "schema_url": ""}}`,
		appendJSONString(nil, []byte(in.Str(sp.Name))), trace, sp.SpanID, sp.Kind, j(pid), j(iso(sp.Start)), j(iso(sp.End)), status,
		attrs(sp.Attrs), strings.Join(events, ", "), strings.Join(links, ", "), attrs(in.Resource(sp.Resource).Attrs))
}

func FuzzConsoleLine(f *testing.F) {
	addHostile(f)
	for _, name := range []string{"python-sdk-real.console.jsonl", "all.console.jsonl"} {
		for i, line := range fixtureLines(f, name) {
			if i%7 == 0 || name[0] == 'p' {
				f.Add(line)
			}
		}
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		in, l := newLocal()
		c := newConsoleDecoder(l, Limits{})
		defer c.release()
		sp, trace, kind, err := c.line(line)
		if err != nil || kind != recSpan || !utf8.Valid(line) {
			return
		}
		// A span the reader accepts, printed again in the console format,
		// reads back as the same span.
		out := consoleLine(in, trace, c.parent, &sp)
		in2, l2 := newLocal()
		c2 := newConsoleDecoder(l2, Limits{})
		defer c2.release()
		sp2, trace2, kind2, err := c2.line(out)
		if err != nil || kind2 != recSpan {
			t.Fatalf("re-read %s: kind %d, %v", out, kind2, err)
		}
		x := normDump(in, model.Batch{Spans: []model.Span{sp}, Traces: []model.TraceID{trace}, Parents: []model.SpanID{c.parent}})
		y := normDump(in2, model.Batch{Spans: []model.Span{sp2}, Traces: []model.TraceID{trace2}, Parents: []model.SpanID{c2.parent}})
		if x != y {
			t.Fatalf("round trip differs:\n%s\nvs\n%s\nline %s", x, y, out)
		}
	})
}

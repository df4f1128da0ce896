package receiver

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/nemo-gym/gymtrace/model"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// FuzzAcceptedIsRecorded checks, on arbitrary bytes in either encoding,
// what an acknowledgement promises: a request the decoder accepts is
// recordable, and its record lines reopen (as the file reader reads them)
// to the spans the store got.
func FuzzAcceptedIsRecorded(f *testing.F) {
	f.Add(marshal(f, sampleRequest()), false)
	f.Add(otlpJSON(f, sampleRequest()), true)
	for _, line := range fixtureLines(f, "all.otlp.jsonl")[:1] {
		f.Add(line, true)
	}
	for _, s := range acceptedRecordCases(f) {
		f.Add(s.body, s.json)
	}
	f.Fuzz(func(t *testing.T, data []byte, asJSON bool) {
		checkAcceptedIsRecorded(t, data, asJSON)
	})
}

func checkAcceptedIsRecorded(t *testing.T, data []byte, asJSON bool) {
	t.Helper()
	format := formatProto
	if asJSON {
		format = formatJSON
	}
	in, l := newLocal()
	var (
		b   model.Batch
		rep Report
		err error
	)
	if asJSON {
		b, rep, err = DecodeJSON(l, data, Limits{})
	} else {
		b, rep, err = DecodeProto(l, data, Limits{})
	}
	if err == nil {
		err = checkRecordable(data, format) // as the server does when recording
	}
	if err != nil || len(b.Spans) == 0 {
		return // refused, or nothing to record
	}
	line, err := appendRecordLines(nil, recordItem{body: recordBody(data, format, rep), format: format, sig: signalTraces})
	if err != nil {
		t.Fatalf("accepted (%d spans) but not recordable: %v", len(b.Spans), err)
	}
	if !asJSON {
		// The direct conversion, when it takes the request, writes what
		// the generated types write.
		if direct, err := appendTraceWireJSON(nil, data); err == nil {
			typed, err := appendTraceLinesTyped(nil, data)
			if err != nil {
				t.Fatalf("converted directly, but not through the generated types: %v", err)
			}
			if !bytes.Equal(direct, typed) {
				t.Fatalf("direct conversion differs from the generated types:\ndirect: %.2000s\ntyped:  %.2000s", direct, typed)
			}
		}
	}
	in2, l2 := newLocal()
	var got model.Batch
	for _, ln := range bytes.Split(bytes.TrimSuffix(line, []byte("\n")), []byte("\n")) {
		b2, _, err := DecodeJSON(l2, ln, Limits{})
		if err != nil {
			t.Fatalf("accepted and recorded, but the record line does not reopen: %v\n%.2000s", err, ln)
		}
		got.AppendBatch(b2)
	}
	if x, y := dumpSpans(in, b, dumpOpts{times: true}), dumpSpans(in2, got, dumpOpts{times: true}); x != y {
		t.Fatalf("the record reopens to other spans:\nstored:\n%s\nreopened:\n%s", x, y)
	}
}

type recordCase struct {
	name string
	body []byte
	json bool
}

// TestAcceptedIsRecorded runs the property on the cases a review found:
// fields the store ignores but the record keeps, enums out of range, and
// values nested to the bound.
func TestAcceptedIsRecorded(t *testing.T) {
	for _, c := range acceptedRecordCases(t) {
		t.Run(c.name, func(t *testing.T) { checkAcceptedIsRecorded(t, c.body, c.json) })
	}
}

// acceptedRecordCases builds requests with the fields that used to be
// accepted but not recordable. Invalid UTF-8 cannot be marshalled, so it
// replaces same-length markers in the wire bytes.
func acceptedRecordCases(tb testing.TB) []recordCase {
	tb.Helper()
	mark := func(req *coltrace.ExportTraceServiceRequest, marker string) []byte {
		b := marshal(tb, req)
		bad := append([]byte{0xff, 0xfe}, bytes.Repeat([]byte{'x'}, len(marker)-2)...)
		if !bytes.Contains(b, []byte(marker)) {
			tb.Fatalf("marker %q not in the request", marker)
		}
		return bytes.ReplaceAll(b, []byte(marker), bad)
	}
	span := func(req *coltrace.ExportTraceServiceRequest) *tracepb.Span {
		return req.ResourceSpans[0].ScopeSpans[0].Spans[0]
	}
	var cases []recordCase
	{
		r := testRequest(2)
		span(r).TraceState = "@@tracestate@@"
		cases = append(cases, recordCase{"span trace_state not UTF-8", mark(r, "@@tracestate@@"), false})
	}
	{
		r := testRequest(2)
		r.ResourceSpans[0].ScopeSpans[0].Scope = &commonpb.InstrumentationScope{Name: "@@scopename@@", Version: "@@scopever@@"}
		cases = append(cases, recordCase{"scope name not UTF-8", mark(r, "@@scopename@@"), false})
		cases = append(cases, recordCase{"scope version not UTF-8", mark(r, "@@scopever@@"), false})
	}
	{
		r := testRequest(2)
		r.ResourceSpans[0].SchemaUrl = "@@schemares@@"
		r.ResourceSpans[0].ScopeSpans[0].SchemaUrl = "@@schemascope@@"
		cases = append(cases, recordCase{"resource schema_url not UTF-8", mark(r, "@@schemares@@"), false})
		cases = append(cases, recordCase{"scope schema_url not UTF-8", mark(r, "@@schemascope@@"), false})
	}
	{
		r := testRequest(2)
		span(r).Links = []*tracepb.Span_Link{{TraceId: span(r).TraceId, SpanId: span(r).SpanId, TraceState: "@@linkstate@@"}}
		cases = append(cases, recordCase{"link trace_state not UTF-8", mark(r, "@@linkstate@@"), false})
	}
	{
		r := testRequest(2)
		span(r).Kind = 99
		span(r).Status = &tracepb.Status{Code: 7, Message: "odd"}
		cases = append(cases, recordCase{"kind and status out of range", marshal(tb, r), false})
		cases = append(cases, recordCase{"kind and status out of range, JSON", []byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"abababababababababababababababab","spanId":"0000000000000001","name":"op","kind":99,"status":{"code":7}}]}]}]}`), true})
	}
	{
		// ScopeSpans whose scope field holds bytes that are no message.
		sp, err := proto.Marshal(span(testRequest(1)))
		if err != nil {
			tb.Fatal(err)
		}
		var ss []byte
		ss = protowire.AppendTag(ss, 1, protowire.BytesType)
		ss = protowire.AppendBytes(ss, []byte{0x0a, 0x05, 'a'})
		ss = protowire.AppendTag(ss, 2, protowire.BytesType)
		ss = protowire.AppendBytes(ss, sp)
		var rs, req []byte
		rs = protowire.AppendTag(rs, 2, protowire.BytesType)
		rs = protowire.AppendBytes(rs, ss)
		req = protowire.AppendTag(req, 1, protowire.BytesType)
		req = protowire.AppendBytes(req, rs)
		cases = append(cases, recordCase{"malformed scope bytes", req, false})
	}
	for _, depth := range []int{31, 32, 33} {
		v := &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "leaf"}}
		for i := 0; i < depth; i++ {
			v = &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: []*commonpb.AnyValue{v}}}}
		}
		r := testRequest(1)
		span(r).Attributes = append(span(r).Attributes, &commonpb.KeyValue{Key: "deep", Value: v})
		cases = append(cases, recordCase{fmt.Sprintf("value nested %d deep", depth), marshal(tb, r), false})
		cases = append(cases, recordCase{fmt.Sprintf("value nested %d deep, JSON", depth), otlpJSON(tb, r), true})
	}
	return cases
}

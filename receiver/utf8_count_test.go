package receiver

import (
	"context"
	"testing"

	"github.com/nemo-gym/gymtrace/model"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// TestRepairCountedAlikeOverEveryEncoding sends one bad string in each
// place a request can carry one, as protobuf over gRPC and as JSON over
// HTTP, each to a server of its own: the two count the same repairs, those
// of the strings the store keeps (a name, a key, a value, a status message,
// an event, the resource), and none for the parts it does not keep (the
// scope, schema URLs, trace states, unknown fields), which only the record
// holds, repaired.
func TestRepairCountedAlikeOverEveryEncoding(t *testing.T) {
	const bad = valuePlaceholder
	str := func(s string) *commonpb.AnyValue {
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: s}}
	}
	cases := []struct {
		name string
		kept bool
		edit func(r *coltrace.ExportTraceServiceRequest)
	}{
		{"span name", true, func(r *coltrace.ExportTraceServiceRequest) { r.ResourceSpans[0].ScopeSpans[0].Spans[3].Name = bad }},
		{"attribute key", true, func(r *coltrace.ExportTraceServiceRequest) {
			sp := r.ResourceSpans[0].ScopeSpans[0].Spans[3]
			sp.Attributes = append(sp.Attributes, &commonpb.KeyValue{Key: bad, Value: str("v")})
		}},
		{"array value", true, func(r *coltrace.ExportTraceServiceRequest) {
			sp := r.ResourceSpans[0].ScopeSpans[0].Spans[3]
			sp.Attributes = append(sp.Attributes, &commonpb.KeyValue{Key: "a", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: []*commonpb.AnyValue{str(bad)}}}}})
		}},
		{"status message", true, func(r *coltrace.ExportTraceServiceRequest) {
			r.ResourceSpans[0].ScopeSpans[0].Spans[3].Status = &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: bad}
		}},
		{"event name", true, func(r *coltrace.ExportTraceServiceRequest) {
			r.ResourceSpans[0].ScopeSpans[0].Spans[3].Events = []*tracepb.Span_Event{{Name: bad, TimeUnixNano: 1}}
		}},
		{"resource attribute", true, func(r *coltrace.ExportTraceServiceRequest) {
			res := r.ResourceSpans[0].Resource
			res.Attributes = append(res.Attributes, &commonpb.KeyValue{Key: "host.name", Value: str(bad)})
		}},
		{"scope name", false, func(r *coltrace.ExportTraceServiceRequest) {
			r.ResourceSpans[0].ScopeSpans[0].Scope = &commonpb.InstrumentationScope{Name: bad}
		}},
		{"scope version", false, func(r *coltrace.ExportTraceServiceRequest) {
			r.ResourceSpans[0].ScopeSpans[0].Scope = &commonpb.InstrumentationScope{Name: "s", Version: bad}
		}},
		{"scope schema URL", false, func(r *coltrace.ExportTraceServiceRequest) { r.ResourceSpans[0].ScopeSpans[0].SchemaUrl = bad }},
		{"resource schema URL", false, func(r *coltrace.ExportTraceServiceRequest) { r.ResourceSpans[0].SchemaUrl = bad }},
		{"trace state", false, func(r *coltrace.ExportTraceServiceRequest) {
			r.ResourceSpans[0].ScopeSpans[0].Spans[3].TraceState = bad
		}},
		{"link trace state", false, func(r *coltrace.ExportTraceServiceRequest) {
			sp := r.ResourceSpans[0].ScopeSpans[0].Spans[3]
			sp.Links = []*tracepb.Span_Link{{TraceId: sp.TraceId, SpanId: sp.SpanId, TraceState: bad}}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := testRequest(8)
			tc.edit(req)
			grpcSrv, grpcStore := startServer(t, Config{HTTPAddr: Off}, model.Options{})
			ga, _ := grpcSrv.Addrs()
			var resp coltrace.ExportTraceServiceResponse
			if err := dialRaw(t, ga).Invoke(context.Background(), traceExport, &rawRequest{b: patch(t, encodeRequest(t, req))}, &resp); err != nil {
				t.Fatalf("gRPC: %v", err)
			}
			httpSrv, httpStore := startServer(t, Config{GRPCAddr: Off}, model.Options{})
			_, ha := httpSrv.Addrs()
			if code, body := postHTTP(t, ha, "/v1/traces", mediaJSON, "", patch(t, otlpJSON(t, req))); code != 200 {
				t.Fatalf("HTTP JSON: %d %s", code, body)
			}
			grpcStore.Sync()
			httpStore.Sync()
			want := int64(0)
			if tc.kept {
				want = 1
			}
			p, j := grpcStore.Snapshot().Stats.ValuesRepaired, httpStore.Snapshot().Stats.ValuesRepaired
			if p != want || j != want {
				t.Errorf("repairs counted: protobuf %d, JSON %d; want %d each", p, j, want)
			}
		})
	}
}

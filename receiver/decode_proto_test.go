package receiver

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/nemo-gym/gymtrace/internal/golden"
	"github.com/nemo-gym/gymtrace/model"
	collogs "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// dumpOpts select what dumpSpan prints.
type dumpOpts struct {
	times    bool // start/end/event times in ns
	wireSize bool
	// serviceOnly prints a resource by its service name, not every attribute.
	serviceOnly bool
}

// dumpSpan renders one span, of trace and under parent (zero: a root), as
// stable text: ids, name, kind, status, resource, flags and every
// attribute, event and link.
func dumpSpan(t *model.Interner, trace model.TraceID, parent model.SpanID, sp *model.Span, o dumpOpts) string {
	var b strings.Builder
	pid := "-"
	if !parent.IsZero() {
		pid = parent.String()
	}
	fmt.Fprintf(&b, "span %s/%s parent=%s %s %q status=%s", trace, sp.SpanID, pid, sp.Kind, t.Str(sp.Name), sp.Status)
	if o.times {
		fmt.Fprintf(&b, " start=%d end=%d", sp.Start, sp.End)
	}
	if o.wireSize {
		fmt.Fprintf(&b, " size=%d", sp.WireSize())
	}
	if sp.Flags() != 0 {
		fmt.Fprintf(&b, " flags=%03b", sp.Flags())
	}
	res := t.Resource(sp.Resource)
	if o.serviceOnly {
		fmt.Fprintf(&b, " service=%q\n", t.Str(res.Service))
	} else {
		fmt.Fprintf(&b, "\n  resource service=%q %s\n", t.Str(res.Service), dumpAttrs(t, res.Attrs))
	}
	if a := dumpAttrs(t, sp.Attrs); a != "" {
		fmt.Fprintf(&b, "  attrs %s\n", a)
	}
	if ex := sp.Extra; ex != nil {
		if ex.StatusMessage != "" {
			fmt.Fprintf(&b, "  status_message %q\n", ex.StatusMessage)
		}
		if ex.DroppedAttrs != 0 {
			fmt.Fprintf(&b, "  dropped_attrs %d\n", ex.DroppedAttrs)
		}
		for _, e := range ex.Events {
			fmt.Fprintf(&b, "  event %q", t.Str(e.Name))
			if o.times {
				fmt.Fprintf(&b, " time=%d", e.Time)
			}
			fmt.Fprintf(&b, " %s\n", dumpAttrs(t, e.Attrs))
		}
		for _, l := range ex.Links {
			fmt.Fprintf(&b, "  link %s/%s %s\n", l.TraceID, l.SpanID, dumpAttrs(t, l.Attrs))
		}
	}
	return b.String()
}

var kindLetter = map[model.ValueKind]string{
	model.ValString: "s", model.ValBool: "b", model.ValInt: "i", model.ValDouble: "d",
	model.ValArray: "arr", model.ValMap: "map", model.ValBytes: "bytes",
}

func dumpAttrs(t *model.Interner, a model.Attrs) string {
	var parts []string
	a.Each(t, func(k string, v model.Value) bool {
		parts = append(parts, fmt.Sprintf("%s=%s:%q", k, kindLetter[v.Kind], v.String()))
		return true
	})
	return strings.Join(parts, " ")
}

// dumpSpans renders a batch's spans sorted by trace and span id.
func dumpSpans(t *model.Interner, spans model.Batch, o dumpOpts) string {
	order := make([]int, len(spans.Spans))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool {
		a, b := order[i], order[j]
		if ta, tb := spans.Traces[a], spans.Traces[b]; ta != tb {
			return bytes.Compare(ta[:], tb[:]) < 0
		}
		return bytes.Compare(spans.Spans[a].SpanID[:], spans.Spans[b].SpanID[:]) < 0
	})
	var b strings.Builder
	for _, i := range order {
		b.WriteString(dumpSpan(t, spans.Traces[i], spans.ParentOf(i), &spans.Spans[i], o))
	}
	return b.String()
}

func str(s string) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: s}}
}

func kv(k string, v *commonpb.AnyValue) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: v}
}

func intv(i int64) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: i}}
}

func boolv(b bool) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: b}}
}

func dblv(f float64) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: f}}
}

func arrv(vs ...*commonpb.AnyValue) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: vs}}}
}

func id(n int, b byte) []byte { return bytes.Repeat([]byte{b}, n) }

// sampleRequest builds a request exercising every span field the decoder keeps.
func sampleRequest() *coltrace.ExportTraceServiceRequest {
	res := &resourcepb.Resource{Attributes: []*commonpb.KeyValue{
		kv("service.name", str("nemo-gym/simple_agent")),
		kv("nemo.gym.server.type", str("responses_api_agents")),
	}}
	return &coltrace.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource: res,
		ScopeSpans: []*tracepb.ScopeSpans{{
			Scope: &commonpb.InstrumentationScope{Name: "nemo_gym", Version: "0.2.0"},
			Spans: []*tracepb.Span{
				{
					TraceId: id(16, 0xaa), SpanId: id(8, 0x01), Name: "POST /run", Kind: tracepb.Span_SPAN_KIND_SERVER,
					StartTimeUnixNano: 1_000, EndTimeUnixNano: 5_000, Flags: 0x101,
					Attributes: []*commonpb.KeyValue{
						kv("http.target", str("/ng-rollout/r-1/run")),
						kv("http.status_code", intv(500)),
						kv("ratio", dblv(0.25)),
						kv("ok", boolv(false)),
						kv("tags", arrv(str("a"), intv(2), boolv(true), dblv(1.5))),
						kv("map", &commonpb.AnyValue{Value: &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{Values: []*commonpb.KeyValue{kv("k", str("v\"q"))}}}}),
						kv("raw", &commonpb.AnyValue{Value: &commonpb.AnyValue_BytesValue{BytesValue: []byte{0, 1, 2}}}),
						kv("nemo.span.truncated", boolv(true)),
					},
					DroppedAttributesCount: 2,
					Events:                 []*tracepb.Span_Event{{TimeUnixNano: 4_000, Name: "exception", Attributes: []*commonpb.KeyValue{kv("exception.type", str("ValueError"))}}},
					Links:                  []*tracepb.Span_Link{{TraceId: id(16, 0xbb), SpanId: id(8, 0x02), Attributes: []*commonpb.KeyValue{kv("k", str("v"))}}},
					Status:                 &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: "ValueError: boom"},
				},
				{
					TraceId: id(16, 0xaa), SpanId: id(8, 0x03), ParentSpanId: id(8, 0x01), Name: "gym.rollout",
					Kind: tracepb.Span_SPAN_KIND_INTERNAL, StartTimeUnixNano: 2_000, EndTimeUnixNano: 3_000,
					Attributes: []*commonpb.KeyValue{kv("nemo.gym.rollout.id", str("r-1"))},
					Status:     &tracepb.Status{},
				},
			},
		}},
	}}}
}

func marshal(t testing.TB, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func newLocal() (*model.Interner, *model.Local) {
	in := model.NewInterner()
	return in, model.NewLocal(in)
}

func TestDecodeProto(t *testing.T) {
	req := sampleRequest()
	in, l := newLocal()
	batch, rep, err := DecodeProto(l, marshal(t, req), Limits{})
	if err != nil {
		t.Fatalf("DecodeProto: %v", err)
	}
	if rep != (Report{}) {
		t.Errorf("report = %+v, want zero", rep)
	}
	// WireSize is each span's encoded length, exactly.
	for i, sp := range batch.Spans {
		if want := proto.Size(req.ResourceSpans[0].ScopeSpans[0].Spans[i]); int(sp.WireSize()) != want {
			t.Errorf("span %d WireSize = %d, want %d", i, sp.WireSize(), want)
		}
		if sp.Parent != -1 {
			t.Errorf("span %d Parent = %d, want -1 (the store sets it)", i, sp.Parent)
		}
	}
	golden.Check(t, []byte(dumpSpans(in, batch, dumpOpts{times: true, wireSize: true})))
}

func TestDecodeProtoRejects(t *testing.T) {
	good := func() *tracepb.Span { return &tracepb.Span{TraceId: id(16, 1), SpanId: id(8, 2), Name: "ok"} }
	tests := []struct {
		name   string
		mutate func(*tracepb.Span)
		reason string
	}{
		{"short trace id", func(s *tracepb.Span) { s.TraceId = id(5, 1) }, "resource_spans[0].scope_spans[0].spans[1]: trace_id has 5 bytes, want 16"},
		{"missing span id", func(s *tracepb.Span) { s.SpanId = nil }, "resource_spans[0].scope_spans[0].spans[1]: span_id has 0 bytes, want 8"},
		{"long parent id", func(s *tracepb.Span) { s.ParentSpanId = id(9, 3) }, "resource_spans[0].scope_spans[0].spans[1]: parent_span_id has 9 bytes, want 8"},
		{"zero trace id", func(s *tracepb.Span) { s.TraceId = id(16, 0) }, "resource_spans[0].scope_spans[0].spans[1]: trace_id is all zeros"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bad, bad2 := good(), good()
			tt.mutate(bad)
			tt.mutate(bad2)
			bad2.Name = "second"
			req := &coltrace.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
				ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{good(), bad, good(), bad2}}},
			}}}
			in, l := newLocal()
			batch, rep, err := DecodeProto(l, marshal(t, req), Limits{})
			if err != nil {
				t.Fatalf("DecodeProto: %v", err)
			}
			if len(batch.Spans) != 2 || rep.Rejected != 2 {
				t.Fatalf("got %d spans, %d rejected; want 2 and 2", len(batch.Spans), rep.Rejected)
			}
			if rep.Reason != tt.reason {
				t.Errorf("reason = %q, want %q", rep.Reason, tt.reason)
			}
			for _, sp := range batch.Spans {
				if in.Str(sp.Name) != "ok" {
					t.Errorf("kept span %q, want only the valid ones", in.Str(sp.Name))
				}
			}
		})
	}
}

func TestDecodeProtoMalformed(t *testing.T) {
	full := marshal(t, sampleRequest())
	// Locate the first span's bytes to cut inside it.
	withSpanTag := func(extra []byte) []byte {
		span := protowire.AppendTag(nil, 1, protowire.BytesType)
		span = protowire.AppendBytes(span, id(16, 1))
		span = append(span, extra...)
		ss := protowire.AppendTag(nil, 2, protowire.BytesType)
		ss = protowire.AppendBytes(ss, span)
		rs := protowire.AppendTag(nil, 2, protowire.BytesType)
		rs = protowire.AppendBytes(rs, ss)
		req := protowire.AppendTag(nil, 1, protowire.BytesType)
		return protowire.AppendBytes(req, rs)
	}
	tests := []struct {
		name string
		in   []byte
		want string
	}{
		{"cut request", full[:len(full)-7], "resource_spans[0]: truncated"},
		{"cut name in span", withSpanTag([]byte{0x2a, 0x10, 'a'}), "resource_spans[0].scope_spans[0].spans[0]: truncated"},
		{"bad wire type", withSpanTag([]byte{0x2f}), "resource_spans[0].scope_spans[0].spans[0]: bad tag or value"},
		{"field number zero", []byte{0x02, 0x00}, "resource_spans[0]: bad tag or value"},
		{"cut attribute value", withSpanTag([]byte{0x4a, 0x06, 0x0a, 0x01, 'k', 0x12, 0x05, 0x0a}), "resource_spans[0].scope_spans[0].spans[0].attributes[0]: truncated"},
		{"cut nested array", withSpanTag([]byte{0x4a, 0x08, 0x0a, 0x01, 'k', 0x12, 0x03, 0x2a, 0x01, 0x0a}), "resource_spans[0].scope_spans[0].spans[0].attributes[0].value: truncated"},
		{"invalid UTF-8 in array", withSpanTag([]byte{0x4a, 0x0a, 0x0a, 0x01, 'k', 0x12, 0x05, 0x2a, 0x03, 0x0a, 0x01, 0xfe}), "resource_spans[0].scope_spans[0].spans[0].attributes[0].value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, l := newLocal()
			_, _, err := DecodeProto(l, tt.in, Limits{})
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("DecodeProto(% x) error = %v, want prefix %q", tt.in, err, tt.want)
			}
		})
	}
}

func TestDecodeProtoLimits(t *testing.T) {
	var attrs []*commonpb.KeyValue
	for i := range 10 {
		attrs = append(attrs, kv(fmt.Sprintf("k%d", i), str(strings.Repeat("é", 10)))) // 20 bytes
	}
	req := &coltrace.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{{
			TraceId: id(16, 1), SpanId: id(8, 2), Name: "capped", Attributes: attrs, DroppedAttributesCount: 1,
		}}}},
	}}}
	tests := []struct {
		name              string
		lim               Limits
		keep, dropped     int
		truncated, valLen int
	}{
		{"defaults keep all", Limits{}, 10, 1, 0, 20},
		{"max 4 attrs", Limits{MaxAttrs: 4}, 4, 7, 0, 20},
		{"value cut at rune boundary", Limits{MaxValueLen: 7}, 10, 1, 10, 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, l := newLocal()
			b, rep, err := DecodeProto(l, marshal(t, req), tt.lim)
			if err != nil {
				t.Fatal(err)
			}
			sp := b.Spans[0]
			if n := sp.Attrs.Len(in); n != tt.keep {
				t.Errorf("kept %d attrs, want %d", n, tt.keep)
			}
			if sp.Extra == nil || int(sp.Extra.DroppedAttrs) != tt.dropped {
				t.Errorf("Extra = %+v, want DroppedAttrs %d", sp.Extra, tt.dropped)
			}
			if rep.AttrsDropped != tt.dropped-1 || rep.ValuesTruncated != tt.truncated {
				t.Errorf("report = %+v, want %d dropped, %d truncated", rep, tt.dropped-1, tt.truncated)
			}
			if capped := sp.Flags()&model.FlagAttrsCapped != 0; capped != (tt.dropped > 1) {
				t.Errorf("FlagAttrsCapped = %v", capped)
			}
			v, _ := sp.Attrs.Get(in, "k0")
			if len(v.Str) != tt.valLen {
				t.Errorf("k0 = %q (%d bytes), want %d bytes", v.Str, len(v.Str), tt.valLen)
			}
		})
	}
}

func TestDecodeProtoResourceCache(t *testing.T) {
	// Two requests from one process must share one resource id, and a new
	// interner must not see ids cached for another one.
	b := marshal(t, sampleRequest())
	in, l := newLocal()
	b1, _, _ := DecodeProto(l, b, Limits{})
	b2, _, _ := DecodeProto(l, b, Limits{})
	if b1.Spans[0].Resource != b2.Spans[0].Resource || b1.Spans[0].Resource == 0 {
		t.Fatalf("resource ids %d, %d; want equal and non-zero", b1.Spans[0].Resource, b2.Spans[0].Resource)
	}
	if got := in.Str(in.Resource(b1.Spans[0].Resource).Service); got != "nemo-gym/simple_agent" {
		t.Errorf("service = %q", got)
	}
	in2, l2 := newLocal()
	b3, _, _ := DecodeProto(l2, b, Limits{})
	if got := in2.Str(in2.Resource(b3.Spans[0].Resource).Service); got != "nemo-gym/simple_agent" {
		t.Errorf("second interner: service = %q", got)
	}
}

func TestCountProto(t *testing.T) {
	pts := func(n int) []*metricspb.NumberDataPoint { return make([]*metricspb.NumberDataPoint, n) }
	mreq := &colmetrics.ExportMetricsServiceRequest{ResourceMetrics: []*metricspb.ResourceMetrics{{
		ScopeMetrics: []*metricspb.ScopeMetrics{{Metrics: []*metricspb.Metric{
			{Name: "g", Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: fill(pts(2))}}},
			{Name: "s", Data: &metricspb.Metric_Sum{Sum: &metricspb.Sum{DataPoints: fill(pts(1))}}},
		}}, {Metrics: []*metricspb.Metric{
			{Name: "h", Data: &metricspb.Metric_Histogram{Histogram: &metricspb.Histogram{DataPoints: []*metricspb.HistogramDataPoint{{Count: 1}}}}},
			{Name: "q", Data: &metricspb.Metric_Summary{Summary: &metricspb.Summary{DataPoints: []*metricspb.SummaryDataPoint{{Count: 1}}}}},
		}}},
	}}}
	lreq := &collogs.ExportLogsServiceRequest{ResourceLogs: []*logspb.ResourceLogs{{
		ScopeLogs: []*logspb.ScopeLogs{
			{LogRecords: []*logspb.LogRecord{{SeverityText: "INFO"}, {SeverityText: "WARN"}}},
			{LogRecords: []*logspb.LogRecord{{SeverityText: "ERROR"}}},
		},
	}}}
	metrics, logs := marshal(t, mreq), marshal(t, lreq)
	tests := []struct {
		name    string
		count   func([]byte) (int, error)
		in      []byte
		want    int
		wantErr string
	}{
		{"metrics", CountMetricPoints, metrics, 5, ""},
		{"logs", CountLogRecords, logs, 3, ""},
		{"metrics cut", CountMetricPoints, metrics[:len(metrics)-3], 0, "resource_metrics[0]: truncated"},
		{"logs cut", CountLogRecords, logs[:len(logs)-3], 0, "resource_logs[0]: truncated"},
		{"empty", CountLogRecords, nil, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := tt.count(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || n != tt.want {
				t.Fatalf("count = %d, %v; want %d", n, err, tt.want)
			}
		})
	}
}

// fill gives every point a value, so each encodes to a non-empty message.
func fill(p []*metricspb.NumberDataPoint) []*metricspb.NumberDataPoint {
	for i := range p {
		p[i] = &metricspb.NumberDataPoint{Value: &metricspb.NumberDataPoint_AsInt{AsInt: int64(i + 1)}}
	}
	return p
}

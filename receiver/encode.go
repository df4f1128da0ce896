package receiver

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"strings"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/nemo-gym/gymtrace/model"
)

// ExportLineSpans is how many spans one exported line holds at most: the
// SDK's batch size, so no line nears the readers' line bound.
const ExportLineSpans = 512

// WriteSpansJSON writes b's spans as OTLP/JSON lines, one
// ExportTraceServiceRequest of at most ExportLineSpans spans per line, the
// spans of each line grouped by process (resource) in their given order:
// the format of the Collector's file exporter, which gymtrace open, the
// Collector's otlpjsonfile receiver and otel-tui's --from-json-file read.
// Array and map values, which the model keeps as JSON text, are written as
// arrays and maps again. The scope (instrumentation library) is not kept by
// the model and is written empty.
func WriteSpansJSON(w io.Writer, in *model.Interner, b model.Batch) error {
	var line []byte
	for at := 0; at < len(b.Spans); at += ExportLineSpans {
		end := min(len(b.Spans), at+ExportLineSpans)
		line = AppendTraceRequestJSON(line[:0], exportRequest(in, b.Slice(at, end)))
		line = append(line, '\n')
		if _, err := w.Write(line); err != nil {
			return err
		}
	}
	return nil
}

// exportRequest returns b's spans as one request.
func exportRequest(in *model.Interner, b model.Batch) *coltrace.ExportTraceServiceRequest {
	req := &coltrace.ExportTraceServiceRequest{}
	byRes := map[model.ResourceID]*tracepb.ScopeSpans{}
	for i := range b.Spans {
		sp := &b.Spans[i]
		ss := byRes[sp.Resource]
		if ss == nil {
			ss = &tracepb.ScopeSpans{Scope: &commonpb.InstrumentationScope{}}
			byRes[sp.Resource] = ss
			req.ResourceSpans = append(req.ResourceSpans, &tracepb.ResourceSpans{
				Resource:   &resourcepb.Resource{Attributes: keyValues(in, in.Resource(sp.Resource).Attrs)},
				ScopeSpans: []*tracepb.ScopeSpans{ss},
			})
		}
		ss.Spans = append(ss.Spans, exportSpan(in, b.Traces[i], b.ParentOf(i), sp))
	}
	return req
}

func exportSpan(in *model.Interner, trace model.TraceID, parent model.SpanID, sp *model.Span) *tracepb.Span {
	out := &tracepb.Span{
		TraceId:           append([]byte(nil), trace[:]...),
		SpanId:            append([]byte(nil), sp.SpanID[:]...),
		Name:              in.Str(sp.Name),
		Kind:              tracepb.Span_SpanKind(sp.Kind),
		StartTimeUnixNano: uint64(sp.Start),
		EndTimeUnixNano:   uint64(sp.End),
		Attributes:        keyValues(in, sp.Attrs),
	}
	if !parent.IsZero() {
		out.ParentSpanId = append([]byte(nil), parent[:]...)
	}
	st := &tracepb.Status{Code: tracepb.Status_StatusCode(sp.Status)}
	if ex := sp.Extra; ex != nil {
		st.Message = ex.StatusMessage
		out.DroppedAttributesCount = ex.DroppedAttrs
		for _, ev := range ex.Events {
			out.Events = append(out.Events, &tracepb.Span_Event{TimeUnixNano: uint64(ev.Time), Name: in.Str(ev.Name), Attributes: keyValues(in, ev.Attrs)})
		}
		for _, ln := range ex.Links {
			out.Links = append(out.Links, &tracepb.Span_Link{
				TraceId: append([]byte(nil), ln.TraceID[:]...), SpanId: append([]byte(nil), ln.SpanID[:]...),
				Attributes: keyValues(in, ln.Attrs),
			})
		}
	}
	if st.Code != 0 || st.Message != "" {
		out.Status = st
	}
	return out
}

func keyValues(in *model.Interner, a model.Attrs) []*commonpb.KeyValue {
	var out []*commonpb.KeyValue
	a.Each(in, func(k string, v model.Value) bool {
		out = append(out, &commonpb.KeyValue{Key: k, Value: anyValue(v)})
		return true
	})
	return out
}

func anyValue(v model.Value) *commonpb.AnyValue {
	switch v.Kind {
	case model.ValBool:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: v.Bool}}
	case model.ValInt:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v.Int}}
	case model.ValDouble:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: v.Float}}
	case model.ValEmpty:
		return &commonpb.AnyValue{}
	case model.ValBytes:
		if b, err := base64.StdEncoding.DecodeString(v.Str); err == nil {
			return &commonpb.AnyValue{Value: &commonpb.AnyValue_BytesValue{BytesValue: b}}
		}
	case model.ValArray, model.ValMap:
		dec := json.NewDecoder(strings.NewReader(v.Str))
		dec.UseNumber()
		if av, err := jsonAny(dec, 0); err == nil {
			return av
		}
	}
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v.Str}}
}

// jsonAny reads one JSON value (the rendered text of an array or map, see
// renderList) back into an AnyValue: integers as ints, other numbers as
// doubles, null as an empty value, object keys in their order.
func jsonAny(dec *json.Decoder, depth int) (*commonpb.AnyValue, error) {
	if depth >= maxDepth {
		return nil, errTooDeep
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		if t == '[' {
			arr := &commonpb.ArrayValue{}
			for dec.More() {
				e, err := jsonAny(dec, depth+1)
				if err != nil {
					return nil, err
				}
				arr.Values = append(arr.Values, e)
			}
			_, err := dec.Token()
			return &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: arr}}, err
		}
		kvs := &commonpb.KeyValueList{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, err
			}
			k, _ := kt.(string)
			e, err := jsonAny(dec, depth+1)
			if err != nil {
				return nil, err
			}
			kvs.Values = append(kvs.Values, &commonpb.KeyValue{Key: k, Value: e})
		}
		_, err := dec.Token()
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_KvlistValue{KvlistValue: kvs}}, err
	case string:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: t}}, nil
	case bool:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: t}}, nil
	case json.Number:
		if i, err := t.Int64(); err == nil && !bytes.ContainsAny([]byte(t), ".eE") {
			return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: i}}, nil
		}
		f, err := t.Float64()
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: f}}, err
	}
	return &commonpb.AnyValue{}, nil // null
}

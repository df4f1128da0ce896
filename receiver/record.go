package receiver

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// recordItem is one request as the record renders it.
type recordItem struct {
	body   []byte
	format wireFormat
	sig    signal
}

// appendRecordLines renders one request as OTLP/JSON lines, each ending in
// '\n' (one line, unless a trace request's line would pass the readers'
// line bound). JSON requests are already OTLP/JSON and are only compacted;
// protobuf requests are converted.
func appendRecordLines(dst []byte, it recordItem) ([]byte, error) {
	start := len(dst)
	var err error
	switch {
	case it.sig != signalTraces && it.format == formatProto:
		dst, err = appendSignalLine(dst, it)
	case it.format == formatJSON:
		buf := bytes.NewBuffer(dst)
		if err = json.Compact(buf, it.body); err != nil {
			err = fmt.Errorf("record json request: %w", err)
		}
		dst = buf.Bytes()
	default:
		dst, err = appendTraceWireJSON(dst, it.body)
		if err != nil || len(dst)-start > DefaultMaxLine {
			dst, err = appendTraceLinesTyped(dst[:start], it.body)
		}
	}
	if err != nil {
		return dst[:start], err
	}
	return append(dst, '\n'), nil
}

// appendTraceLinesTyped converts a protobuf trace request through the
// generated types: the encodings the direct conversion leaves to them, and
// lines to split.
func appendTraceLinesTyped(dst, body []byte) ([]byte, error) {
	var req coltrace.ExportTraceServiceRequest
	err := proto.Unmarshal(body, &req)
	var bad interface{ InvalidUTF8() bool }
	if errors.As(err, &bad) && bad.InvalidUTF8() {
		// A string the decoder does not read (a trace_state, a scope
		// name) is not UTF-8: repaired as the decoder repairs the strings
		// it reads, the generated types read it.
		req.Reset()
		err = proto.Unmarshal(repairProtoStrings(body), &req)
	}
	if err != nil {
		return dst, fmt.Errorf("record protobuf request: %w", err)
	}
	return appendTraceLines(dst, &req, DefaultMaxLine), nil
}

// AppendTraceRequestJSON appends req as OTLP/JSON: lowerCamelCase keys, trace
// and span ids as hex (protojson would write base64, which OTLP/JSON
// forbids), 64-bit integers as decimal strings, enums as integers, and zero
// fields left out.
func AppendTraceRequestJSON(dst []byte, req *coltrace.ExportTraceServiceRequest) []byte {
	dst = append(dst, `{"resourceSpans":[`...)
	for i, rs := range req.GetResourceSpans() {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendResourceSpans(dst, rs)
	}
	return append(dst, "]}"...)
}

// jsonObj writes the members of one JSON object, adding commas.
type jsonObj struct {
	b []byte
	n int
}

func (o *jsonObj) key(k string) {
	if o.n > 0 {
		o.b = append(o.b, ',')
	}
	o.n++
	o.b = append(o.b, '"')
	o.b = append(o.b, k...)
	o.b = append(o.b, `":`...)
}

func (o *jsonObj) str(k, v string) {
	if v != "" {
		o.key(k)
		o.b = appendJSONString(o.b, v)
	}
}

func (o *jsonObj) hexID(k string, v []byte) {
	if len(v) > 0 {
		o.key(k)
		o.b = append(o.b, '"')
		o.b = hex.AppendEncode(o.b, v)
		o.b = append(o.b, '"')
	}
}

func (o *jsonObj) u64(k string, v uint64) {
	if v != 0 {
		o.key(k)
		o.b = append(o.b, '"')
		o.b = strconv.AppendUint(o.b, v, 10)
		o.b = append(o.b, '"')
	}
}

func (o *jsonObj) u32(k string, v uint32) {
	if v != 0 {
		o.key(k)
		o.b = strconv.AppendUint(o.b, uint64(v), 10)
	}
}

func (o *jsonObj) attrs(k string, kvs []*commonpb.KeyValue) {
	if len(kvs) == 0 {
		return
	}
	o.key(k)
	o.b = appendKeyValues(o.b, kvs)
}

func appendResourceSpans(dst []byte, rs *tracepb.ResourceSpans) []byte {
	o := jsonObj{b: append(dst, '{')}
	if res := rs.GetResource(); res != nil {
		o.key("resource")
		ro := jsonObj{b: append(o.b, '{')}
		ro.attrs("attributes", res.GetAttributes())
		ro.u32("droppedAttributesCount", res.GetDroppedAttributesCount())
		o.b = append(ro.b, '}')
	}
	if ss := rs.GetScopeSpans(); len(ss) > 0 {
		o.key("scopeSpans")
		o.b = append(o.b, '[')
		for i, s := range ss {
			if i > 0 {
				o.b = append(o.b, ',')
			}
			o.b = appendScopeSpans(o.b, s)
		}
		o.b = append(o.b, ']')
	}
	o.str("schemaUrl", rs.GetSchemaUrl())
	return append(o.b, '}')
}

func appendScopeSpans(dst []byte, ss *tracepb.ScopeSpans) []byte {
	o := jsonObj{b: append(dst, '{')}
	if sc := ss.GetScope(); sc != nil {
		o.key("scope")
		so := jsonObj{b: append(o.b, '{')}
		so.str("name", sc.GetName())
		so.str("version", sc.GetVersion())
		so.attrs("attributes", sc.GetAttributes())
		so.u32("droppedAttributesCount", sc.GetDroppedAttributesCount())
		o.b = append(so.b, '}')
	}
	if spans := ss.GetSpans(); len(spans) > 0 {
		o.key("spans")
		o.b = append(o.b, '[')
		for i, sp := range spans {
			if i > 0 {
				o.b = append(o.b, ',')
			}
			o.b = appendSpan(o.b, sp)
		}
		o.b = append(o.b, ']')
	}
	o.str("schemaUrl", ss.GetSchemaUrl())
	return append(o.b, '}')
}

func appendSpan(dst []byte, sp *tracepb.Span) []byte {
	o := jsonObj{b: append(dst, '{')}
	o.hexID("traceId", sp.GetTraceId())
	o.hexID("spanId", sp.GetSpanId())
	o.str("traceState", sp.GetTraceState())
	o.hexID("parentSpanId", sp.GetParentSpanId())
	o.u32("flags", sp.GetFlags())
	o.str("name", sp.GetName())
	o.u32("kind", uint32(sp.GetKind()))
	o.u64("startTimeUnixNano", sp.GetStartTimeUnixNano())
	o.u64("endTimeUnixNano", sp.GetEndTimeUnixNano())
	o.attrs("attributes", sp.GetAttributes())
	o.u32("droppedAttributesCount", sp.GetDroppedAttributesCount())
	if evs := sp.GetEvents(); len(evs) > 0 {
		o.key("events")
		o.b = append(o.b, '[')
		for i, ev := range evs {
			if i > 0 {
				o.b = append(o.b, ',')
			}
			eo := jsonObj{b: append(o.b, '{')}
			eo.u64("timeUnixNano", ev.GetTimeUnixNano())
			eo.str("name", ev.GetName())
			eo.attrs("attributes", ev.GetAttributes())
			eo.u32("droppedAttributesCount", ev.GetDroppedAttributesCount())
			o.b = append(eo.b, '}')
		}
		o.b = append(o.b, ']')
	}
	o.u32("droppedEventsCount", sp.GetDroppedEventsCount())
	if links := sp.GetLinks(); len(links) > 0 {
		o.key("links")
		o.b = append(o.b, '[')
		for i, ln := range links {
			if i > 0 {
				o.b = append(o.b, ',')
			}
			lo := jsonObj{b: append(o.b, '{')}
			lo.hexID("traceId", ln.GetTraceId())
			lo.hexID("spanId", ln.GetSpanId())
			lo.str("traceState", ln.GetTraceState())
			lo.attrs("attributes", ln.GetAttributes())
			lo.u32("droppedAttributesCount", ln.GetDroppedAttributesCount())
			lo.u32("flags", ln.GetFlags())
			o.b = append(lo.b, '}')
		}
		o.b = append(o.b, ']')
	}
	o.u32("droppedLinksCount", sp.GetDroppedLinksCount())
	if st := sp.GetStatus(); st != nil {
		o.key("status")
		so := jsonObj{b: append(o.b, '{')}
		so.str("message", st.GetMessage())
		so.u32("code", uint32(st.GetCode()))
		o.b = append(so.b, '}')
	}
	return append(o.b, '}')
}

func appendKeyValues(dst []byte, kvs []*commonpb.KeyValue) []byte {
	dst = append(dst, '[')
	for i, kv := range kvs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"key":`...)
		dst = appendJSONString(dst, kv.GetKey())
		dst = append(dst, `,"value":`...)
		dst = appendAnyValue(dst, kv.GetValue())
		dst = append(dst, '}')
	}
	return append(dst, ']')
}

func appendAnyValue(dst []byte, v *commonpb.AnyValue) []byte {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		dst = append(dst, `{"stringValue":`...)
		dst = appendJSONString(dst, x.StringValue)
	case *commonpb.AnyValue_BoolValue:
		dst = append(dst, `{"boolValue":`...)
		dst = strconv.AppendBool(dst, x.BoolValue)
	case *commonpb.AnyValue_IntValue:
		dst = append(dst, `{"intValue":"`...)
		dst = strconv.AppendInt(dst, x.IntValue, 10)
		dst = append(dst, '"')
	case *commonpb.AnyValue_DoubleValue:
		dst = append(dst, `{"doubleValue":`...)
		dst = appendRecFloat(dst, x.DoubleValue)
	case *commonpb.AnyValue_BytesValue:
		// Only ids are hex in OTLP/JSON; bytes values stay base64.
		dst = append(dst, `{"bytesValue":"`...)
		dst = base64.StdEncoding.AppendEncode(dst, x.BytesValue)
		dst = append(dst, '"')
	case *commonpb.AnyValue_ArrayValue:
		dst = append(dst, `{"arrayValue":{"values":[`...)
		for i, e := range x.ArrayValue.GetValues() {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendAnyValue(dst, e)
		}
		dst = append(dst, "]}"...)
	case *commonpb.AnyValue_KvlistValue:
		dst = append(dst, `{"kvlistValue":{"values":`...)
		dst = appendKeyValues(dst, x.KvlistValue.GetValues())
		dst = append(dst, '}')
	default:
		return append(dst, "{}"...)
	}
	return append(dst, '}')
}

// appendRecFloat writes a double as protojson does: a number, or the strings
// "NaN", "Infinity" and "-Infinity" JSON has no numbers for.
func appendRecFloat(dst []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, `"NaN"`...)
	case math.IsInf(f, 1):
		return append(dst, `"Infinity"`...)
	case math.IsInf(f, -1):
		return append(dst, `"-Infinity"`...)
	}
	return strconv.AppendFloat(dst, f, 'g', -1, 64)
}

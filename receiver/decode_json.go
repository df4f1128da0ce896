package receiver

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/nemo-gym/gymtrace/model"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// OTLP/JSON follows the protobuf JSON mapping with one exception that
// protojson gets wrong: trace and span ids are hex, not base64. Keys are
// lowerCamelCase, but the original snake_case names must be accepted too, so
// every multi-word field below has a second, snake_case twin.

type jTraceReq struct {
	ResourceSpans  []jResourceSpans `json:"resourceSpans"`
	ResourceSpans2 []jResourceSpans `json:"resource_spans"`
}

type jResourceSpans struct {
	Resource    *jResource    `json:"resource"`
	ScopeSpans  []jScopeSpans `json:"scopeSpans"`
	ScopeSpans2 []jScopeSpans `json:"scope_spans"`
	SchemaURL   string        `json:"schemaUrl"`
	SchemaURL2  string        `json:"schema_url"`
}

type jResource struct {
	Attributes []jKeyValue `json:"attributes"`
	Dropped    jUint       `json:"droppedAttributesCount"`
	Dropped2   jUint       `json:"dropped_attributes_count"`
}

type jScope struct {
	Name       string      `json:"name"`
	Version    string      `json:"version"`
	Attributes []jKeyValue `json:"attributes"`
}

type jScopeSpans struct {
	Scope      *jScope `json:"scope"`
	Spans      []jSpan `json:"spans"`
	SchemaURL  string  `json:"schemaUrl"`
	SchemaURL2 string  `json:"schema_url"`
}

type jSpan struct {
	TraceID       string      `json:"traceId"`
	TraceID2      string      `json:"trace_id"`
	SpanID        string      `json:"spanId"`
	SpanID2       string      `json:"span_id"`
	TraceState    string      `json:"traceState"`
	TraceState2   string      `json:"trace_state"`
	ParentSpanID  string      `json:"parentSpanId"`
	ParentSpanID2 string      `json:"parent_span_id"`
	Flags         jUint       `json:"flags"`
	Name          string      `json:"name"`
	Kind          jEnum       `json:"kind"`
	Start         jUint       `json:"startTimeUnixNano"`
	Start2        jUint       `json:"start_time_unix_nano"`
	End           jUint       `json:"endTimeUnixNano"`
	End2          jUint       `json:"end_time_unix_nano"`
	Attributes    []jKeyValue `json:"attributes"`
	DroppedAttrs  jUint       `json:"droppedAttributesCount"`
	DroppedAttrs2 jUint       `json:"dropped_attributes_count"`
	Events        []jEvent    `json:"events"`
	DroppedEvents jUint       `json:"droppedEventsCount"`
	DroppedEv2    jUint       `json:"dropped_events_count"`
	Links         []jLink     `json:"links"`
	DroppedLinks  jUint       `json:"droppedLinksCount"`
	DroppedLinks2 jUint       `json:"dropped_links_count"`
	Status        *jStatus    `json:"status"`
}

type jEvent struct {
	Time     jUint       `json:"timeUnixNano"`
	Time2    jUint       `json:"time_unix_nano"`
	Name     string      `json:"name"`
	Attrs    []jKeyValue `json:"attributes"`
	Dropped  jUint       `json:"droppedAttributesCount"`
	Dropped2 jUint       `json:"dropped_attributes_count"`
}

type jLink struct {
	TraceID     string      `json:"traceId"`
	TraceID2    string      `json:"trace_id"`
	SpanID      string      `json:"spanId"`
	SpanID2     string      `json:"span_id"`
	TraceState  string      `json:"traceState"`
	TraceState2 string      `json:"trace_state"`
	Attrs       []jKeyValue `json:"attributes"`
	Dropped     jUint       `json:"droppedAttributesCount"`
	Dropped2    jUint       `json:"dropped_attributes_count"`
	Flags       jUint       `json:"flags"`
}

type jStatus struct {
	Message string `json:"message"`
	Code    jEnum  `json:"code"`
}

type jKeyValue struct {
	Key   string     `json:"key"`
	Value *jAnyValue `json:"value"`
}

type jAnyValue struct {
	String  *string  `json:"stringValue"`
	String2 *string  `json:"string_value"`
	Bool    *bool    `json:"boolValue"`
	Bool2   *bool    `json:"bool_value"`
	Int     *jInt    `json:"intValue"`
	Int2    *jInt    `json:"int_value"`
	Double  *jFloat  `json:"doubleValue"`
	Double2 *jFloat  `json:"double_value"`
	Array   *jValues `json:"arrayValue"`
	Array2  *jValues `json:"array_value"`
	KVList  *jKVList `json:"kvlistValue"`
	KVList2 *jKVList `json:"kvlist_value"`
	Bytes   []byte   `json:"bytesValue"`
	Bytes2  []byte   `json:"bytes_value"`
}

type jValues struct {
	Values []jAnyValue `json:"values"`
}

type jKVList struct {
	Values []jKeyValue `json:"values"`
}

// jInt is an int64 written as a JSON string or number.
type jInt int64

func (v *jInt) UnmarshalJSON(b []byte) error {
	s, ok, err := numText(b)
	if err != nil || !ok {
		return err
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		f, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil || f != math.Trunc(f) || math.Abs(f) > 1<<63 {
			return fmt.Errorf("bad integer %s", b)
		}
		n = int64(f)
	}
	*v = jInt(n)
	return nil
}

// jUint is a uint64 (or uint32) written as a JSON string or number.
type jUint uint64

func (v *jUint) UnmarshalJSON(b []byte) error {
	s, ok, err := numText(b)
	if err != nil || !ok {
		return err
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		f, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil || f < 0 || f != math.Trunc(f) || f >= 1<<64 {
			return fmt.Errorf("bad unsigned integer %s", b)
		}
		n = uint64(f)
	}
	*v = jUint(n)
	return nil
}

// jFloat is a double: a JSON number, or a string holding a number, "NaN",
// "Infinity" or "-Infinity".
type jFloat float64

func (v *jFloat) UnmarshalJSON(b []byte) error {
	s, ok, err := numText(b)
	if err != nil || !ok {
		return err
	}
	switch s {
	case "NaN":
		*v = jFloat(math.NaN())
		return nil
	case "Infinity":
		*v = jFloat(math.Inf(1))
		return nil
	case "-Infinity":
		*v = jFloat(math.Inf(-1))
		return nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return fmt.Errorf("bad number %s", b)
	}
	*v = jFloat(f)
	return nil
}

// numText returns the text of a JSON number or string; ok is false for null.
func numText(b []byte) (string, bool, error) {
	b = bytes.TrimSpace(b)
	if string(b) == "null" {
		return "", false, nil
	}
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return "", false, err
		}
		return s, true, nil
	}
	return string(b), true, nil
}

// jEnum is an enum written as its number or its name.
type jEnum struct {
	n    int32
	name string
}

func (v *jEnum) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if string(b) == "null" {
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		return json.Unmarshal(b, &v.name)
	}
	n, err := strconv.ParseInt(string(b), 10, 32)
	if err != nil {
		return fmt.Errorf("bad enum value %s", b)
	}
	v.n = int32(n)
	return nil
}

// resolve maps the enum to its number, accepting names with or without the
// prefix (SPAN_KIND_SERVER or SERVER).
func (v jEnum) resolve(prefix string, names []string) (int32, error) {
	if v.name == "" {
		return v.n, nil
	}
	s := strings.TrimPrefix(strings.ToUpper(v.name), prefix)
	for i, n := range names {
		if s == n {
			return int32(i), nil
		}
	}
	want := make([]string, len(names))
	for i, n := range names {
		want[i] = prefix + n
	}
	return 0, fmt.Errorf("unknown value %q, want one of %s or a number", v.name, strings.Join(want, ", "))
}

var (
	kindEnum   = []string{"UNSPECIFIED", "INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER"}
	statusEnum = []string{"UNSET", "OK", "ERROR"}
)

func pick[T comparable](a, b T) T {
	var zero T
	if a != zero {
		return a
	}
	return b
}

func pickSlice[T any](a, b []T) []T {
	if len(a) > 0 {
		return a
	}
	return b
}

func pickPtr[T any](a, b *T) *T {
	if a != nil {
		return a
	}
	return b
}

// ErrBadHexID reports a trace or span id in OTLP/JSON that is not hex.
var ErrBadHexID = errors.New("bad hex id")

// hexID decodes a hex id. Ids must be hex per the OTLP/JSON spec; a base64 id
// (what protojson would write) fails here with the value named.
func hexID(s string) ([]byte, error) {
	if s == "" {
		return nil, nil
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("%w %q: want hex digits (OTLP/JSON ids are hex, not base64)", ErrBadHexID, s)
	}
	return b, nil
}

// DecodeJSON decodes an OTLP/JSON ExportTraceServiceRequest. The request is
// converted to protobuf and decoded by DecodeProto, so both formats yield
// identical spans, limits, rejections and WireSize (the exact protobuf size).
func DecodeJSON(l *model.Local, b []byte, lim Limits) (model.Batch, Report, error) {
	var req jTraceReq
	if err := json.Unmarshal(b, &req); err != nil {
		return model.Batch{}, Report{}, fmt.Errorf("decode otlp json: %w", jsonErr(b, err))
	}
	var buf []byte
	for i, rs := range pickSlice(req.ResourceSpans, req.ResourceSpans2) {
		pb, err := rs.proto()
		if err != nil {
			return model.Batch{}, Report{}, atIndex("resourceSpans", i, err)
		}
		m, err := proto.MarshalOptions{}.MarshalAppend(nil, pb)
		if err != nil {
			return model.Batch{}, Report{}, atIndex("resourceSpans", i, err)
		}
		buf = protowire.AppendTag(buf, 1, protowire.BytesType)
		buf = protowire.AppendBytes(buf, m)
	}
	return DecodeProto(l, buf, lim)
}

// jsonErr adds the line and column to a syntax error.
func jsonErr(b []byte, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	var off int64
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	default:
		return err
	}
	if off > int64(len(b)) {
		off = int64(len(b))
	}
	line := 1 + bytes.Count(b[:off], []byte{'\n'})
	// Offset counts the bytes read up to and including the bad one.
	col := max(int(off)-bytes.LastIndexByte(b[:off], '\n')-1, 1)
	return fmt.Errorf("at line %d, column %d: %w", line, col, err)
}

func (rs *jResourceSpans) proto() (*tracepb.ResourceSpans, error) {
	out := &tracepb.ResourceSpans{SchemaUrl: pick(rs.SchemaURL, rs.SchemaURL2)}
	if r := rs.Resource; r != nil {
		attrs, err := kvsProto(r.Attributes)
		if err != nil {
			return nil, at("resource", err)
		}
		out.Resource = &resourcepb.Resource{Attributes: attrs, DroppedAttributesCount: uint32(pick(r.Dropped, r.Dropped2))}
	}
	for i, ss := range pickSlice(rs.ScopeSpans, rs.ScopeSpans2) {
		pss := &tracepb.ScopeSpans{SchemaUrl: pick(ss.SchemaURL, ss.SchemaURL2)}
		if sc := ss.Scope; sc != nil {
			attrs, err := kvsProto(sc.Attributes)
			if err != nil {
				return nil, atIndex("scopeSpans", i, at("scope", err))
			}
			pss.Scope = &commonpb.InstrumentationScope{Name: sc.Name, Version: sc.Version, Attributes: attrs}
		}
		for j := range ss.Spans {
			sp, err := ss.Spans[j].proto()
			if err != nil {
				return nil, atIndex("scopeSpans", i, atIndex("spans", j, err))
			}
			pss.Spans = append(pss.Spans, sp)
		}
		out.ScopeSpans = append(out.ScopeSpans, pss)
	}
	return out, nil
}

func (s *jSpan) proto() (*tracepb.Span, error) {
	var err error
	p := &tracepb.Span{
		TraceState:             pick(s.TraceState, s.TraceState2),
		Flags:                  uint32(s.Flags),
		Name:                   s.Name,
		StartTimeUnixNano:      uint64(pick(s.Start, s.Start2)),
		EndTimeUnixNano:        uint64(pick(s.End, s.End2)),
		DroppedAttributesCount: uint32(pick(s.DroppedAttrs, s.DroppedAttrs2)),
		DroppedEventsCount:     uint32(pick(s.DroppedEvents, s.DroppedEv2)),
		DroppedLinksCount:      uint32(pick(s.DroppedLinks, s.DroppedLinks2)),
	}
	if p.TraceId, err = hexID(pick(s.TraceID, s.TraceID2)); err != nil {
		return nil, at("traceId", err)
	}
	if p.SpanId, err = hexID(pick(s.SpanID, s.SpanID2)); err != nil {
		return nil, at("spanId", err)
	}
	if p.ParentSpanId, err = hexID(pick(s.ParentSpanID, s.ParentSpanID2)); err != nil {
		return nil, at("parentSpanId", err)
	}
	kind, err := s.Kind.resolve("SPAN_KIND_", kindEnum)
	if err != nil {
		return nil, at("kind", err)
	}
	p.Kind = tracepb.Span_SpanKind(kind)
	if p.Attributes, err = kvsProto(s.Attributes); err != nil {
		return nil, err
	}
	for i, e := range s.Events {
		attrs, err := kvsProto(e.Attrs)
		if err != nil {
			return nil, atIndex("events", i, err)
		}
		p.Events = append(p.Events, &tracepb.Span_Event{
			TimeUnixNano: uint64(pick(e.Time, e.Time2)), Name: e.Name, Attributes: attrs,
			DroppedAttributesCount: uint32(pick(e.Dropped, e.Dropped2)),
		})
	}
	for i, ln := range s.Links {
		pl := &tracepb.Span_Link{
			TraceState: pick(ln.TraceState, ln.TraceState2), Flags: uint32(ln.Flags),
			DroppedAttributesCount: uint32(pick(ln.Dropped, ln.Dropped2)),
		}
		if pl.TraceId, err = hexID(pick(ln.TraceID, ln.TraceID2)); err != nil {
			return nil, atIndex("links", i, at("traceId", err))
		}
		if pl.SpanId, err = hexID(pick(ln.SpanID, ln.SpanID2)); err != nil {
			return nil, atIndex("links", i, at("spanId", err))
		}
		if pl.Attributes, err = kvsProto(ln.Attrs); err != nil {
			return nil, atIndex("links", i, err)
		}
		p.Links = append(p.Links, pl)
	}
	if st := s.Status; st != nil {
		code, err := st.Code.resolve("STATUS_CODE_", statusEnum)
		if err != nil {
			return nil, at("status.code", err)
		}
		p.Status = &tracepb.Status{Message: st.Message, Code: tracepb.Status_StatusCode(code)}
	}
	return p, nil
}

func kvsProto(kvs []jKeyValue) ([]*commonpb.KeyValue, error) {
	if len(kvs) == 0 {
		return nil, nil
	}
	out := make([]*commonpb.KeyValue, len(kvs))
	for i, kv := range kvs {
		kp := &commonpb.KeyValue{Key: kv.Key}
		if kv.Value != nil {
			v, err := kv.Value.proto(0)
			if err != nil {
				return nil, atIndex("attributes", i, at("value", err))
			}
			kp.Value = v
		}
		out[i] = kp
	}
	return out, nil
}

func (a *jAnyValue) proto(depth int) (*commonpb.AnyValue, error) {
	if depth >= maxDepth {
		return nil, errTooDeep
	}
	v := &commonpb.AnyValue{}
	switch {
	case pickPtr(a.String, a.String2) != nil:
		v.Value = &commonpb.AnyValue_StringValue{StringValue: *pickPtr(a.String, a.String2)}
	case pickPtr(a.Bool, a.Bool2) != nil:
		v.Value = &commonpb.AnyValue_BoolValue{BoolValue: *pickPtr(a.Bool, a.Bool2)}
	case pickPtr(a.Int, a.Int2) != nil:
		v.Value = &commonpb.AnyValue_IntValue{IntValue: int64(*pickPtr(a.Int, a.Int2))}
	case pickPtr(a.Double, a.Double2) != nil:
		v.Value = &commonpb.AnyValue_DoubleValue{DoubleValue: float64(*pickPtr(a.Double, a.Double2))}
	case pickPtr(a.Array, a.Array2) != nil:
		arr := &commonpb.ArrayValue{}
		for i := range pickPtr(a.Array, a.Array2).Values {
			e, err := pickPtr(a.Array, a.Array2).Values[i].proto(depth + 1)
			if err != nil {
				return nil, atIndex("arrayValue.values", i, err)
			}
			arr.Values = append(arr.Values, e)
		}
		v.Value = &commonpb.AnyValue_ArrayValue{ArrayValue: arr}
	case pickPtr(a.KVList, a.KVList2) != nil:
		kl := &commonpb.KeyValueList{}
		for i, kv := range pickPtr(a.KVList, a.KVList2).Values {
			kp := &commonpb.KeyValue{Key: kv.Key}
			if kv.Value != nil {
				e, err := kv.Value.proto(depth + 1)
				if err != nil {
					return nil, atIndex("kvlistValue.values", i, err)
				}
				kp.Value = e
			}
			kl.Values = append(kl.Values, kp)
		}
		v.Value = &commonpb.AnyValue_KvlistValue{KvlistValue: kl}
	case a.Bytes != nil || a.Bytes2 != nil:
		v.Value = &commonpb.AnyValue_BytesValue{BytesValue: pickSlice(a.Bytes, a.Bytes2)}
	}
	return v, nil
}

// The metric and log counters below accept OTLP/JSON (camelCase or
// snake_case) and also the Python SDK's console form of metrics, whose
// points sit under "data": {"data_points": [...]}.

type jPoints struct {
	Points  []json.RawMessage `json:"dataPoints"`
	Points2 []json.RawMessage `json:"data_points"`
}

type jMetric struct {
	Gauge     *jPoints `json:"gauge"`
	Sum       *jPoints `json:"sum"`
	Histogram *jPoints `json:"histogram"`
	ExpHist   *jPoints `json:"exponentialHistogram"`
	ExpHist2  *jPoints `json:"exponential_histogram"`
	Summary   *jPoints `json:"summary"`
	Data      *jPoints `json:"data"`
}

type jScopeMetrics struct {
	Metrics []jMetric `json:"metrics"`
}

type jResourceMetrics struct {
	ScopeMetrics  []jScopeMetrics `json:"scopeMetrics"`
	ScopeMetrics2 []jScopeMetrics `json:"scope_metrics"`
}

type jMetricsReq struct {
	ResourceMetrics  []jResourceMetrics `json:"resourceMetrics"`
	ResourceMetrics2 []jResourceMetrics `json:"resource_metrics"`
}

// CountMetricPointsJSON counts the data points in an OTLP/JSON
// ExportMetricsServiceRequest (or a Python SDK console metrics record).
func CountMetricPointsJSON(b []byte) (int, error) {
	var req jMetricsReq
	if err := json.Unmarshal(b, &req); err != nil {
		return 0, fmt.Errorf("decode otlp json metrics: %w", jsonErr(b, err))
	}
	n := 0
	for _, rm := range pickSlice(req.ResourceMetrics, req.ResourceMetrics2) {
		for _, sm := range pickSlice(rm.ScopeMetrics, rm.ScopeMetrics2) {
			for _, m := range sm.Metrics {
				for _, p := range []*jPoints{m.Gauge, m.Sum, m.Histogram, m.ExpHist, m.ExpHist2, m.Summary, m.Data} {
					if p != nil {
						n += len(p.Points) + len(p.Points2)
					}
				}
			}
		}
	}
	return n, nil
}

type jScopeLogs struct {
	Records  []json.RawMessage `json:"logRecords"`
	Records2 []json.RawMessage `json:"log_records"`
}

type jResourceLogs struct {
	ScopeLogs  []jScopeLogs `json:"scopeLogs"`
	ScopeLogs2 []jScopeLogs `json:"scope_logs"`
}

type jLogsReq struct {
	ResourceLogs  []jResourceLogs `json:"resourceLogs"`
	ResourceLogs2 []jResourceLogs `json:"resource_logs"`
}

// CountLogRecordsJSON counts the log records in an OTLP/JSON
// ExportLogsServiceRequest.
func CountLogRecordsJSON(b []byte) (int, error) {
	var req jLogsReq
	if err := json.Unmarshal(b, &req); err != nil {
		return 0, fmt.Errorf("decode otlp json logs: %w", jsonErr(b, err))
	}
	n := 0
	for _, rl := range pickSlice(req.ResourceLogs, req.ResourceLogs2) {
		for _, sl := range pickSlice(rl.ScopeLogs, rl.ScopeLogs2) {
			n += len(sl.Records) + len(sl.Records2)
		}
	}
	return n, nil
}

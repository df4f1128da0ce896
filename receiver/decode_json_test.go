package receiver

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/nemo-gym/gymtrace/model"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// otlpJSON writes m as OTLP/JSON: protojson's output with the ids turned
// from base64 into hex, as the OTLP spec requires.
func otlpJSON(t testing.TB, m proto.Message) []byte {
	t.Helper()
	raw, err := protojson.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	var walk func(any)
	walk = func(x any) {
		switch x := x.(type) {
		case map[string]any:
			for k, e := range x {
				switch k {
				case "traceId", "spanId", "parentSpanId":
					b, err := base64.StdEncoding.DecodeString(e.(string))
					if err != nil {
						t.Fatal(err)
					}
					x[k] = hex.EncodeToString(b)
				default:
					walk(e)
				}
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// specShaped follows the shape of the OTLP spec's examples/trace.json:
// indented, upper-case hex ids, 64-bit times as JSON numbers, kind as a number.
const specShaped = `{
  "resourceSpans": [
    {
      "resource": {
        "attributes": [
          { "key": "service.name", "value": { "stringValue": "nemo-gym/policy_model" } }
        ]
      },
      "scopeSpans": [
        {
          "scope": { "name": "nemo_gym", "version": "0.2.0",
            "attributes": [ { "key": "scope.attr", "value": { "stringValue": "x" } } ] },
          "spans": [
            {
              "traceId": "5B8EFFF798038103D269B633813FC60C",
              "spanId": "EEE19B7EC3C1B174",
              "parentSpanId": "EEE19B7EC3C1B173",
              "name": "POST /v1/responses",
              "startTimeUnixNano": 1544712660000000000,
              "endTimeUnixNano": 1544712661000000000,
              "kind": 2,
              "attributes": [
                { "key": "http.route", "value": { "stringValue": "/v1/responses" } }
              ]
            }
          ]
        }
      ]
    }
  ]
}`

func TestDecodeJSONHexIDs(t *testing.T) {
	in, l := newLocal()
	b, rep, err := DecodeJSON(l, []byte(specShaped), Limits{})
	if err != nil || rep.Rejected != 0 || len(b.Spans) != 1 {
		t.Fatalf("DecodeJSON = %d spans, %+v, %v; want 1 span", len(b.Spans), rep, err)
	}
	sp := b.Spans[0]
	want := model.TraceID{0x5b, 0x8e, 0xff, 0xf7, 0x98, 0x03, 0x81, 0x03, 0xd2, 0x69, 0xb6, 0x33, 0x81, 0x3f, 0xc6, 0x0c}
	if len(b.Traces) != 1 || b.Traces[0] != want {
		t.Errorf("Traces = %v, want %x", b.Traces, want)
	}
	if sp.SpanID != (model.SpanID{0xee, 0xe1, 0x9b, 0x7e, 0xc3, 0xc1, 0xb1, 0x74}) {
		t.Errorf("SpanID = %s, want eee19b7ec3c1b174", sp.SpanID)
	}
	if len(b.Parents) != 1 || b.Parents[0].String() != "eee19b7ec3c1b173" {
		t.Errorf("Parents = %v, want [eee19b7ec3c1b173]", b.Parents)
	}
	if sp.Kind != model.KindServer || sp.Start != 1544712660000000000 || sp.End != 1544712661000000000 {
		t.Errorf("kind, start, end = %s, %d, %d", sp.Kind, sp.Start, sp.End)
	}
	if got := in.Str(in.Resource(sp.Resource).Service); got != "nemo-gym/policy_model" {
		t.Errorf("service = %q", got)
	}

	// The fixture's ids, read as hex, are the ones the console log prints.
	f, err := os.Open("testdata/all.otlp.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	sc.Scan()
	b, _, err = DecodeJSON(l, sc.Bytes(), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	first, trace, parent := b.Spans[0], b.Traces[0], b.ParentOf(0)
	if trace.String() != "243fcc768c47930834e6ed7fbc6634f7" || first.SpanID.String() != "5ca30d27c1578b1c" || parent.String() != "67efcc133c5040f8" {
		t.Errorf("first fixture span ids = %s/%s parent %s", trace, first.SpanID, parent)
	}
}

func TestDecodeJSONMatchesProto(t *testing.T) {
	req := sampleRequest()
	inP, lp := newLocal()
	bp, _, err := DecodeProto(lp, marshal(t, req), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	inJ, lj := newLocal()
	bj, _, err := DecodeJSON(lj, otlpJSON(t, req), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	o := dumpOpts{times: true, wireSize: true}
	if p, j := dumpSpans(inP, bp, o), dumpSpans(inJ, bj, o); p != j {
		t.Errorf("DecodeJSON and DecodeProto differ:\njson:\n%s\nproto:\n%s", j, p)
	}
}

// TestDecodeJSONSpellings decodes one span written in every spelling the
// protobuf JSON mapping allows; all must give the same span.
func TestDecodeJSONSpellings(t *testing.T) {
	const ref = `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"svc"}}]},"scopeSpans":[{"spans":[{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"1112131415161718","parentSpanId":"2122232425262728","name":"n","kind":3,"startTimeUnixNano":"100","endTimeUnixNano":"200","attributes":[{"key":"i","value":{"intValue":"-7"}},{"key":"d","value":{"doubleValue":1.5}},{"key":"b","value":{"boolValue":true}},{"key":"a","value":{"arrayValue":{"values":[{"stringValue":"x"},{"intValue":"1"}]}}}],"events":[{"timeUnixNano":"150","name":"e"}],"status":{"code":2,"message":"m"}}]}]}]}`
	tests := []struct{ name, in string }{
		{"enum names", strings.NewReplacer(`"kind":3`, `"kind":"SPAN_KIND_CLIENT"`, `"code":2`, `"code":"STATUS_CODE_ERROR"`).Replace(ref)},
		{"int64 as numbers", strings.NewReplacer(`"100"`, `100`, `"200"`, `200`, `"-7"`, `-7`, `"150"`, `150`, `{"intValue":"1"}`, `{"intValue":1}`).Replace(ref)},
		{"double as string", strings.Replace(ref, `"doubleValue":1.5`, `"doubleValue":"1.5"`, 1)},
		{"snake_case keys", strings.NewReplacer(
			"resourceSpans", "resource_spans", "scopeSpans", "scope_spans", "traceId", "trace_id",
			"parentSpanId", "parent_span_id", "spanId", "span_id", "startTimeUnixNano", "start_time_unix_nano",
			"endTimeUnixNano", "end_time_unix_nano", "timeUnixNano", "time_unix_nano", "stringValue", "string_value",
			"intValue", "int_value", "doubleValue", "double_value", "boolValue", "bool_value", "arrayValue", "array_value",
		).Replace(ref)},
		{"upper-case hex", strings.NewReplacer("0102030405060708090a0b0c0d0e0f10", "0102030405060708090A0B0C0D0E0F10").Replace(ref)},
	}
	in0, l0 := newLocal()
	b0, _, err := DecodeJSON(l0, []byte(ref), Limits{})
	if err != nil || len(b0.Spans) != 1 {
		t.Fatalf("reference: %d spans, %v", len(b0.Spans), err)
	}
	o := dumpOpts{times: true, wireSize: true}
	want := dumpSpans(in0, b0, o)
	if !strings.Contains(want, `CLIENT "n" status=ERROR start=100 end=200`) || !strings.Contains(want, `a=arr:"[\"x\",1]"`) {
		t.Fatalf("reference decoded wrong:\n%s", want)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, l := newLocal()
			b, _, err := DecodeJSON(l, []byte(tt.in), Limits{})
			if err != nil {
				t.Fatalf("DecodeJSON(%s): %v", tt.in, err)
			}
			if got := dumpSpans(in, b, o); got != want {
				t.Errorf("DecodeJSON(%s) =\n%s\nwant\n%s", tt.in, got, want)
			}
		})
	}
}

func TestDecodeJSONErrors(t *testing.T) {
	span := func(fields string) string {
		return `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"1112131415161718","name":"ok"},{` + fields + `}]}]}]}`
	}
	tests := []struct {
		name, in, want string
		hexErr         bool
	}{
		{"non-hex trace id", span(`"traceId":"zz02030405060708090a0b0c0d0e0f10","spanId":"1112131415161718"`),
			`resourceSpans[0].scopeSpans[0].spans[1].traceId: bad hex id "zz02030405060708090a0b0c0d0e0f10": want hex digits (OTLP/JSON ids are hex, not base64)`, true},
		{"base64 span id", span(`"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"ERITFBUWFxg="`),
			`resourceSpans[0].scopeSpans[0].spans[1].spanId: bad hex id "ERITFBUWFxg="`, true},
		{"odd-length parent id", span(`"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"1112131415161718","parentSpanId":"abc"`),
			`resourceSpans[0].scopeSpans[0].spans[1].parentSpanId: bad hex id "abc"`, true},
		{"bad link id", span(`"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"1112131415161718","links":[{"traceId":"xyz"}]`),
			`resourceSpans[0].scopeSpans[0].spans[1].links[0].traceId: bad hex id "xyz"`, true},
		{"unknown kind", span(`"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"1112131415161718","kind":"SPAN_KIND_BOSS"`),
			`resourceSpans[0].scopeSpans[0].spans[1].kind: unknown value "SPAN_KIND_BOSS", want one of SPAN_KIND_UNSPECIFIED, SPAN_KIND_INTERNAL, SPAN_KIND_SERVER, SPAN_KIND_CLIENT, SPAN_KIND_PRODUCER, SPAN_KIND_CONSUMER or a number`, false},
		{"invalid json", `{"resourceSpans":[{"scopeSpans":[{"spans":[{"name":"x",}]}]}]}`,
			`decode otlp json: at line 1, column 56: invalid character '}' looking for beginning of object key string`, false},
		{"bad int64", span(`"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"1112131415161718","startTimeUnixNano":"soon"`),
			`decode otlp json: at line 1, column 225: resourceSpans[0].scopeSpans[0].spans[1].startTimeUnixNano: bad unsigned integer "soon"`, false},
		{"wrong type", `{"resourceSpans":{"a":1}}`,
			`decode otlp json: at line 1, column 18: resourceSpans: want an array, got an object`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, l := newLocal()
			_, _, err := DecodeJSON(l, []byte(tt.in), Limits{})
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("DecodeJSON(%s) error = %v\nwant prefix %s", tt.in, err, tt.want)
			}
			if errors.Is(err, ErrBadHexID) != tt.hexErr {
				t.Errorf("errors.Is(err, ErrBadHexID) = %v, want %v", !tt.hexErr, tt.hexErr)
			}
		})
	}
}

func TestDecodeJSONRejectsWrongLength(t *testing.T) {
	// Valid hex of the wrong length is an invalid span, not a bad request:
	// it is rejected with a reason and the rest of the request is kept.
	in := `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"0102","spanId":"1112131415161718","name":"short"},{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"1112131415161718","name":"ok"}]}]}]}`
	_, l := newLocal()
	b, rep, err := DecodeJSON(l, []byte(in), Limits{})
	if err != nil || len(b.Spans) != 1 || rep.Rejected != 1 {
		t.Fatalf("got %d spans, %+v, %v; want 1 span and 1 rejected", len(b.Spans), rep, err)
	}
	if want := "resource_spans[0].scope_spans[0].spans[0]: trace_id has 2 bytes, want 16"; rep.Reason != want {
		t.Errorf("reason = %q, want %q", rep.Reason, want)
	}
}

func TestCountJSON(t *testing.T) {
	tests := []struct {
		name  string
		count func([]byte) (int, error)
		in    string
		want  int
	}{
		{"otlp metrics", CountMetricPointsJSON, `{"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"name":"a","gauge":{"dataPoints":[{"asInt":"1"},{"asInt":"2"}]}},{"name":"b","sum":{"dataPoints":[{"asDouble":1}]}},{"name":"c","histogram":{"dataPoints":[{}]}},{"name":"d","exponentialHistogram":{"dataPoints":[{}]}},{"name":"e","summary":{"dataPoints":[{}]}}]}]}]}`, 6},
		{"snake metrics", CountMetricPointsJSON, `{"resource_metrics":[{"scope_metrics":[{"metrics":[{"name":"a","gauge":{"data_points":[{},{}]}}]}]}]}`, 2},
		{"python console metrics", CountMetricPointsJSON, `{"resource_metrics": [{"resource": {"attributes": {}}, "scope_metrics": [{"metrics": [{"name": "http.server.active_requests", "data": {"data_points": [{"value": 0}, {"value": 1}], "aggregation_temporality": 2}}]}]}]}`, 2},
		{"otlp logs", CountLogRecordsJSON, `{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"body":{"stringValue":"a"}},{}]},{"logRecords":[{}]}]}]}`, 3},
		{"snake logs", CountLogRecordsJSON, `{"resource_logs":[{"scope_logs":[{"log_records":[{}]}]}]}`, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := tt.count([]byte(tt.in))
			if err != nil || n != tt.want {
				t.Fatalf("count(%s) = %d, %v; want %d", tt.in, n, err, tt.want)
			}
		})
	}
	if _, err := CountMetricPointsJSON([]byte(`{"resourceMetrics":[`)); err == nil || !strings.Contains(err.Error(), "decode otlp json metrics") {
		t.Errorf("truncated metrics: error = %v", err)
	}
}

// The reference OTLP/JSON decoder, the one DecodeJSON replaced: structs for
// encoding/json, converted to the generated protobuf types. Every multi-word
// field has a second, snake_case twin.

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

func pick[T comparable](a, b T) T {
	var zero T
	if a != zero {
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

// hexID decodes a hex id. Ids must be hex per the OTLP/JSON spec; a base64 id
// (what protojson would write) fails here with the value named.
func refHexID(s string) ([]byte, error) {
	if s == "" {
		return nil, nil
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("%w %q: want hex digits (OTLP/JSON ids are hex, not base64)", ErrBadHexID, s)
	}
	return b, nil
}

// decodeJSONRef is the reference decoder DecodeJSON is checked against: it
// reads the request with encoding/json into the structs above, converts it to
// the generated protobuf types, marshals it and runs DecodeProto. Slow, but
// each step is a standard library or protobuf runtime one.
func decodeJSONRef(l *model.Local, b []byte, lim Limits) (model.Batch, Report, error) {
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
	if p.TraceId, err = refHexID(pick(s.TraceID, s.TraceID2)); err != nil {
		return nil, at("traceId", err)
	}
	if p.SpanId, err = refHexID(pick(s.SpanID, s.SpanID2)); err != nil {
		return nil, at("spanId", err)
	}
	if p.ParentSpanId, err = refHexID(pick(s.ParentSpanID, s.ParentSpanID2)); err != nil {
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
		if pl.TraceId, err = refHexID(pick(ln.TraceID, ln.TraceID2)); err != nil {
			return nil, atIndex("links", i, at("traceId", err))
		}
		if pl.SpanId, err = refHexID(pick(ln.SpanID, ln.SpanID2)); err != nil {
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

// exactDump renders a decode's outcome in batch order with every span field
// the decoders fill, for exact comparison of two decoders.
func exactDump(in *model.Interner, b model.Batch, rep Report, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "report %+v\n", rep)
	for i := range b.Spans {
		sp := &b.Spans[i]
		sb.WriteString(dumpSpan(in, b.Traces[i], b.ParentOf(i), sp, dumpOpts{times: true, wireSize: true}))
		fmt.Fprintf(&sb, "  parent=%d extra=%t\n", sp.Parent, sp.Extra != nil)
	}
	return sb.String()
}

// decodeBoth runs DecodeJSON and the reference decoder on b, each with a
// fresh interner, and returns their dumps.
func decodeBoth(b []byte, lim Limits) (got, want string, gotErr, wantErr error) {
	in, l := newLocal()
	bg, rg, gotErr := DecodeJSON(l, b, lim)
	inR, lR := newLocal()
	bw, rw, wantErr := decodeJSONRef(lR, b, lim)
	return exactDump(in, bg, rg, gotErr), exactDump(inR, bw, rw, wantErr), gotErr, wantErr
}

// jsonStyle is one way of writing the same OTLP/JSON request.
type jsonStyle struct {
	reverse bool // keys in reverse order: values before keys, ids last
	snake   bool // snake_case keys
	ascii   bool // every non-ASCII character and '/' escaped, \u surrogate pairs
	indent  bool // pretty-printed
	numbers bool // 64-bit integers as JSON numbers, not strings
}

var jsonStyles = []struct {
	name string
	st   jsonStyle
}{
	{"reversed", jsonStyle{reverse: true}},
	{"snake numbers", jsonStyle{snake: true, numbers: true}},
	{"escaped indented", jsonStyle{ascii: true, indent: true}},
	{"all", jsonStyle{reverse: true, snake: true, ascii: true, indent: true, numbers: true}},
}

// restyle rewrites an OTLP/JSON document in style st.
func restyle(t testing.TB, in []byte, st jsonStyle) []byte {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(in))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	writeStyled(&b, v, st, 0, "")
	return b.Bytes()
}

func writeStyled(b *bytes.Buffer, v any, st jsonStyle, depth int, key string) {
	nl := func(d int) {
		if st.indent {
			b.WriteByte('\n')
			b.WriteString(strings.Repeat("  ", d))
		}
	}
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if st.reverse {
			slices.Reverse(keys)
		}
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			nl(depth + 1)
			name := k
			if st.snake {
				name = snakeCase(k)
			}
			writeStyledString(b, name, st.ascii)
			b.WriteByte(':')
			if st.indent {
				b.WriteByte(' ')
			}
			writeStyled(b, x[k], st, depth+1, k)
		}
		if len(keys) > 0 {
			nl(depth)
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			nl(depth + 1)
			writeStyled(b, e, st, depth+1, key)
		}
		if len(x) > 0 {
			nl(depth)
		}
		b.WriteByte(']')
	case string:
		switch key {
		case "startTimeUnixNano", "endTimeUnixNano", "timeUnixNano", "intValue":
			if _, err := strconv.ParseInt(x, 10, 64); st.numbers && err == nil {
				b.WriteString(x)
				return
			}
			if _, err := strconv.ParseUint(x, 10, 64); st.numbers && err == nil {
				b.WriteString(x)
				return
			}
		}
		writeStyledString(b, x, st.ascii)
	case json.Number:
		b.WriteString(string(x))
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case nil:
		b.WriteString("null")
	default:
		panic(fmt.Sprintf("unexpected %T", v))
	}
}

func writeStyledString(b *bytes.Buffer, s string, ascii bool) {
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r < 0x20:
			fmt.Fprintf(b, `\u%04x`, r)
		case ascii && r == '/':
			b.WriteString(`\/`)
		case ascii && r >= 0x80 && r < 0x10000:
			fmt.Fprintf(b, `\u%04X`, r)
		case ascii && r >= 0x10000:
			r1, r2 := utf16.EncodeRune(r)
			fmt.Fprintf(b, `\u%04x\u%04X`, r1, r2)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
}

func snakeCase(k string) string {
	var b strings.Builder
	for _, r := range k {
		if r >= 'A' && r <= 'Z' {
			b.WriteByte('_')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// randText draws a short string mixing what JSON must escape, multi-byte
// and astral characters, and the names the decoders give meaning to.
func randText(r *rand.Rand) string {
	pieces := []string{"", "a", "POST /run", "é", "日本", "😀", "\"", "\\", "\n", "\t", "\x01", "\x7f",
		"<&>", "\u2028", "/", "nemo.span.truncated", "true", "exception", "ﬀ", "service.name"}
	var b strings.Builder
	for range r.IntN(4) {
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	return b.String()
}

func randAnyValue(r *rand.Rand, depth int) *commonpb.AnyValue {
	switch r.IntN(8) {
	case 0:
		return str(randText(r))
	case 1:
		return boolv(r.IntN(2) == 0)
	case 2:
		return intv([]int64{0, 1, -1, 300, math.MaxInt64, math.MinInt64, r.Int64(), -r.Int64N(1 << 40)}[r.IntN(8)])
	case 3:
		return dblv([]float64{0, math.Copysign(0, -1), 1.5, math.NaN(), math.Inf(1), math.Inf(-1), 1e300, 5e-324, r.Float64(), 1e21, 123456789}[r.IntN(11)])
	case 4:
		if depth < 3 {
			var vs []*commonpb.AnyValue
			for range r.IntN(4) {
				vs = append(vs, randAnyValue(r, depth+1))
			}
			return arrv(vs...)
		}
		return str(randText(r))
	case 5:
		if depth < 3 {
			var kvs []*commonpb.KeyValue
			for range r.IntN(4) {
				var v *commonpb.AnyValue
				if r.IntN(5) > 0 {
					v = randAnyValue(r, depth+1)
				}
				kvs = append(kvs, kv(randText(r), v))
			}
			return &commonpb.AnyValue{Value: &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{Values: kvs}}}
		}
		return intv(7)
	case 6:
		raw := make([]byte, r.IntN(6))
		for i := range raw {
			raw[i] = byte(r.IntN(256))
		}
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BytesValue{BytesValue: raw}}
	}
	return &commonpb.AnyValue{}
}

func randAttrs(r *rand.Rand, max int) []*commonpb.KeyValue {
	var kvs []*commonpb.KeyValue
	for range r.IntN(max + 1) {
		var v *commonpb.AnyValue
		if r.IntN(10) > 0 {
			v = randAnyValue(r, 0)
		}
		k := randText(r)
		if r.IntN(8) == 0 {
			k, v = truncatedKey, []*commonpb.AnyValue{boolv(true), str("true"), boolv(false)}[r.IntN(3)]
		}
		kvs = append(kvs, kv(k, v))
	}
	return kvs
}

// randID draws an id of length n, now and then of a wrong length or zero.
func randID(r *rand.Rand, n int) []byte {
	switch r.IntN(20) {
	case 0:
		n = []int{0, 3, n + 1, 2 * n}[r.IntN(4)]
	case 1:
		return make([]byte, n)
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.IntN(256))
	}
	return b
}

func randU64(r *rand.Rand) uint64 {
	return []uint64{0, 1, 1795978526369989873, math.MaxUint64, 1 << 63, r.Uint64()}[r.IntN(6)]
}

func randU32(r *rand.Rand) uint32 {
	if r.IntN(3) > 0 {
		return 0
	}
	return []uint32{1, 300, math.MaxUint32, r.Uint32()}[r.IntN(4)]
}

// randRequest builds a request with every field of the OTLP trace types
// drawn at random, including values the decoders must reject or cap.
func randRequest(r *rand.Rand) *coltrace.ExportTraceServiceRequest {
	req := &coltrace.ExportTraceServiceRequest{}
	for range 1 + r.IntN(3) {
		rs := &tracepb.ResourceSpans{SchemaUrl: []string{"", "https://opentelemetry.io/schemas/1.4.0"}[r.IntN(2)]}
		if r.IntN(5) > 0 {
			attrs := randAttrs(r, 4)
			if r.IntN(2) == 0 {
				attrs = append(attrs, kv("service.name", str("svc-"+randText(r))))
			}
			rs.Resource = &resourcepb.Resource{Attributes: attrs, DroppedAttributesCount: randU32(r)}
		}
		for range 1 + r.IntN(2) {
			ss := &tracepb.ScopeSpans{}
			if r.IntN(2) == 0 {
				ss.Scope = &commonpb.InstrumentationScope{Name: randText(r), Version: "1.0", Attributes: randAttrs(r, 2)}
			}
			for range r.IntN(5) {
				ss.Spans = append(ss.Spans, randSpan(r))
			}
			rs.ScopeSpans = append(rs.ScopeSpans, ss)
		}
		req.ResourceSpans = append(req.ResourceSpans, rs)
	}
	return req
}

func randSpan(r *rand.Rand) *tracepb.Span {
	sp := &tracepb.Span{
		TraceId: randID(r, 16), SpanId: randID(r, 8), Name: randText(r),
		Kind:              tracepb.Span_SpanKind(r.IntN(8) - 1),
		StartTimeUnixNano: randU64(r), EndTimeUnixNano: randU64(r),
		Attributes: randAttrs(r, 6), DroppedAttributesCount: randU32(r),
		DroppedEventsCount: randU32(r), DroppedLinksCount: randU32(r), Flags: randU32(r),
	}
	if r.IntN(2) == 0 {
		sp.ParentSpanId = randID(r, 8)
	}
	if r.IntN(4) == 0 {
		sp.TraceState = "k=v," + randText(r)
	}
	for range r.IntN(3) {
		name := randText(r)
		if r.IntN(3) == 0 {
			name = exceptionEvent
		}
		sp.Events = append(sp.Events, &tracepb.Span_Event{TimeUnixNano: randU64(r), Name: name, Attributes: randAttrs(r, 3), DroppedAttributesCount: randU32(r)})
	}
	for range r.IntN(3) {
		sp.Links = append(sp.Links, &tracepb.Span_Link{TraceId: randID(r, 16), SpanId: randID(r, 8), TraceState: randText(r),
			Attributes: randAttrs(r, 3), DroppedAttributesCount: randU32(r), Flags: randU32(r)})
	}
	if r.IntN(3) > 0 {
		sp.Status = &tracepb.Status{Code: tracepb.Status_StatusCode(r.IntN(5) - 1), Message: randText(r)}
	}
	return sp
}

// edgeInputs are requests at the corners of the JSON mapping: nulls for
// every kind of field and element, unknown keys holding every kind of value,
// enum and number spellings, escapes.
var edgeInputs = []struct{ name, in string }{
	{"null top level", " null "},
	{"empty object", "{}"},
	{"null elements", `{"resourceSpans":[null,{"resource":null,"scopeSpans":[null,{"scope":null,"spans":[null,{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"1112131415161718","attributes":[null,{"key":"a","value":null},{"key":"b","value":{}},{"key":"c","value":{"arrayValue":{"values":[null,{}]}}},{"key":"d","value":{"kvlistValue":{"values":[null,{"key":"x"},{"value":{"intValue":3}}]}}},{"key":"e","value":{"arrayValue":{}}},{"key":"f","value":{"stringValue":null,"boolValue":false}}],"events":[null],"links":[null],"status":null}]}]}]}`},
	{"unknown keys", `{"x":{"y":[1,2.5e-3,true,false,null,"s\u00e9"]},"resourceSpans":[{"z":[],"scopeSpans":[{"w":{},"spans":[{"q":[[[]]],"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"1112131415161718","status":{"foo":1,"code":"error","message":"m"},"events":[{"bar":null,"name":"exception"}]}]}]}],"after":-0}`},
	{"enum spellings", `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"1112131415161718","kind":"server","status":{"code":"Status_Code_Ok"}},{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"2112131415161718","kind":"","status":{"code":7}},{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"3112131415161718","kind":-3,"status":{"code":-1}},{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"4112131415161718","kind":"ſpan_kind_ſerver","status":{"code":"\u0045RROR"}}]}]}]}`},
	{"number forms", `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"1112131415161718","startTimeUnixNano":1.5e3,"endTimeUnixNano":"2E3","flags":4294967297,"droppedAttributesCount":"4294967296","attributes":[{"key":"i","value":{"intValue":-1e2}},{"key":"j","value":{"intValue":"9223372036854775807"}},{"key":"d","value":{"doubleValue":"-Infinity"}},{"key":"e","value":{"doubleValue":1E-400}},{"key":"f","value":{"doubleValue":"1_0"}}]}]}]}]}`},
	{"escapes", `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"1112131415161718","name":"\ud800x\udc00\ud83d\ude00\u00e9\/\b\f\r\t\"","attributes":[{"key":"\u006b","value":{"kvlistValue":{"values":[{"value":{"stringValue":"\u0000\u001f"},"key":"\u2028"}]}}}]}]}]}]}`},
}

// TestDecodeJSONMatchesReference decodes varied requests, each written in
// several styles, with DecodeJSON and with the reference decoder (encoding/
// json, the generated types, proto.Marshal and DecodeProto): spans, limits,
// rejections and WireSize must agree exactly.
func TestDecodeJSONMatchesReference(t *testing.T) {
	type input struct {
		name   string
		b      []byte
		styled bool
	}
	var inputs []input
	raw, err := os.ReadFile("testdata/all.otlp.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range bytes.Split(bytes.TrimSpace(raw), []byte("\n")) {
		inputs = append(inputs, input{fmt.Sprintf("fixture line %d", i+1), line, true})
	}
	inputs = append(inputs,
		input{"spec-shaped", []byte(specShaped), true},
		input{"sample request", otlpJSON(t, sampleRequest()), true},
		input{"gym512", otlpJSON(t, gymRequest(t)), false},
	)
	for _, e := range edgeInputs {
		inputs = append(inputs, input{e.name, []byte(e.in), false})
	}
	tgen, err := os.ReadFile("testdata/req-telemetrygen-512.bin")
	if err != nil {
		t.Fatal(err)
	}
	var tgenReq coltrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(tgen, &tgenReq); err != nil {
		t.Fatal(err)
	}
	inputs = append(inputs, input{"telemetrygen512", otlpJSON(t, &tgenReq), false})
	r := rand.New(rand.NewPCG(1, 2))
	nRand := 150
	if testing.Short() {
		nRand = 40
	}
	for i := range nRand {
		req := randRequest(r)
		b := otlpJSON(t, req)
		// The same request in protobuf decodes to the same spans too.
		in, l := newLocal()
		bj, rj, err := DecodeJSON(l, b, Limits{})
		inP, lp := newLocal()
		bp, rp, errP := DecodeProto(lp, marshal(t, req), Limits{})
		if got, want := exactDump(in, bj, rj, err), exactDump(inP, bp, rp, errP); got != want {
			t.Fatalf("random %d: DecodeJSON and DecodeProto differ:\n%s\njson:\n%s\nproto:\n%s", i, b, got, want)
		}
		inputs = append(inputs, input{fmt.Sprintf("random %d", i), b, i%3 == 0})
	}
	limits := []Limits{{}, {MaxAttrs: 3, MaxValueLen: 5}}
	spans := 0
	for _, in := range inputs {
		docs := []struct {
			name string
			b    []byte
		}{{"as is", in.b}}
		if in.styled {
			for _, st := range jsonStyles {
				docs = append(docs, struct {
					name string
					b    []byte
				}{st.name, restyle(t, in.b, st.st)})
			}
		}
		for _, doc := range docs {
			for _, lim := range limits {
				got, want, gotErr, wantErr := decodeBoth(doc.b, lim)
				if gotErr != nil || wantErr != nil {
					t.Errorf("%s (%s, %+v): DecodeJSON error %v, reference error %v\n%s", in.name, doc.name, lim, gotErr, wantErr, doc.b)
					continue
				}
				if got != want {
					t.Errorf("%s (%s, %+v): DecodeJSON differs from the reference\ninput: %s\ngot:\n%s\nwant:\n%s", in.name, doc.name, lim, doc.b, got, want)
				}
				spans += strings.Count(got, "\nspan ") + strings.Count(got[:min(len(got), 8)], "span ")
			}
		}
	}
	if spans < 1000 {
		t.Errorf("compared only %d spans; the inputs should hold more", spans)
	}
	t.Logf("%d inputs, %d decoded spans compared", len(inputs), spans)
}

// TestDecodeJSONErrorsMatchReference: where the reference already named the
// field of a bad value, DecodeJSON gives the very same message.
func TestDecodeJSONErrorsMatchReference(t *testing.T) {
	nest := func(n int, open, close string) string {
		return strings.Repeat(open, n) + `{"intValue":1}` + strings.Repeat(close, n)
	}
	arr := nest(33, `{"arrayValue":{"values":[`, `]}}`)
	kvl := nest(33, `{"kvlistValue":{"values":[{"key":"k","value":`, `}]}}`)
	okArr := nest(31, `{"arrayValue":{"values":[`, `]}}`)
	span := func(fields string) string {
		return `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"s"}}]},"scopeSpans":[{"spans":[{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"1112131415161718","name":"ok"},{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"1112131415161718",` + fields + `}]}]}]}`
	}
	tests := []struct{ name, in string }{
		{"non-hex parent", span(`"parentSpanId":"0x12345678"`)},
		{"non-hex link span id", span(`"links":[{},{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"ERITFBUWFxg="}]`)},
		{"unknown status code", span(`"status":{"message":"m","code":"STATUS_CODE_MAYBE"}`)},
		{"unknown kind", span(`"kind":"SPAN_KIND_"`)},
		{"array too deep", span(`"attributes":[{"key":"a","value":{}},{"key":"deep","value":` + arr + `}]`)},
		{"map too deep", span(`"attributes":[{"key":"deep","value":` + kvl + `}]`)},
		{"event value too deep", span(`"events":[{"name":"e","attributes":[{"key":"deep","value":` + arr + `}]}]`)},
		{"link value too deep", span(`"links":[{"attributes":[{"key":"deep","value":` + arr + `}]}]`)},
		{"resource value too deep", `{"resourceSpans":[{"resource":{"attributes":[{"key":"deep","value":` + arr + `}]}}]}`},
		{"scope value too deep", `{"resourceSpans":[{"scopeSpans":[{},{"scope":{"attributes":[{"key":"deep","value":` + kvl + `}]}}]}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, gotErr, wantErr := decodeBoth([]byte(tt.in), Limits{})
			if gotErr == nil || wantErr == nil || gotErr.Error() != wantErr.Error() {
				t.Errorf("DecodeJSON error:\n%v\nreference error:\n%v", gotErr, wantErr)
			}
		})
	}
	// Just below the bound both accept.
	got, want, gotErr, wantErr := decodeBoth([]byte(span(`"attributes":[{"key":"deep","value":`+okArr+`}]`)), Limits{MaxValueLen: 1 << 10})
	if gotErr != nil || got != want {
		t.Errorf("31 levels: DecodeJSON %v\n%s\nreference %v\n%s", gotErr, got, wantErr, want)
	}
}

// otlpKeys are the field names of OTLP/JSON trace requests, both spellings.
var otlpKeys = func() map[string]bool {
	m := map[string]bool{}
	for _, k := range strings.Fields(`resourceSpans resource scopeSpans schemaUrl attributes droppedAttributesCount
		scope name version spans traceId spanId traceState parentSpanId flags kind startTimeUnixNano endTimeUnixNano
		events droppedEventsCount links droppedLinksCount status timeUnixNano message code key value values
		stringValue boolValue intValue doubleValue arrayValue kvlistValue bytesValue`) {
		m[k], m[snakeCase(k)] = true, true
	}
	return m
}()

// hasFoldedKey reports whether a document has an object key that matches an
// OTLP field name only when case is ignored. encoding/json, under the
// reference decoder, matches such keys; protojson and DecodeJSON do not.
func hasFoldedKey(b []byte) bool {
	var v any
	if json.Unmarshal(b, &v) != nil {
		return false
	}
	var walk func(any) bool
	walk = func(x any) bool {
		switch x := x.(type) {
		case map[string]any:
			for k, e := range x {
				if !otlpKeys[k] {
					for name := range otlpKeys {
						if strings.EqualFold(k, name) {
							return true
						}
					}
				}
				if walk(e) {
					return true
				}
			}
		case []any:
			for _, e := range x {
				if walk(e) {
					return true
				}
			}
		}
		return false
	}
	return walk(v)
}

// FuzzDecodeJSONMatchesReference checks DecodeJSON against the reference
// decoder on arbitrary input: a syntax error only for what encoding/json
// finds invalid, success only for valid JSON, and where DecodeJSON accepts a
// request the reference accepts it too and decodes the same spans.
// DecodeJSON alone refuses duplicate fields and two values in one AnyValue,
// as protojson does; the reference alone matches keys in any case. Those
// inputs are compared no further. Invalid UTF-8, which DecodeJSON repairs,
// is compared with the reference reading the repaired text.
func FuzzDecodeJSONMatchesReference(f *testing.F) {
	addHostile(f)
	f.Add([]byte(specShaped))
	f.Add(otlpJSON(f, sampleRequest()))
	for _, e := range edgeInputs {
		f.Add([]byte(e.in))
	}
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 8 {
		b := otlpJSON(f, randRequest(r))
		f.Add(restyle(f, b, jsonStyles[i%len(jsonStyles)].st))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, want, gotErr, wantErr := decodeBoth(data, Limits{MaxAttrs: 4, MaxValueLen: 16})
		if !utf8.Valid(data) {
			// DecodeJSON repairs bad strings, which the reference refuses:
			// compare with the reference on the repaired text (outside
			// strings valid JSON is ASCII, so the whole text repairs the same).
			// The repair count is DecodeJSON's alone.
			_, want, _, wantErr = decodeBoth(validJSONBody(data), Limits{MaxAttrs: 4, MaxValueLen: 16})
			in, l := newLocal()
			bg, rg, err := DecodeJSON(l, data, Limits{MaxAttrs: 4, MaxValueLen: 16})
			rg.ValuesRepaired = 0
			got = exactDump(in, bg, rg, err)
		}
		var le *locError
		syntax := errors.As(gotErr, &le) && le.syntax
		valid := json.Valid(data)
		if syntax && valid {
			t.Fatalf("syntax error on valid JSON: %v\n%q", gotErr, data)
		}
		if gotErr == nil && !valid {
			t.Fatalf("accepted invalid JSON\n%q", data)
		}
		if gotErr != nil || hasFoldedKey(data) {
			return
		}
		if wantErr != nil {
			t.Fatalf("accepted what the reference refuses (%v)\n%q", wantErr, data)
		}
		if got != want {
			t.Fatalf("differs from the reference\n%q\ngot:\n%s\nwant:\n%s", data, got, want)
		}
	})
}

// TestDecodeJSONRefuses covers what DecodeJSON refuses beyond the reference:
// each error names the place, by line and column and by JSON path.
func TestDecodeJSONRefuses(t *testing.T) {
	const ids = `"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"1112131415161718"`
	span := func(fields string) string {
		return `{"resourceSpans":[{"scopeSpans":[{"spans":[{` + ids + `,` + fields + `}]}]}]}`
	}
	tests := []struct{ name, in, want string }{
		{"duplicate field", span(`"name":"a","name":"b"`),
			`decode otlp json: at line 1, column 136: resourceSpans[0].scopeSpans[0].spans[0].name: field given more than once`},
		{"both spellings", span(`"start_time_unix_nano":"1","startTimeUnixNano":"2"`),
			`decode otlp json: at line 1, column 165: resourceSpans[0].scopeSpans[0].spans[0].startTimeUnixNano: field given more than once`},
		{"two values in one AnyValue", span(`"attributes":[{"key":"k","value":{"stringValue":"a","intValue":"1"}}]`),
			`decode otlp json: at line 1, column 181: resourceSpans[0].scopeSpans[0].spans[0].attributes[0].value.intValue: stringValue is already set; an AnyValue holds one value`},
		{"bad base64", span(`"attributes":[{"key":"k","value":{"bytesValue":"AQ="}}]`),
			`decode otlp json: at line 1, column 165: resourceSpans[0].scopeSpans[0].spans[0].attributes[0].value.bytesValue: bad base64: illegal base64 data at input byte 3`},
		{"string for a number", span(`"kind":true`),
			`decode otlp json: at line 1, column 125: resourceSpans[0].scopeSpans[0].spans[0].kind: bad enum value true`},
		{"number for a string", span(`"name":7`),
			`decode otlp json: at line 1, column 125: resourceSpans[0].scopeSpans[0].spans[0].name: want a string, got a number`},
		{"string for an object", span(`"status":"ERROR"`),
			`decode otlp json: at line 1, column 127: resourceSpans[0].scopeSpans[0].spans[0].status: want an object, got a string`},
		{"bad double", span(`"attributes":[{"key":"k","value":{"doubleValue":"fast"}}]`),
			`decode otlp json: at line 1, column 166: resourceSpans[0].scopeSpans[0].spans[0].attributes[0].value.doubleValue: bad number "fast"`},
		{"trailing data", `{"resourceSpans":[]} {}`,
			`decode otlp json: at line 1, column 22: invalid character '{' after top-level value`},
		{"cut short", "{\n  \"resourceSpans\": [\n    {\"scopeSpans\": [",
			`decode otlp json: at line 3, column 21: unexpected end of JSON input`},
		{"empty", "", `decode otlp json: at line 1, column 1: unexpected end of JSON input`},
		{"bad escape", span(`"name":"a\qb"`),
			`decode otlp json: at line 1, column 128: invalid character 'q' in string escape code`},
		{"bad unicode escape", span(`"name":"\u12g4"`),
			`decode otlp json: at line 1, column 130: invalid character 'g' in \u hexadecimal character escape`},
		{"control character", span("\"name\":\"a\tb\""),
			`decode otlp json: at line 1, column 127: invalid character '\t' in string literal`},
		{"leading zero", span(`"flags":01`),
			`decode otlp json: at line 1, column 127: invalid character '1' after object key:value pair`},
		{"bad literal", span(`"status":nul`),
			`decode otlp json: at line 1, column 130: invalid character '}' in literal null (expecting 'l')`},
		{"missing colon", span(`"name" "x"`),
			`decode otlp json: at line 1, column 125: invalid character '"' after object key`},
		{"trailing comma in array", span(`"events":[{},]`),
			`decode otlp json: at line 1, column 131: invalid character ']' looking for beginning of value`},
		{"too deep", span(`"x":` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000)),
			`decode otlp json: at line 1, column 10115: exceeded max depth`},
		{"top level array", `[{}]`, `decode otlp json: at line 1, column 1: want an object, got an array`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, l := newLocal()
			_, _, err := DecodeJSON(l, []byte(tt.in), Limits{})
			if err == nil || err.Error() != tt.want {
				t.Fatalf("DecodeJSON(%.200q) error =\n%v\nwant\n%s", tt.in, err, tt.want)
			}
		})
	}
}

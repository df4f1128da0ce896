package receiver

import (
	"bufio"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/nemo-gym/gymtrace/model"
	"google.golang.org/protobuf/encoding/protojson"
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
	if sp.TraceID != want {
		t.Errorf("TraceID = %s, want %x", sp.TraceID, want)
	}
	if sp.SpanID != (model.SpanID{0xee, 0xe1, 0x9b, 0x7e, 0xc3, 0xc1, 0xb1, 0x74}) {
		t.Errorf("SpanID = %s, want eee19b7ec3c1b174", sp.SpanID)
	}
	if sp.ParentID.String() != "eee19b7ec3c1b173" {
		t.Errorf("ParentID = %s, want eee19b7ec3c1b173", sp.ParentID)
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
	first := b.Spans[0]
	if first.TraceID.String() != "243fcc768c47930834e6ed7fbc6634f7" || first.SpanID.String() != "5ca30d27c1578b1c" || first.ParentID.String() != "67efcc133c5040f8" {
		t.Errorf("first fixture span ids = %s/%s parent %s", first.TraceID, first.SpanID, first.ParentID)
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
	if p, j := dumpSpans(inP, bp.Spans, o), dumpSpans(inJ, bj.Spans, o); p != j {
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
	want := dumpSpans(in0, b0.Spans, o)
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
			if got := dumpSpans(in, b.Spans, o); got != want {
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
			`decode otlp json: bad unsigned integer "soon"`, false},
		{"wrong type", `{"resourceSpans":{"a":1}}`,
			`decode otlp json: at line 1, column 18: json: cannot unmarshal object into Go struct field jTraceReq.resourceSpans of type []receiver.jResourceSpans`, false},
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

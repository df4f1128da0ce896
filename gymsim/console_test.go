package gymsim

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nemo-gym/gymtrace/internal/golden"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

func TestAppendPyValue(t *testing.T) {
	tests := []struct {
		name string
		in   attribute.Value
		want string
	}{
		{"int", attribute.IntValue(12), `12`},
		{"negative int", attribute.Int64Value(-7), `-7`},
		{"whole float keeps .0", attribute.Float64Value(1), `1.0`},
		{"zero float", attribute.Float64Value(0), `0.0`},
		{"fraction", attribute.Float64Value(0.7), `0.7`},
		{"small float uses exponent", attribute.Float64Value(1e-05), `1e-05`},
		{"just above exponent cut", attribute.Float64Value(0.0001), `0.0001`},
		{"large float uses exponent", attribute.Float64Value(1e16), `1e+16`},
		{"large float below cut", attribute.Float64Value(1e15), `1000000000000000.0`},
		{"bool", attribute.BoolValue(true), `true`},
		{"ascii string", attribute.StringValue("POST /run"), `"POST /run"`},
		{"quotes and backslash", attribute.StringValue(`a "b" \c`), `"a \"b\" \\c"`},
		{"control characters", attribute.StringValue("a\nb\tc\x01\x7f"), `"a\nb\tc\u0001\u007f"`},
		{"non-ascii escaped", attribute.StringValue("é"), `"\u00e9"`},
		{"astral as surrogates", attribute.StringValue("😀"), `"\ud83d\ude00"`},
		{"string list", attribute.StringSliceValue([]string{"a", "b"}), `["a", "b"]`},
		{"int list", attribute.Int64SliceValue([]int64{1, 2}), `[1, 2]`},
		{"float list", attribute.Float64SliceValue([]float64{1, 2.5}), `[1.0, 2.5]`},
		{"bool list", attribute.BoolSliceValue([]bool{true, false}), `[true, false]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(appendPyValue(nil, tt.in))
			if got != tt.want {
				t.Errorf("appendPyValue(%v) = %s, want %s", tt.in.Emit(), got, tt.want)
			}
		})
	}
}

// stubSpan builds a finished span with fixed ids and times.
func stubSpan(t *testing.T, kind trace.SpanKind, parent bool, mutate func(*tracetest.SpanStub)) sdktrace.ReadOnlySpan {
	t.Helper()
	tid, _ := trace.TraceIDFromHex("faa3fe8f29381a794b7f927603c067b8")
	sid, _ := trace.SpanIDFromHex("b225abc543cacff1")
	pid, _ := trace.SpanIDFromHex("64d72717b6ff76ba")
	start := time.Date(2026, 11, 29, 18, 43, 51, 657169123, time.UTC)
	st := tracetest.SpanStub{
		Name:        "POST /v1/responses",
		SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled}),
		SpanKind:    kind,
		StartTime:   start,
		EndTime:     start.Add(348 * time.Microsecond),
		Resource: resource.NewWithAttributes("",
			attribute.String("service.name", "nemo-gym/policy_model"),
			attribute.String("telemetry.sdk.language", "go"),
			attribute.String("nemo.gym.server.type", "responses_api_models"),
			attribute.String("extra.key", "last"),
		),
	}
	if parent {
		st.Parent = trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: pid, Remote: true})
	}
	if mutate != nil {
		mutate(&st)
	}
	return st.Snapshot()
}

func TestAppendPythonSpanJSON(t *testing.T) {
	tests := []struct {
		name string
		span sdktrace.ReadOnlySpan
	}{
		{"server_ok", stubSpan(t, trace.SpanKindServer, true, func(s *tracetest.SpanStub) {
			s.Attributes = []attribute.KeyValue{attribute.Int("http.status_code", 200), attribute.String("http.route", "/v1/responses")}
		})},
		{"root_error_with_exception", stubSpan(t, trace.SpanKindInternal, false, func(s *tracetest.SpanStub) {
			s.Name = "gym.verify"
			s.Status = sdktrace.Status{Code: codes.Error, Description: `RuntimeError: verifier crashed: "bad" é`}
			s.Events = []sdktrace.Event{{Name: "exception", Time: s.EndTime, Attributes: []attribute.KeyValue{
				attribute.String("exception.type", "RuntimeError"),
				attribute.String("exception.message", `verifier crashed: "bad" é`),
			}}}
		})},
		{"client_with_link", stubSpan(t, trace.SpanKindClient, true, func(s *tracetest.SpanStub) {
			s.Name = "HTTP POST"
			s.Status = sdktrace.Status{Code: codes.Ok}
			s.Links = []sdktrace.Link{{SpanContext: s.Parent, Attributes: []attribute.KeyValue{attribute.String("k", "v")}}}
			s.Attributes = []attribute.KeyValue{attribute.StringSlice("nemo.gym.tags", []string{"a", "b"}), attribute.Float64("t", 0.7), attribute.Bool("ok", true)}
		})},
	}
	order := []attribute.Key{"telemetry.sdk.language", "service.name", "nemo.gym.server.type"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := append(AppendPythonSpanJSON(nil, tt.span, order), '\n')
			if !json.Valid(got) {
				t.Fatalf("invalid JSON: %s", got)
			}
			golden.Check(t, got)
		})
	}
}

// keyOrder returns the keys of a JSON object in document order, and of the
// nested objects named in sub ("context", "status", "resource").
func keyOrder(t *testing.T, line []byte) map[string][]string {
	t.Helper()
	var top map[string]json.RawMessage
	if err := json.Unmarshal(line, &top); err != nil {
		t.Fatalf("decode %s: %v", line, err)
	}
	out := map[string][]string{"": keys(t, line)}
	for _, k := range []string{"context", "status", "resource"} {
		out[k] = keys(t, top[k])
	}
	var res struct {
		Attributes json.RawMessage `json:"attributes"`
	}
	_ = json.Unmarshal(top["resource"], &res)
	out["resource.attributes"] = keys(t, res.Attributes)
	return out
}

func keys(t *testing.T, obj []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(obj))
	var ks []string
	depth := 0
	expectKey := false
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{', '[':
				depth++
				expectKey = depth == 1
			default:
				depth--
				// A nested value just closed: a key comes next.
				expectKey = depth == 1
			}
			continue
		}
		if depth != 1 {
			continue
		}
		if expectKey {
			ks = append(ks, tok.(string))
		}
		expectKey = !expectKey
	}
	return ks
}

// TestConsoleMatchesPythonSDK runs the fleet with the console exporter and
// checks every line against the real Python SDK sample: same key order at
// every level, same id, kind and time formats, and same spans as the truth.
func TestConsoleMatchesPythonSDK(t *testing.T) {
	ref, err := os.ReadFile("testdata/python-sdk-real.console.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	refLines := bytes.Split(bytes.TrimSpace(ref), []byte("\n"))
	want := keyOrder(t, refLines[0])
	delete(want, "status") // differs by presence of a description

	var buf bytes.Buffer
	f := runFleet(t, Config{Seed: 11, Spec: "all", Rollouts: 6, Protocol: "console", Console: &buf, RecordTruth: true})
	truth := map[string]TruthSpan{}
	for _, s := range f.Truth() {
		truth[s.SpanID.String()] = s
	}
	lines := bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n"))
	if len(lines) != len(truth) || len(lines) == 0 {
		t.Fatalf("console lines = %d, truth spans = %d", len(lines), len(truth))
	}
	for i, line := range lines {
		got := keyOrder(t, line)
		for k, w := range want {
			if k == "resource.attributes" {
				// Python prints the resource in insertion order: ours
				// follows Gym's (this older sample has other keys).
				w = nil
				for _, k := range f.variant.resourceKeys() {
					w = append(w, string(k))
				}
			}
			if !reflect.DeepEqual(got[k], w) {
				t.Fatalf("line %d: keys of %q = %v, want %v\n%s", i+1, k, got[k], w, line)
			}
		}
		var sp struct {
			Name    string `json:"name"`
			Context struct {
				TraceID string `json:"trace_id"`
				SpanID  string `json:"span_id"`
			} `json:"context"`
			Kind     string  `json:"kind"`
			ParentID *string `json:"parent_id"`
			Start    string  `json:"start_time"`
		}
		if err := json.Unmarshal(line, &sp); err != nil {
			t.Fatal(err)
		}
		if len(sp.Context.TraceID) != 34 || len(sp.Context.SpanID) != 18 || !strings.HasPrefix(sp.Context.SpanID, "0x") {
			t.Fatalf("line %d: ids %q %q not 0x hex", i+1, sp.Context.TraceID, sp.Context.SpanID)
		}
		if _, err := time.Parse("2006-01-02T15:04:05.000000Z", sp.Start); err != nil {
			t.Fatalf("line %d: start_time %q: %v", i+1, sp.Start, err)
		}
		ts, ok := truth[sp.Context.SpanID[2:]]
		if !ok {
			t.Fatalf("line %d: span %s not in truth", i+1, sp.Context.SpanID)
		}
		wantParent := ts.ParentID.IsValid()
		if (sp.ParentID != nil) != wantParent || (wantParent && *sp.ParentID != "0x"+ts.ParentID.String()) {
			t.Fatalf("line %d: parent %v, truth %s", i+1, sp.ParentID, ts.ParentID)
		}
		if sp.Name != ts.Name || sp.Kind != kindNames[ts.Kind] || sp.Context.TraceID != "0x"+ts.TraceID.String() {
			t.Fatalf("line %d: %s %s %s, truth %+v", i+1, sp.Name, sp.Kind, sp.Context.TraceID, ts)
		}
	}
}

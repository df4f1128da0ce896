package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// llmBatch is one export of n LLM spans, each carrying a 10 kB prompt: as
// one record line it is over 5 MB.
func llmBatch(n int) []byte {
	prompt := strings.Repeat("You are a helpful assistant. ", 350)
	trace := bytes.Repeat([]byte{0x5e}, 16)
	spans := make([]*tracepb.Span, n)
	for i := range spans {
		id := make([]byte, 8)
		binary.BigEndian.PutUint64(id, uint64(i+1))
		spans[i] = &tracepb.Span{TraceId: trace, SpanId: id, Name: "model_call", Kind: tracepb.Span_SPAN_KIND_CLIENT,
			StartTimeUnixNano: 1_700_000_000_000_000_000 + uint64(i), EndTimeUnixNano: 1_700_000_000_100_000_000 + uint64(i),
			Attributes: []*commonpb.KeyValue{
				{Key: "nemo.gym.rollout.id", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "r-" + string(rune('a'+i%8))}}},
				{Key: "gen_ai.prompt", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: prompt}}},
			}}
	}
	b, _ := proto.Marshal(&coltrace.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource:   &resourcepb.Resource{Attributes: []*commonpb.KeyValue{{Key: "service.name", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "nemo-gym/policy_model"}}}}},
		ScopeSpans: []*tracepb.ScopeSpans{{Spans: spans}},
	}}})
	return b
}

// TestRecordReadBack records a 512-span batch of LLM spans (one line over
// 5 MB) and a metrics request with serve --record, then reads the record
// with check and preview: every span, the metric, no bad line.
func TestRecordReadBack(t *testing.T) {
	rec := filepath.Join(t.TempDir(), "rec.jsonl")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	addr := make(chan string, 1)
	done := make(chan int, 1)
	go func() {
		done <- runServe(ctx, []string{"--headless", "--grpc-addr", "off", "--http-addr", "127.0.0.1:0", "--record", rec},
			&stdout, &stderr, false, func(r *runningReceivers) { addr <- r.HTTPAddr })
	}()
	base := "http://" + <-addr
	post(t, base+"/v1/traces", "application/x-protobuf", llmBatch(512))
	post(t, base+"/v1/metrics", "application/json", []byte(`{"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"name":"gym.concurrency.queue_wait_duration_ms","gauge":{"dataPoints":[{"asDouble":1},{"asDouble":2}]}}]}]}]}`))
	cancel()
	if code := <-done; code != exitOK {
		t.Fatalf("serve exited %d: %s", code, stderr.String())
	}
	b, err := os.ReadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := bytes.Cut(b, []byte("\n"))
	if len(first) < 5<<20 {
		t.Fatalf("first record line is %d bytes, want over 5 MB", len(first))
	}
	code, out, errOut := runGateCmd(t, checkCmd, "--json", "--spec", "all", rec)
	if code != exitOK && code != 1 {
		t.Fatalf("check exited %d: %s", code, errOut)
	}
	var ck checkJSON
	if err := json.Unmarshal([]byte(out), &ck); err != nil {
		t.Fatal(err)
	}
	if ck.Spans != 512 || ck.BadLines.Bad != 0 {
		t.Errorf("check: %d spans, %d bad lines %v; want 512, 0", ck.Spans, ck.BadLines.Bad, ck.BadLines.Samples)
	}
	code, out, errOut = runGateCmd(t, previewCmd, "--json", "--spec", "all", rec)
	if code != exitOK {
		t.Fatalf("preview exited %d: %s", code, errOut)
	}
	var pv previewJSON
	if err := json.Unmarshal([]byte(out), &pv); err != nil {
		t.Fatal(err)
	}
	if pv.Input.Spans != 512 || pv.BadLines.Bad != 0 || pv.Metrics["concurrency"] != 2 {
		t.Errorf("preview: %d spans, %d bad lines, metrics %v; want 512, 0, the concurrency group with 2 points", pv.Input.Spans, pv.BadLines.Bad, pv.Metrics)
	}
}

// TestRejectionsWhileReading checks spans refused inside lines that were
// read, and strings repaired, reach check and preview --json.
func TestRejectionsWhileReading(t *testing.T) {
	good := `{"traceId":"5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e","spanId":"0000000000000001","name":"bad ` + "\xff" + `","startTimeUnixNano":"1","endTimeUnixNano":"2","attributes":[{"key":"nemo.gym.rollout.id","value":{"stringValue":"r-1"}}]}`
	short := `{"traceId":"5e5e","spanId":"0000000000000002","name":"x"}`
	line := `{"resourceSpans":[{"scopeSpans":[{"spans":[` + good + `,` + short + `]}]}]}`
	path := filepath.Join(t.TempDir(), "c.jsonl")
	if err := os.WriteFile(path, []byte(line+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []func([]string, *bytes.Buffer, *bytes.Buffer) int{checkCmd, previewCmd} {
		_, out, errOut := runGateCmd(t, cmd, "--json", "--spec", "all", path)
		var got struct {
			BadLines badLinesJSON `json:"bad_lines"`
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("%v: %s", err, errOut)
		}
		if b := got.BadLines; b.SpansRejected != 1 || !strings.Contains(b.RejectedReason, "trace") || b.ValuesRepaired != 1 {
			t.Errorf("bad_lines = %+v, want 1 span rejected for its trace id and 1 value repaired", b)
		}
	}
}

package receiver

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nemo-gym/gymtrace/model"
	collogs "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
)

// TestRecordCarriesMetricsAndLogs records metrics and logs beside spans,
// over both transports and both encodings, and checks reading the record
// back gives the live store's counts, per metric name too.
func TestRecordCarriesMetricsAndLogs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rec.jsonl")
	srv, st := startServer(t, Config{RecordPath: path}, model.Options{})
	ga, ha := srv.Addrs()
	cc := dialRaw(t, ga)
	metrics := metricsRequest([]namedPoints{{"gym.concurrency.queue_wait_duration_ms", 3}, {"other", 2}})
	// An exemplar carries ids: the record must write them as hex.
	metrics.ResourceMetrics[0].ScopeMetrics[0].Metrics[1].GetSum().DataPoints[0].Exemplars = []*metricspb.Exemplar{{
		TraceId: bytes.Repeat([]byte{0xab}, 16), SpanId: bytes.Repeat([]byte{0xcd}, 8), Value: &metricspb.Exemplar_AsDouble{AsDouble: 1}}}
	logs := &collogs.ExportLogsServiceRequest{ResourceLogs: []*logspb.ResourceLogs{{ScopeLogs: []*logspb.ScopeLogs{{LogRecords: []*logspb.LogRecord{
		{TraceId: bytes.Repeat([]byte{0xab}, 16), SpanId: bytes.Repeat([]byte{0xcd}, 8)}, {}}}}}}}
	ctx := context.Background()
	if err := cc.Invoke(ctx, "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export", &rawRequest{b: encodeRequest(t, metrics)}, new(colmetrics.ExportMetricsServiceResponse)); err != nil {
		t.Fatal(err)
	}
	if err := cc.Invoke(ctx, "/opentelemetry.proto.collector.logs.v1.LogsService/Export", &rawRequest{b: encodeRequest(t, logs)}, new(collogs.ExportLogsServiceResponse)); err != nil {
		t.Fatal(err)
	}
	if code, resp := postHTTP(t, ha, "/v1/metrics", mediaJSON, "", otlpJSON(t, metrics)); code != 200 {
		t.Fatalf("metrics json: %d %s", code, resp)
	}
	if code, resp := postHTTP(t, ha, "/v1/logs", mediaProto, "", encodeRequest(t, logs)); code != 200 {
		t.Fatalf("logs: %d %s", code, resp)
	}
	if err := cc.Invoke(ctx, traceExport, &rawRequest{b: encodeRequest(t, testRequest(3))}, new(coltrace.ExportTraceServiceResponse)); err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	st.Sync()
	live := st.Snapshot()
	text := readFile(t, path)
	if strings.Count(text, "\n") != 5 {
		t.Fatalf("record has %d lines, want 5:\n%s", strings.Count(text, "\n"), text)
	}
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		if !json.Valid([]byte(line)) {
			t.Errorf("not valid JSON: %s", line)
		}
	}
	if !strings.Contains(text, `"traceId":"abababababababababababababababab"`) || !strings.Contains(text, `"spanId":"cdcdcdcdcdcdcdcd"`) {
		t.Errorf("ids not hex in the record:\n%s", text)
	}
	reloaded, _, rep := loadFile(t, path, ReadOptions{})
	if rep.BadLines != 0 {
		t.Fatalf("bad lines: %v", rep.BadSamples)
	}
	got := reloaded.Snapshot()
	if got.Stats.MetricPoints != live.Stats.MetricPoints || got.Stats.LogRecords != live.Stats.LogRecords || got.Stats.Stored != live.Stats.Stored {
		t.Errorf("reloaded: %d points, %d logs, %d spans; live: %d, %d, %d", got.Stats.MetricPoints, got.Stats.LogRecords, got.Stats.Stored,
			live.Stats.MetricPoints, live.Stats.LogRecords, live.Stats.Stored)
	}
	if live.Stats.MetricPoints != 10 || live.Stats.LogRecords != 4 {
		t.Errorf("live: %d points, %d logs; want 10, 4", live.Stats.MetricPoints, live.Stats.LogRecords)
	}
	for name, n := range live.Metrics {
		if got.Metrics[name] != n {
			t.Errorf("metric %s: reloaded %d, live %d", name, got.Metrics[name], n)
		}
	}
}

// TestRecordSplitsHugeRequests checks a converted request longer than the
// line bound is written as several lines, each under it, holding every
// span.
func TestRecordSplitsHugeRequests(t *testing.T) {
	req := testRequest(300)
	req.ResourceSpans = append(req.ResourceSpans, testRequest(7).ResourceSpans...)
	const max = 4 << 10
	out := appendTraceLines(nil, req, max)
	lines := strings.Split(string(out), "\n")
	if len(lines) < 10 {
		t.Fatalf("%d lines, want the request split", len(lines))
	}
	_, l := newLocal()
	n := 0
	for i, line := range lines {
		if len(line) > max {
			t.Errorf("line %d: %d bytes, over %d", i+1, len(line), max)
		}
		b, _, err := DecodeJSON(l, []byte(line), Limits{})
		if err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		n += len(b.Spans)
	}
	if n != 307 {
		t.Errorf("%d spans in the lines, want 307", n)
	}
}

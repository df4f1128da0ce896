package receiver

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nemo-gym/gymtrace/model"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
)

// TestHTTPExporterOnGRPCPort points a real OTLP/HTTP exporter at the gRPC
// port, a common misconfiguration: instead of a bare connection reset, the
// exporter's error names the right port, the refusal is counted and logged,
// and gRPC on that port still works.
func TestHTTPExporterOnGRPCPort(t *testing.T) {
	log := &syncWriter{w: new(bytes.Buffer)}
	srv, st := startServer(t, Config{Log: log}, model.Options{})
	ga, ha := srv.Addrs()
	exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpoint(ga), otlptracehttp.WithInsecure(),
		otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false}))
	if err != nil {
		t.Fatal(err)
	}
	stub := tracetest.SpanStub{Name: "op"}
	err = exp.ExportSpans(context.Background(), []sdktrace.ReadOnlySpan{stub.Snapshot()})
	want := "this is the OTLP/gRPC port; OTLP/HTTP is on " + ha
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("exporter error = %v, want it to say %q", err, want)
	}
	exp.Shutdown(context.Background())
	if got := srv.Stats().RequestsRefused[ReasonWrongPort]; got != 1 {
		t.Errorf("%s refusals = %d, want 1 (%v)", ReasonWrongPort, got, srv.Stats().RequestsRefused)
	}
	if !strings.Contains(log.String(), ReasonWrongPort+`: HTTP/1.1 "POST /v1/traces HTTP/1.1" on the gRPC port: `+want) {
		t.Errorf("log does not name the mistake:\n%s", log.String())
	}
	st.Sync()
	if s := st.Snapshot().Stats; s.LastRefusal != ReasonWrongPort {
		t.Errorf("the TUI header's last refusal is %q, want %s", s.LastRefusal, ReasonWrongPort)
	}
	// A plain GET (a browser, curl) gets the same answer.
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + ga + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("GET on the gRPC port answered %d, want 400", resp.StatusCode)
	}
	// gRPC itself is untouched.
	var out coltrace.ExportTraceServiceResponse
	if err := dialRaw(t, ga).Invoke(context.Background(), traceExport, &rawRequest{b: encodeRequest(t, testRequest(2))}, &out); err != nil {
		t.Fatalf("gRPC export after the sniff: %v", err)
	}
}

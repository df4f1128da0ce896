package receiver

import (
	"bytes"
	"context"
	"encoding/binary"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nemo-gym/gymtrace/model"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
)

// bigRequest is an export of n spans, each with a 2 KB attribute, numbered
// from first.
func bigRequest(t testing.TB, first uint64, n int) []byte {
	t.Helper()
	blob := strings.Repeat("z", 2048)
	spans := make([]*tracepb.Span, n)
	for i := range spans {
		tid, sid := make([]byte, 16), make([]byte, 8)
		binary.BigEndian.PutUint64(tid[8:], first+uint64(i))
		binary.BigEndian.PutUint64(sid, first+uint64(i))
		spans[i] = &tracepb.Span{TraceId: tid, SpanId: sid, Name: "big", StartTimeUnixNano: 1, EndTimeUnixNano: 2,
			Attributes: []*commonpb.KeyValue{{Key: "blob", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: blob}}}}}
	}
	return encodeRequest(t, &coltrace.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{ScopeSpans: []*tracepb.ScopeSpans{{Spans: spans}}}}})
}

// TestRequestSizeLimit64MiB checks the OTLP 1.11 request size rule on both
// transports, with the default limit (64 MiB, enforced after
// decompression): a 40 MB request is taken whole (over gRPC, where the
// limit used to be 16 MiB, too), and requests past the limit, as sent or
// once inflated, are refused as not retryable, RESOURCE_EXHAUSTED and 413.
func TestRequestSizeLimit64MiB(t *testing.T) {
	if testing.Short() {
		t.Skip("sends requests of 40 to 70 MB")
	}
	srv, st := startServer(t, Config{}, model.Options{})
	ga, ha := srv.Addrs()
	const spans40MB = 19_000 // about 40 MB
	body40 := bigRequest(t, 1, spans40MB)
	if n := len(body40); n < 40e6 || n > 41e6 {
		t.Fatalf("the 40 MB request is %d bytes", n)
	}
	cc := dialRaw(t, ga)
	var resp coltrace.ExportTraceServiceResponse
	if err := cc.Invoke(context.Background(), traceExport, &rawRequest{b: body40}, &resp, grpc.MaxCallSendMsgSize(1<<30)); err != nil {
		t.Fatalf("40 MB gRPC request: %v", err)
	}
	if code, msg := postHTTP(t, ha, "/v1/traces", mediaProto, "", bigRequest(t, 1_000_001, spans40MB)); code != http.StatusOK {
		t.Fatalf("40 MB HTTP request answered %d %s", code, msg)
	}
	// gzip over gRPC: 40 MB once inflated, within the limit.
	if err := cc.Invoke(context.Background(), traceExport, &rawRequest{b: bigRequest(t, 2_000_001, spans40MB)}, &resp, grpc.UseCompressor("gzip")); err != nil {
		t.Fatalf("40 MB gzip gRPC request: %v", err)
	}
	st.Sync()
	if got := st.Snapshot().Stats.Stored; got != 3*spans40MB {
		t.Errorf("store holds %d spans, want the three 40 MB requests' %d", got, 3*spans40MB)
	}

	over := bigRequest(t, 3_000_001, 34_000) // about 70 MB
	err := cc.Invoke(context.Background(), traceExport, &rawRequest{b: over}, &resp, grpc.MaxCallSendMsgSize(1<<30))
	if st := grpcstatus.Convert(err); st.Code() != codes.ResourceExhausted {
		t.Errorf("70 MB gRPC request: %v, want ResourceExhausted", err)
	}
	if code, msg := postHTTP(t, ha, "/v1/traces", mediaProto, "", over); code != http.StatusRequestEntityTooLarge {
		t.Errorf("70 MB HTTP request answered %d %s, want 413", code, msg)
	}
	// Small on the wire, past the limit once inflated.
	zeros := bytes.Repeat([]byte{0}, 70<<20)
	if code, msg := postHTTP(t, ha, "/v1/traces", mediaProto, "gzip", gzipBytes(t, zeros)); code != http.StatusRequestEntityTooLarge {
		t.Errorf("gzip body inflating to 70 MiB answered %d %s, want 413", code, msg)
	}
	err = cc.Invoke(context.Background(), traceExport, &rawRequest{b: zeros}, &resp, grpc.UseCompressor("gzip"), grpc.MaxCallSendMsgSize(1<<30))
	if st := grpcstatus.Convert(err); st.Code() != codes.ResourceExhausted {
		t.Errorf("gzip gRPC message inflating to 70 MiB: %v, want ResourceExhausted", err)
	}
	// gRPC answers a message past the bound before the handler that
	// counts it returns: wait for the count.
	for t0 := time.Now(); srv.Stats().RequestsRefused[ReasonTooLarge] < 4 && time.Since(t0) < time.Second; {
		time.Sleep(10 * time.Millisecond)
	}
	if got := srv.Stats().RequestsRefused[ReasonTooLarge]; got != 4 {
		t.Errorf("%d requests counted too large, want 4 (%v)", got, srv.Stats().RequestsRefused)
	}
}

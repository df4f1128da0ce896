package receiver

import (
	"context"
	"os"
	"testing"

	"github.com/nemo-gym/gymtrace/model"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// benchRequest is a 512-span request as telemetrygen sends it.
func benchRequest(b *testing.B) ([]byte, int) {
	b.Helper()
	raw, err := os.ReadFile("testdata/req-telemetrygen-512.bin")
	if err != nil {
		b.Fatal(err)
	}
	var req coltrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(raw, &req); err != nil {
		b.Fatal(err)
	}
	n := 0
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			n += len(ss.Spans)
		}
	}
	return raw, n
}

// BenchmarkIngestGRPC measures end-to-end ingest over loopback gRPC: client
// send, decode, store submit and answer. Repeated requests are duplicates to
// the store, so memory stays flat.
func BenchmarkIngestGRPC(b *testing.B) {
	body, spans := benchRequest(b)
	srv, _ := startServer(b, Config{}, model.Options{QueueLen: 4096})
	ga, _ := srv.Addrs()
	cc := dialRaw(b, ga)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var resp coltrace.ExportTraceServiceResponse
		for pb.Next() {
			if err := cc.Invoke(context.Background(), traceExport, &rawRequest{b: body}, &resp); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(spans*b.N)/b.Elapsed().Seconds(), "spans/s")
}

// BenchmarkIngestHTTP is the same over OTLP/HTTP protobuf.
func BenchmarkIngestHTTP(b *testing.B) {
	body, spans := benchRequest(b)
	srv, _ := startServer(b, Config{}, model.Options{QueueLen: 4096})
	_, ha := srv.Addrs()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if code, resp := postHTTP(b, ha, "/v1/traces", mediaProto, "", body); code != 200 {
				b.Errorf("status %d: %s", code, resp)
				return
			}
		}
	})
	b.ReportMetric(float64(spans*b.N)/b.Elapsed().Seconds(), "spans/s")
}

// BenchmarkRecordLine measures converting one 512-span protobuf request to
// its OTLP/JSON record line: read from the wire directly (the record's
// path), and through the generated types (its fallback).
func BenchmarkRecordLine(b *testing.B) {
	body, spans := benchRequest(b)
	for _, c := range []struct {
		name string
		conv func([]byte, []byte) ([]byte, error)
	}{{"wire", appendTraceWireJSON}, {"typed", appendTraceLinesTyped}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			var line []byte
			var err error
			for i := 0; i < b.N; i++ {
				if line, err = c.conv(line[:0], body); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(int64(len(body)))
			b.ReportMetric(float64(spans*b.N)/b.Elapsed().Seconds(), "spans/s")
		})
	}
}

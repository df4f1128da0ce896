package receiver

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/nemo-gym/gymtrace/model"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
)

// TestGRPCUnknownServiceCounted calls a method and a service the receiver
// does not serve: both are answered Unimplemented with what it serves,
// counted as unknown paths (as over HTTP) and logged with the client's
// user-agent.
func TestGRPCUnknownServiceCounted(t *testing.T) {
	log := &syncWriter{w: new(bytes.Buffer)}
	srv, _ := startServer(t, Config{HTTPAddr: Off, Log: log}, model.Options{})
	ga, _ := srv.Addrs()
	cc := dialRaw(t, ga)
	for _, method := range []string{
		"/opentelemetry.proto.collector.trace.v1.TraceService/Exports",
		"/opentelemetry.proto.collector.entities.v1development.EntitiesService/Export",
	} {
		err := cc.Invoke(context.Background(), method, &rawRequest{b: encodeRequest(t, testRequest(1))}, new(coltrace.ExportTraceServiceResponse))
		st := grpcstatus.Convert(err)
		if st.Code() != codes.Unimplemented || !strings.Contains(st.Message(), "TraceService/Export") {
			t.Errorf("%s: %v, want Unimplemented naming what is served", method, err)
		}
	}
	if got := srv.Stats().RequestsRefused; got[ReasonPath] != 2 || len(got) != 1 {
		t.Errorf("refusals %v, want %s=2", got, ReasonPath)
	}
	// A refused Export names its client the same way.
	if err := cc.Invoke(context.Background(), traceExport, &rawRequest{b: []byte{0xff, 0xff}}, new(coltrace.ExportTraceServiceResponse)); grpcstatus.Code(err) != codes.InvalidArgument {
		t.Fatalf("malformed export: %v, want InvalidArgument", err)
	}
	if !strings.Contains(log.String(), `malformed: grpc traces Export user-agent "grpc-go/`) {
		t.Errorf("log lacks the refused export's client:\n%s", log.String())
	}
	if !strings.Contains(log.String(), `unknown_path: grpc /opentelemetry.proto.collector.trace.v1.TraceService/Exports user-agent "grpc-go/`) {
		t.Errorf("log lacks the refused call:\n%s", log.String())
	}
}

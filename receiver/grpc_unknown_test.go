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
// counted as unknown paths (as over HTTP) and logged.
func TestGRPCUnknownServiceCounted(t *testing.T) {
	log := &syncWriter{w: new(bytes.Buffer)}
	srv, _ := startServer(t, Config{HTTPAddr: Off, Log: log}, model.Options{})
	ga, _ := srv.Addrs()
	cc := dialRaw(t, ga)
	for _, method := range []string{
		"/opentelemetry.proto.collector.trace.v1.TraceService/Exports",
		"/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export",
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
	if !strings.Contains(log.String(), "unknown_path: grpc /opentelemetry.proto.collector.trace.v1.TraceService/Exports") {
		t.Errorf("log lacks the refused call:\n%s", log.String())
	}
}

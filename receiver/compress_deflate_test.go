package receiver

import (
	"compress/flate"
	"compress/zlib"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/nemo-gym/gymtrace/model"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	grpcstatus "google.golang.org/grpc/status"
)

// coreDeflate compresses as gRPC core's "deflate" does (a zlib stream), with
// the standard library, not gymtrace's code; raw sends a bare deflate
// stream. The old-style client option sends it without the registry this
// process shares with the server.
type coreDeflate struct{ raw bool }

func (c coreDeflate) Do(w io.Writer, p []byte) error {
	var zw io.WriteCloser
	if c.raw {
		zw, _ = flate.NewWriter(w, flate.DefaultCompression)
	} else {
		zw = zlib.NewWriter(w)
	}
	if _, err := zw.Write(p); err != nil {
		return err
	}
	return zw.Close()
}
func (coreDeflate) Type() string { return "deflate" }

// TestGRPCDeflate: a sender set to OTEL_EXPORTER_OTLP_COMPRESSION=deflate
// over gRPC (the OTel Python SDK, through grpcio) is read, within the
// size bound after decompression.
func TestGRPCDeflate(t *testing.T) {
	srv, st := startServer(t, Config{HTTPAddr: Off, MaxRecvBytes: 64 << 10}, model.Options{})
	ga, _ := srv.Addrs()
	good := encodeRequest(t, testRequest(4))
	for i, raw := range []bool{false, true} {
		cc, err := grpc.NewClient(ga, grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithDefaultCallOptions(grpc.ForceCodecV2(rawClientCodec{})), grpc.WithCompressor(coreDeflate{raw: raw}))
		if err != nil {
			t.Fatal(err)
		}
		defer cc.Close()
		var resp coltrace.ExportTraceServiceResponse
		if err := cc.Invoke(context.Background(), traceExport, &rawRequest{b: good}, &resp); err != nil {
			t.Fatalf("deflate (raw %v): %v", raw, err)
		}
		st.Sync()
		if got := st.Snapshot().Stats.Accepted; got != int64(4*(i+1)) {
			t.Fatalf("deflate (raw %v): accepted %d spans, want %d", raw, got, 4*(i+1))
		}
		err = cc.Invoke(context.Background(), traceExport, &rawRequest{b: make([]byte, 1<<20)}, &resp)
		if s := grpcstatus.Convert(err); s.Code() != codes.ResourceExhausted || !strings.Contains(s.Message(), "after decompression") {
			t.Errorf("deflate bomb (raw %v): %v %q, want ResourceExhausted after decompression", raw, s.Code(), s.Message())
		}
	}
	if got := srv.Stats().RequestsRefused; got[ReasonEncoding] != 0 {
		t.Errorf("refused as an encoding: %v", got)
	}
}

package receiver

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	collogs "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	_ "google.golang.org/grpc/encoding/gzip" // registers the gzip decompressor OTLP senders use; compress.go adds zstd and snappy
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	grpcstatus "google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/emptypb"
)

// rawRequest is an export request kept as its protobuf wire bytes: the
// server codec fills it without parsing, so the span decoder is the only
// pass over the bytes. When gRPC received the message in one buffer, b
// points into it and buf holds a reference until free.
type rawRequest struct {
	b   []byte
	buf mem.BufferSlice
}

// free gives the received buffer back to gRPC's pool.
func (r *rawRequest) free() {
	if r.buf != nil {
		r.buf.Free()
		r.buf, r.b = nil, nil
	}
}

// rawCodec is the codec of our gRPC server only (grpc.ForceServerCodecV2):
// requests stay raw bytes, responses are ordinary protobuf messages. It is
// never registered globally, so clients in the same process are unaffected.
type rawCodec struct{}

func (rawCodec) Name() string { return "proto" }

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	m, ok := v.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("marshal %T: not a protobuf message", v)
	}
	b, err := proto.Marshal(m)
	if err != nil {
		return nil, err
	}
	return mem.BufferSlice{mem.SliceBuffer(b)}, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	switch x := v.(type) {
	case *rawRequest:
		// gRPC frees data when we return: keep a reference to a single
		// buffer (no copy), or join several into one pooled buffer. Large
		// requests arrive in many frames; a fresh slice per request would
		// be the biggest source of garbage (~500 bytes per span).
		if len(data) == 1 {
			data.Ref()
			x.buf, x.b = data, data[0].ReadOnlyData()
			return nil
		}
		buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
		x.buf, x.b = mem.BufferSlice{buf}, buf.ReadOnlyData()
		return nil
	case proto.Message:
		return proto.Unmarshal(data.Materialize(), x)
	}
	return fmt.Errorf("unmarshal into %T: unsupported type", v)
}

// gRPC bounds per connection.
const (
	grpcMaxStreams     = 64
	grpcStreamWindow   = 1 << 20
	grpcMaxHeaderBytes = 64 << 10
)

func (s *Server) newGRPCServer() *grpc.Server {
	g := grpc.NewServer(
		grpc.ForceServerCodecV2(rawCodec{}),
		// Bounds the message on the wire and again after decompression,
		// answering ResourceExhausted past it.
		grpc.MaxRecvMsgSize(s.cfg.MaxRecvBytes),
		grpc.StatsHandler(grpcEncodingWatch{s}),
		// An exporter needs one or a few streams at a time and a little
		// metadata; without these bounds one client could hold unlimited
		// streams, 16 MiB of headers each, for as long as it likes.
		grpc.MaxConcurrentStreams(grpcMaxStreams),
		// Streams are served by a pool of goroutines that keep their grown
		// stacks, not one new goroutine per request; windows fit a few
		// whole requests so a sender is not held to window updates (static
		// windows: no BDP probing; a connection buffers 4 MiB at most).
		grpc.NumStreamWorkers(uint32(runtime.GOMAXPROCS(0))),
		grpc.InitialWindowSize(grpcStreamWindow),
		grpc.InitialConnWindowSize(4*grpcStreamWindow),
		grpc.MaxHeaderListSize(grpcMaxHeaderBytes),
		grpc.ConnectionTimeout(10*time.Second),
		grpc.KeepaliveParams(keepalive.ServerParameters{
			MaxConnectionIdle: 5 * time.Minute,
			// A stream that never finishes (a request never sent whole)
			// ends with its connection: aged connections get GOAWAY, and
			// what is still open after the grace period is closed.
			MaxConnectionAge:      30 * time.Minute,
			MaxConnectionAgeGrace: time.Minute,
			Time:                  2 * time.Minute,
			Timeout:               20 * time.Second,
		}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 10 * time.Second, PermitWithoutStream: true}),
		// A call gRPC has no handler for (a profiles exporter, a typo in a
		// service name) would be refused unseen; it is counted and logged
		// as an unknown path is over HTTP.
		grpc.UnknownServiceHandler(s.grpcUnknown),
		// Stop returns once every handler has: a call cut off by a stop
		// is counted before the summary is.
		grpc.WaitForHandlers(true),
	)
	for _, sig := range []signal{signalTraces, signalMetrics, signalLogs, signalProfiles} {
		g.RegisterService(serviceDesc(sig), s)
	}
	return g
}

// grpcUnknown answers a call of a service or method gymtrace does not
// serve.
func (s *Server) grpcUnknown(_ any, stream grpc.ServerStream) error {
	s.requests.Add(1)
	s.failed.Add(1)
	method, _ := grpc.MethodFromServerStream(stream)
	from := "unknown"
	if p, ok := peer.FromContext(stream.Context()); ok && p.Addr != nil {
		from = p.Addr.String()
	}
	msg := fmt.Sprintf("no OTLP service at %q: use %s/Export, %s/Export or %s/Export", method,
		serviceDesc(signalTraces).ServiceName, serviceDesc(signalMetrics).ServiceName, serviceDesc(signalLogs).ServiceName)
	s.refuse(ReasonPath, from, "grpc "+method+grpcSender(stream.Context()), msg)
	return grpcstatus.Error(codes.Unimplemented, msg)
}

// grpcSender names the client of a refused call for the log, as its
// user-agent tells (an SDK and its version), so the process to fix can be
// found; "" when it sent none.
func grpcSender(ctx context.Context) string {
	md, _ := metadata.FromIncomingContext(ctx)
	if ua := md.Get("user-agent"); len(ua) > 0 {
		return fmt.Sprintf(" user-agent %q", ua[0])
	}
	return ""
}

// serviceDesc describes the OTLP collector service of one signal by hand, so
// its Export handler can take the request as raw bytes.
func serviceDesc(sig signal) *grpc.ServiceDesc {
	name := map[signal]string{
		signalTraces:   "opentelemetry.proto.collector.trace.v1.TraceService",
		signalMetrics:  "opentelemetry.proto.collector.metrics.v1.MetricsService",
		signalLogs:     "opentelemetry.proto.collector.logs.v1.LogsService",
		signalProfiles: profilesService,
	}[sig]
	return &grpc.ServiceDesc{
		ServiceName: name,
		HandlerType: (*any)(nil),
		Methods: []grpc.MethodDesc{{
			MethodName: "Export",
			Handler: func(srv any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
				return srv.(*Server).grpcExport(ctx, sig, dec)
			},
		}},
		Metadata: "opentelemetry/proto/collector/" + sig.String() + "/" + protoVersion(sig) + "/" + sig.String() + "_service.proto",
	}
}

// protoVersion is the version part of a signal's proto package: profiles
// are still in development.
func protoVersion(sig signal) string {
	if sig == signalProfiles {
		return "v1development"
	}
	return "v1"
}

// grpcExport answers one Export call. Every error it returns carries a
// status code: a bare error would reach the sender as Unknown, which OTLP
// exporters neither retry nor explain.
func (s *Server) grpcExport(ctx context.Context, sig signal, dec func(any) error) (any, error) {
	s.requests.Add(1)
	resp, err := s.grpcExportInner(ctx, sig, dec)
	if err != nil {
		s.failed.Add(1)
		from := "unknown"
		if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
			from = p.Addr.String()
		}
		st := grpcstatus.Convert(err)
		reason := grpcReason(st.Code())
		var gr *grpcRefusal
		if errors.As(err, &gr) {
			reason = gr.reason
		}
		s.refuse(reason, from, "grpc "+sig.String()+" Export"+grpcSender(ctx), st.Message())
	}
	return resp, err
}

func (s *Server) grpcExportInner(ctx context.Context, sig signal, dec func(any) error) (any, error) {
	if s.auth.enabled() {
		var got string
		if md, ok := metadata.FromIncomingContext(ctx); ok {
			if v := md.Get("authorization"); len(v) > 0 {
				got = v[0]
			}
		}
		if !s.auth.allow(got) {
			return nil, grpcstatus.Error(codes.Unauthenticated, "missing or wrong bearer token in the authorization metadata")
		}
	}
	// The message is read by dec, below: room for it is taken first, as
	// large as the requests of late (its own size is known only once it
	// has arrived), so calls queue for memory with their messages still
	// in the sender's flow-control window.
	res := &reservation{b: s.mem, wait: s.cfg.MemoryWait}
	defer res.release()
	if !res.growTo(ctx, handlingFactor*s.grpcSize.Load()) {
		return nil, s.grpcError(errMemoryFull)
	}
	var req rawRequest
	defer req.free()
	if err := dec(&req); err != nil {
		if s.stopping.Load() {
			s.cutOff.Add(1)
			return nil, &grpcRefusal{grpcstatus.New(codes.Unavailable, "request cut off: the receiver is stopping; retry later"), ReasonCutOff}
		}
		if st, ok := grpcstatus.FromError(err); ok && st.Code() != codes.Unknown {
			return nil, err // gRPC's own answer, such as ResourceExhausted past the size bound
		}
		return nil, grpcstatus.Errorf(codes.InvalidArgument, "read %s request: %v", sig, err)
	}
	s.noteGRPCSize(int64(len(req.b)))
	if !res.growTo(ctx, handlingFactor*int64(len(req.b))) {
		return nil, s.grpcError(errMemoryFull)
	}
	switch sig {
	case signalProfiles:
		if err := s.exportProfiles(req.b, formatProto); err != nil {
			return nil, s.grpcError(err)
		}
		return &emptypb.Empty{}, nil // an ExportProfilesServiceResponse without partial success
	case signalMetrics:
		if err := s.exportCounted(ctx, sig, req.b, formatProto, res); err != nil {
			return nil, s.grpcError(err)
		}
		return &colmetrics.ExportMetricsServiceResponse{}, nil
	case signalLogs:
		if err := s.exportCounted(ctx, sig, req.b, formatProto, res); err != nil {
			return nil, s.grpcError(err)
		}
		return &collogs.ExportLogsServiceResponse{}, nil
	}
	out, err := s.exportTraces(ctx, req.b, formatProto, res)
	if err != nil {
		return nil, s.grpcError(err)
	}
	resp := &coltrace.ExportTraceServiceResponse{}
	if out.rejected > 0 {
		resp.PartialSuccess = &coltrace.ExportTracePartialSuccess{RejectedSpans: out.rejected, ErrorMessage: out.message}
	}
	return resp, nil
}

// noteGRPCSize updates the size gRPC calls reserve before their message
// is read: it follows a larger request at once and a smaller one slowly,
// so a burst of large requests after small ones overshoots once at most.
func (s *Server) noteGRPCSize(n int64) {
	for {
		old := s.grpcSize.Load()
		next := max(n, old-(old-n)/16, minGRPCReserve)
		if next == old || s.grpcSize.CompareAndSwap(old, next) {
			return
		}
	}
}

// minGRPCReserve is the least a gRPC call reserves before its message is
// read: what its stream's flow-control window lets the sender push.
const minGRPCReserve = grpcStreamWindow

// grpcRefusal is a status with the refusal reason it counts as, when the
// code alone does not tell.
type grpcRefusal struct {
	st     *grpcstatus.Status
	reason string
}

func (e *grpcRefusal) Error() string                  { return e.st.Message() }
func (e *grpcRefusal) GRPCStatus() *grpcstatus.Status { return e.st }

// grpcError maps an export failure to the OTLP retryable split:
// InvalidArgument for bad input (not retried), Unavailable with a RetryInfo
// delay when busy (retried after the delay).
func (s *Server) grpcError(err error) error {
	var in *inputError
	switch {
	case errors.As(err, &in):
		return grpcstatus.Error(codes.InvalidArgument, in.Error())
	case retryable(err):
		st := grpcstatus.New(codes.Unavailable, busyMessage(err))
		if d, derr := st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(s.cfg.RetryAfter)}); derr == nil {
			st = d
		}
		return &grpcRefusal{st, busyReason(err)}
	}
	return grpcstatus.Error(codes.Internal, err.Error())
}

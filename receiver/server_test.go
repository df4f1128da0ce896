package receiver

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/nemo-gym/gymtrace/model"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	grpcstatus "google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// startServer starts a store and a Server on loopback port 0 and stops both
// when the test ends.
func startServer(t testing.TB, cfg Config, opts model.Options) (*Server, *model.Store) {
	t.Helper()
	st := model.NewStore(opts)
	cfg.Store = st
	if cfg.GRPCAddr == "" {
		cfg.GRPCAddr = "127.0.0.1:0"
	}
	if cfg.HTTPAddr == "" {
		cfg.HTTPAddr = "127.0.0.1:0"
	}
	srv, err := NewServer(cfg)
	if err != nil {
		t.Fatalf("NewServer: %v", err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		st.Close()
	})
	return srv, st
}

// rawClientCodec sends pre-encoded request bytes and parses responses.
type rawClientCodec struct{}

func (rawClientCodec) Name() string { return "proto" }

func (rawClientCodec) Marshal(v any) (mem.BufferSlice, error) {
	if r, ok := v.(*rawRequest); ok {
		return mem.BufferSlice{mem.SliceBuffer(r.b)}, nil
	}
	b, err := proto.Marshal(v.(proto.Message))
	return mem.BufferSlice{mem.SliceBuffer(b)}, err
}

func (rawClientCodec) Unmarshal(data mem.BufferSlice, v any) error {
	return proto.Unmarshal(data.Materialize(), v.(proto.Message))
}

// dialRaw opens a gRPC client that sends raw request bytes.
func dialRaw(t testing.TB, addr string) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient(addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodecV2(rawClientCodec{})))
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

const traceExport = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"

// renderTrees prints every rollout's fragments as indented trees, rollouts
// by id and children by name then span id, so the text does not depend on
// arrival order. Each line: service, kind, name.
func renderTrees(s *model.Snapshot) string {
	var blocks []string
	for _, r := range s.Rollouts {
		var b strings.Builder
		fmt.Fprintf(&b, "rollout %s fragments=%d spans=%d\n", r.ID, len(r.Fragments), r.Spans)
		frags := make([]string, 0, len(r.Fragments))
		for _, f := range r.Fragments {
			frags = append(frags, renderFragment(s, f))
		}
		sort.Strings(frags)
		b.WriteString(strings.Join(frags, ""))
		blocks = append(blocks, b.String())
	}
	for _, j := range s.Jobs {
		blocks = append(blocks, "job "+renderFragment(s, j))
	}
	sort.Strings(blocks)
	return strings.Join(blocks, "")
}

func renderFragment(s *model.Snapshot, f *model.Fragment) string {
	kids := map[int32][]int{}
	for i, sp := range f.Spans {
		if i > 0 {
			kids[sp.Parent] = append(kids[sp.Parent], i)
		}
	}
	var b strings.Builder
	var walk func(i, depth int)
	walk = func(i, depth int) {
		sp := &f.Spans[i]
		fmt.Fprintf(&b, "%s%s %s %s\n", strings.Repeat("  ", depth+1), s.ServiceName(sp.Resource), sp.Kind, s.Str(sp.Name))
		ks := kids[int32(i)]
		sort.Slice(ks, func(x, y int) bool {
			a, c := &f.Spans[ks[x]], &f.Spans[ks[y]]
			if s.Str(a.Name) != s.Str(c.Name) {
				return s.Str(a.Name) < s.Str(c.Name)
			}
			return a.SpanID.String() < c.SpanID.String()
		})
		for _, k := range ks {
			walk(k, depth+1)
		}
	}
	walk(0, 0)
	return b.String()
}

// storedSpan is what the tests compare of a stored span.
type storedSpan struct {
	Trace   model.TraceID
	Parent  model.SpanID
	Name    string
	Service string
	Kind    model.Kind
}

// storedSpans indexes every stored span by id, with the parent id its
// fragment gives it (Fragment.ParentID), and checks that each fragment's
// parent indexes agree with those ids.
func storedSpans(t *testing.T, s *model.Snapshot) map[model.SpanID]storedSpan {
	t.Helper()
	out := map[model.SpanID]storedSpan{}
	add := func(f *model.Fragment) {
		for i, sp := range f.Spans {
			parent := f.ParentID(i)
			if sp.Parent >= 0 {
				if p := f.Spans[sp.Parent]; p.SpanID != parent {
					t.Errorf("span %s %q: parent index points at %s, want %s", sp.SpanID, s.Str(sp.Name), p.SpanID, parent)
				}
			} else if i > 0 {
				t.Errorf("span %s %q: inside a fragment with no parent index", sp.SpanID, s.Str(sp.Name))
			}
			if _, dup := out[sp.SpanID]; dup {
				t.Errorf("span %s stored twice", sp.SpanID)
			}
			out[sp.SpanID] = storedSpan{f.TraceID, parent, s.Str(sp.Name), s.ServiceName(sp.Resource), sp.Kind}
		}
	}
	for _, r := range s.Rollouts {
		for _, f := range r.Fragments {
			add(f)
		}
	}
	for _, j := range s.Jobs {
		add(j)
	}
	return out
}

func TestNewServerRefusesExposedAddress(t *testing.T) {
	st := model.NewStore(model.Options{})
	defer st.Close()
	tests := []struct {
		name     string
		cfg      Config
		wantErr  string // "" = accepted
		exposing string
	}{
		{name: "loopback defaults", cfg: Config{}},
		{name: "localhost", cfg: Config{GRPCAddr: "localhost:0", HTTPAddr: "127.0.0.2:0"}},
		{name: "ipv6 loopback", cfg: Config{GRPCAddr: "[::1]:0", HTTPAddr: Off}},
		{name: "all interfaces", cfg: Config{GRPCAddr: ":4317"}, wantErr: `:4317 is not a loopback address`},
		{name: "wildcard http", cfg: Config{HTTPAddr: "0.0.0.0:4318"}, wantErr: `0.0.0.0:4318 is not a loopback address`},
		{name: "lan address", cfg: Config{GRPCAddr: "192.168.1.5:4317"}, wantErr: "192.168.1.5:4317 is not a loopback address"},
		{name: "token allows", cfg: Config{GRPCAddr: "0.0.0.0:4317", AuthToken: "s3cret"}},
		{name: "insecure allows", cfg: Config{GRPCAddr: "0.0.0.0:4317", Insecure: true}},
		{name: "both off", cfg: Config{GRPCAddr: Off, HTTPAddr: Off}, wantErr: "both transports are off"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			cfg.Store = st
			_, err := NewServer(cfg)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("NewServer(%+v) = %v, want success", tt.cfg, err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("NewServer(%+v) = %v, want error containing %q", tt.cfg, err, tt.wantErr)
			}
		})
	}
}

func TestIsLoopback(t *testing.T) {
	tests := []struct {
		addr string
		want bool
	}{
		{"127.0.0.1:4317", true},
		{"127.9.9.9:1", true},
		{"[::1]:4318", true},
		{"localhost:4317", true},
		{"LOCALHOST:1", true},
		{":4317", false},
		{"0.0.0.0:4317", false},
		{"[::]:4317", false},
		{"10.0.0.1:4317", false},
		{"example.com:4317", false},
	}
	for _, tt := range tests {
		if got := IsLoopback(tt.addr); got != tt.want {
			t.Errorf("IsLoopback(%q) = %v, want %v", tt.addr, got, tt.want)
		}
	}
}

func TestAuthorizer(t *testing.T) {
	a := newAuthorizer("tok-123")
	tests := []struct {
		header string
		want   bool
	}{
		{"Bearer tok-123", true},
		{"bearer tok-123", true},
		{"Bearer tok-124", false},
		{"Bearer tok-1234", false},
		{"Bearer ", false},
		{"tok-123", false},
		{"", false},
		{"Basic tok-123", false},
	}
	for _, tt := range tests {
		if got := a.allow(tt.header); got != tt.want {
			t.Errorf("allow(%q) = %v, want %v", tt.header, got, tt.want)
		}
	}
	if !newAuthorizer("").allow("") {
		t.Error("no token: allow(\"\") = false, want true")
	}
}

// TestShutdownLeavesNoGoroutines serves real requests on both transports,
// shuts down, and waits for the goroutine count to return to where it was.
func TestShutdownLeavesNoGoroutines(t *testing.T) {
	settle := func(limit int) int {
		n := runtime.NumGoroutine()
		for deadline := time.Now().Add(5 * time.Second); n > limit && time.Now().Before(deadline); n = runtime.NumGoroutine() {
			time.Sleep(20 * time.Millisecond)
		}
		return n
	}
	before := runtime.NumGoroutine()
	func() {
		st := model.NewStore(model.Options{})
		defer st.Close()
		var rec strings.Builder
		srv, err := NewServer(Config{Store: st, GRPCAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0", Record: &rec})
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		ga, ha := srv.Addrs()
		body := encodeRequest(t, testRequest(2))
		cc, err := grpc.NewClient(ga, grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithDefaultCallOptions(grpc.ForceCodecV2(rawClientCodec{})))
		if err != nil {
			t.Fatal(err)
		}
		if err := cc.Invoke(context.Background(), traceExport, &rawRequest{b: body}, new(coltrace.ExportTraceServiceResponse)); err != nil {
			t.Fatalf("gRPC export: %v", err)
		}
		code, _ := postHTTP(t, ha, "/v1/traces", mediaProto, "", body)
		if code != 200 {
			t.Fatalf("HTTP export: status %d", code)
		}
		cc.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
		if rec.Len() == 0 {
			t.Error("record is empty after Shutdown")
		}
	}()
	httpClient.CloseIdleConnections()
	if after := settle(before); after > before {
		buf := make([]byte, 1<<20)
		n := runtime.Stack(buf, true)
		t.Fatalf("goroutines: %d before, %d after Shutdown\n%s", before, after, buf[:n])
	}
}

// TestGRPCStatusCodes checks what each failure looks like to a gRPC sender:
// the code decides whether OTLP exporters retry.
func TestGRPCStatusCodes(t *testing.T) {
	const token = "grpc-tok"
	srv, st := startServer(t, Config{AuthToken: token, MaxRecvBytes: 32 << 10}, model.Options{})
	ga, _ := srv.Addrs()
	cc := dialRaw(t, ga)
	good := encodeRequest(t, testRequest(3))
	partial := testRequest(3)
	partial.ResourceSpans[0].ScopeSpans[0].Spans[1].TraceId = []byte{1}
	bomb := make([]byte, 1<<20)
	tests := []struct {
		name         string
		body         []byte
		auth         string
		gzip         bool
		method       string
		wantCode     codes.Code
		wantMsg      string
		wantRejected int64
	}{
		{name: "ok", body: good, wantCode: codes.OK},
		{name: "ok gzip", body: good, gzip: true, wantCode: codes.OK},
		{name: "partial success", body: encodeRequest(t, partial), wantCode: codes.OK, wantRejected: 1},
		{name: "truncated protobuf", body: good[:len(good)-3], wantCode: codes.InvalidArgument, wantMsg: "truncated"},
		{name: "oversized", body: bytes.Repeat([]byte{0x0a, 0}, 20<<10), wantCode: codes.ResourceExhausted, wantMsg: "larger than max"},
		{name: "gzip bomb", body: bomb, gzip: true, wantCode: codes.ResourceExhausted, wantMsg: "after decompression larger than max"},
		{name: "missing token", body: good, auth: "-", wantCode: codes.Unauthenticated, wantMsg: "missing or wrong bearer token"},
		{name: "wrong token", body: good, auth: "Bearer nope", wantCode: codes.Unauthenticated},
		{name: "metrics truncated", method: "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export", body: []byte{0x0a, 0x10}, wantCode: codes.InvalidArgument},
		{name: "logs empty", method: "/opentelemetry.proto.collector.logs.v1.LogsService/Export", body: nil, wantCode: codes.OK},
		{name: "unknown service", method: "/opentelemetry.proto.collector.entities.v1development.EntitiesService/Export", body: nil, wantCode: codes.Unimplemented},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			auth := "Bearer " + token
			if tt.auth == "-" {
				auth = ""
			} else if tt.auth != "" {
				auth = tt.auth
			}
			ctx := context.Background()
			if auth != "" {
				ctx = metadata.AppendToOutgoingContext(ctx, "authorization", auth)
			}
			var opts []grpc.CallOption
			if tt.gzip {
				opts = append(opts, grpc.UseCompressor("gzip"))
			}
			method := tt.method
			if method == "" {
				method = traceExport
			}
			var resp coltrace.ExportTraceServiceResponse
			err := cc.Invoke(ctx, method, &rawRequest{b: tt.body}, &resp, opts...)
			s := grpcstatus.Convert(err)
			if s.Code() != tt.wantCode || !strings.Contains(s.Message(), tt.wantMsg) {
				t.Fatalf("Export = %v %q, want %v containing %q", s.Code(), s.Message(), tt.wantCode, tt.wantMsg)
			}
			if got := resp.GetPartialSuccess().GetRejectedSpans(); got != tt.wantRejected {
				t.Errorf("rejected_spans = %d, want %d (%q)", got, tt.wantRejected, resp.GetPartialSuccess().GetErrorMessage())
			}
		})
	}
	// Unavailable with a RetryInfo delay once the store no longer accepts.
	st.Close()
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+token)
	err := cc.Invoke(ctx, traceExport, &rawRequest{b: good}, new(coltrace.ExportTraceServiceResponse))
	s := grpcstatus.Convert(err)
	if s.Code() != codes.Unavailable {
		t.Fatalf("export to a closed store = %v %q, want Unavailable", s.Code(), s.Message())
	}
	var delay time.Duration
	for _, d := range s.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok {
			delay = ri.GetRetryDelay().AsDuration()
		}
	}
	if delay != DefaultRetryAfter {
		t.Errorf("RetryInfo delay = %v, want %v", delay, DefaultRetryAfter)
	}
}

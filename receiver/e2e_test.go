package receiver

import (
	"context"
	"fmt"
	"io"
	"math/rand"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nemo-gym/gymtrace/model"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
)

// transport says how a test exporter reaches the server.
type transport struct {
	name     string
	grpc     bool
	gzip     bool
	json     bool
	batchMax int // spans per export request; 0 = SDK default
}

var transports = []transport{
	{name: "grpc", grpc: true},
	{name: "grpc-gzip", grpc: true, gzip: true},
	{name: "http-protobuf", batchMax: 16},
	{name: "http-protobuf-gzip", gzip: true},
	{name: "http-json", json: true, batchMax: 16},
	{name: "http-json-gzip", json: true, gzip: true},
}

// fastRetry makes exporters retry within milliseconds, so refusals cost the
// tests little time. The server's RetryInfo/Retry-After still applies.
var fastRetry = struct {
	grpc otlptracegrpc.RetryConfig
	http otlptracehttp.RetryConfig
}{
	otlptracegrpc.RetryConfig{Enabled: true, InitialInterval: 5 * time.Millisecond, MaxInterval: 50 * time.Millisecond, MaxElapsedTime: 2 * time.Minute},
	otlptracehttp.RetryConfig{Enabled: true, InitialInterval: 5 * time.Millisecond, MaxInterval: 50 * time.Millisecond, MaxElapsedTime: 2 * time.Minute},
}

// newExporter builds a real OTel SDK OTLP exporter aimed at srv.
func newExporter(t testing.TB, srv *Server, tr transport, headers map[string]string) sdktrace.SpanExporter {
	t.Helper()
	ga, ha := srv.Addrs()
	return newExporterTo(t, ga, ha, tr, headers)
}

func newExporterTo(t testing.TB, ga, ha string, tr transport, headers map[string]string) sdktrace.SpanExporter {
	t.Helper()
	ctx := context.Background()
	var (
		exp sdktrace.SpanExporter
		err error
	)
	if tr.grpc {
		opts := []otlptracegrpc.Option{otlptracegrpc.WithEndpoint(ga), otlptracegrpc.WithInsecure(),
			otlptracegrpc.WithRetry(fastRetry.grpc), otlptracegrpc.WithHeaders(headers)}
		if tr.gzip {
			opts = append(opts, otlptracegrpc.WithCompressor("gzip"))
		}
		exp, err = otlptracegrpc.New(ctx, opts...)
	} else {
		opts := []otlptracehttp.Option{otlptracehttp.WithEndpoint(ha), otlptracehttp.WithInsecure(),
			otlptracehttp.WithRetry(fastRetry.http), otlptracehttp.WithHeaders(headers),
			otlptracehttp.WithHTTPClient(&http.Client{Transport: &http.Transport{}})}
		if tr.gzip {
			opts = append(opts, otlptracehttp.WithCompression(otlptracehttp.GzipCompression))
		}
		if tr.json {
			opts = append(opts, otlptracehttp.WithEncoding(otlptracehttp.EncodingJSON))
		}
		exp, err = otlptracehttp.New(ctx, opts...)
	}
	if err != nil {
		t.Fatalf("new %s exporter: %v", tr.name, err)
	}
	return exp
}

// proc is one simulated process: its own resource, provider, exporter and
// an in-memory recorder of everything it ended (the ground truth).
type proc struct {
	tp     *sdktrace.TracerProvider
	tracer trace.Tracer
	rec    *tracetest.SpanRecorder
}

func newProc(t testing.TB, service string, exp sdktrace.SpanExporter, batchMax int, record bool) *proc {
	t.Helper()
	res := resource.NewSchemaless(attribute.String("service.name", service),
		attribute.String("nemo.gym.server.name", strings.TrimPrefix(service, "nemo-gym/")))
	bopts := []sdktrace.BatchSpanProcessorOption{sdktrace.WithBlocking(), sdktrace.WithBatchTimeout(20 * time.Millisecond)}
	if batchMax > 0 {
		bopts = append(bopts, sdktrace.WithMaxExportBatchSize(batchMax))
	}
	opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res), sdktrace.WithBatcher(exp, bopts...)}
	p := &proc{}
	if record {
		p.rec = tracetest.NewSpanRecorder()
		opts = append(opts, sdktrace.WithSpanProcessor(p.rec))
	}
	p.tp = sdktrace.NewTracerProvider(opts...)
	p.tracer = p.tp.Tracer("gymtrace-test")
	return p
}

// fleet is a driver, an agent and a model process that call each other
// with W3C traceparent propagation, as NeMo Gym's servers do.
type fleet struct {
	driver, agent, model *proc
	prop                 propagation.TextMapPropagator
	sent                 atomic.Int64
}

func newFleet(t testing.TB, mk func() sdktrace.SpanExporter, batchMax int, record bool) *fleet {
	t.Helper()
	return &fleet{
		driver: newProc(t, "nemo-gym/rollout_collection", mk(), batchMax, record),
		agent:  newProc(t, "nemo-gym/simple_agent", mk(), batchMax, record),
		model:  newProc(t, "nemo-gym/policy_model", mk(), batchMax, record),
		prop:   propagation.TraceContext{},
	}
}

// call makes a CLIENT span in from, carries its context in a traceparent
// header, and runs handler under a SERVER span in to, as an HTTP hop does.
func (f *fleet) call(ctx context.Context, from, to *proc, route string, handler func(context.Context)) {
	ctx, client := from.tracer.Start(ctx, "HTTP POST", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("url.full", "http://127.0.0.1:8000"+route)))
	hdr := propagation.HeaderCarrier(http.Header{})
	f.prop.Inject(ctx, hdr)
	sctx := f.prop.Extract(context.Background(), hdr)
	sctx, server := to.tracer.Start(sctx, "POST "+route, trace.WithSpanKind(trace.SpanKindServer))
	handler(sctx)
	server.End()
	client.End()
	f.sent.Add(2)
}

// rollout emits one rollout of 3+3*turns spans under parent.
func (f *fleet) rollout(ctx context.Context, id string, turns int) {
	f.call(ctx, f.driver, f.agent, "/ng-rollout/"+id+"/run", func(ctx context.Context) {
		ctx, r := f.agent.tracer.Start(ctx, "gym.rollout", trace.WithAttributes(attribute.String(model.RolloutIDKey, id)))
		for i := 0; i < turns; i++ {
			f.call(ctx, f.agent, f.model, "/ng-rollout/"+id+"/v1/responses", func(ctx context.Context) {
				_, m := f.model.tracer.Start(ctx, "gym.model.responses", trace.WithAttributes(
					attribute.String(model.RolloutIDKey, id), attribute.Int("turn", i)))
				m.End()
				f.sent.Add(1)
			})
		}
		r.End()
		f.sent.Add(1)
	})
}

// job emits a gym.job span over n rollouts.
func (f *fleet) job(ctx context.Context, prefix string, n, turns int) {
	ctx, j := f.driver.tracer.Start(ctx, model.JobSpanName)
	for i := 0; i < n; i++ {
		f.rollout(ctx, fmt.Sprintf("%s-%04d", prefix, i), turns)
	}
	j.End()
	f.sent.Add(1)
}

// shutdown flushes every exporter: when it returns, the server has
// acknowledged every span (or the exporters gave up, which the test sees).
func (f *fleet) shutdown(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, p := range []*proc{f.driver, f.agent, f.model} {
		if err := p.tp.Shutdown(ctx); err != nil {
			t.Errorf("provider shutdown: %v", err)
		}
	}
}

// truth is what the fleet ended, by span id.
func (f *fleet) truth() map[model.SpanID]storedSpan {
	out := map[model.SpanID]storedSpan{}
	for _, p := range []*proc{f.driver, f.agent, f.model} {
		for _, s := range p.rec.Ended() {
			var svc string
			for _, kv := range s.Resource().Attributes() {
				if kv.Key == "service.name" {
					svc = kv.Value.AsString()
				}
			}
			out[model.SpanID(s.SpanContext().SpanID())] = storedSpan{
				Trace:   model.TraceID(s.SpanContext().TraceID()),
				Parent:  model.SpanID(s.Parent().SpanID()),
				Name:    s.Name(),
				Service: svc,
				Kind:    model.Kind(s.SpanKind()),
			}
		}
	}
	return out
}

// compareTruth fails the test unless the store holds exactly the spans
// sent, with the same parents, names, services and kinds.
func compareTruth(t *testing.T, want, got map[model.SpanID]storedSpan) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("stored %d spans, sent %d", len(got), len(want))
	}
	bad := 0
	for id, w := range want {
		g, ok := got[id]
		switch {
		case !ok:
			t.Errorf("span %s %q (%s) was sent but not stored", id, w.Name, w.Service)
		case g != w:
			t.Errorf("span %s: stored %+v, sent %+v", id, g, w)
		default:
			continue
		}
		if bad++; bad > 10 {
			t.Fatal("too many differences")
		}
	}
}

// TestEndToEndSDKExporters sends a job of rollouts from three processes
// through each transport with the real OTel SDK exporters and checks that
// every span arrives once, with the parent it was sent with, and that each
// rollout is one connected tree.
func TestEndToEndSDKExporters(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			srv, st := startServer(t, Config{}, model.Options{})
			f := newFleet(t, func() sdktrace.SpanExporter { return newExporter(t, srv, tr, nil) }, tr.batchMax, true)
			f.job(context.Background(), "r", 5, 2)
			f.shutdown(t)
			st.Sync()
			snap := st.Snapshot()
			want := f.truth()
			if len(want) != 5*9+1 {
				t.Fatalf("ground truth has %d spans, want %d", len(want), 5*9+1)
			}
			compareTruth(t, want, storedSpans(t, snap))
			if snap.Stats.Rollouts != 5 || len(snap.Jobs) != 1 {
				t.Errorf("rollouts=%d jobs=%d, want 5 and 1", snap.Stats.Rollouts, len(snap.Jobs))
			}
			for _, r := range snap.Rollouts {
				if len(r.Fragments) != 1 || r.Spans != 9 || r.Fragments[0].Orphan() {
					t.Errorf("rollout %s: %d fragments, %d spans, orphan=%v; want one joined fragment of 9",
						r.ID, len(r.Fragments), r.Spans, r.Fragments[0].Orphan())
				}
			}
			services := map[string]int64{}
			for id, n := range snap.Services {
				services[snap.ServiceName(model.ResourceID(id))] += n
			}
			wantSvc := map[string]int64{"nemo-gym/rollout_collection": 6, "nemo-gym/simple_agent": 5 * 4, "nemo-gym/policy_model": 5 * 4}
			for k, v := range wantSvc {
				if services[k] != v {
					t.Errorf("service %s: %d spans, want %d (all: %v)", k, services[k], v, services)
				}
			}
		})
	}
}

// captureRequests records the raw protobuf export requests SDK exporters
// send, answering each with success.
func captureRequests(t *testing.T, batchMax int, emit func(f *fleet)) ([][]byte, *fleet) {
	t.Helper()
	var (
		mu   sync.Mutex
		reqs [][]byte
	)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		reqs = append(reqs, b)
		mu.Unlock()
		w.Header().Set("Content-Type", mediaProto)
	})}
	go hs.Serve(ln)
	defer hs.Close()
	f := newFleet(t, func() sdktrace.SpanExporter {
		return newExporterTo(t, "", ln.Addr().String(), transport{name: "capture", batchMax: batchMax}, nil)
	}, batchMax, false)
	emit(f)
	f.shutdown(t)
	mu.Lock()
	defer mu.Unlock()
	return reqs, f
}

// TestShuffledArrival replays captured requests in random orders, split
// over gRPC and HTTP, and checks that the trees come out identical to an
// in-order replay: children arriving before parents are re-linked, never lost.
func TestShuffledArrival(t *testing.T) {
	reqs, f := captureRequests(t, 5, func(f *fleet) {
		f.job(context.Background(), "s", 6, 3)
		f.rollout(context.Background(), "lone", 2) // a rollout with no job
	})
	if len(reqs) < 10 {
		t.Fatalf("captured %d requests, want many small ones", len(reqs))
	}
	var want string
	for seed := int64(0); seed < 6; seed++ {
		order := append([][]byte(nil), reqs...)
		if seed > 0 {
			rng := rand.New(rand.NewSource(seed))
			rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		}
		srv, st := startServer(t, Config{}, model.Options{})
		ga, ha := srv.Addrs()
		cc := dialRaw(t, ga)
		for i, b := range order {
			if i%2 == 0 {
				if err := cc.Invoke(context.Background(), traceExport, &rawRequest{b: b}, new(coltrace.ExportTraceServiceResponse)); err != nil {
					t.Fatalf("seed %d: gRPC replay of request %d: %v", seed, i, err)
				}
			} else if code, body := postHTTP(t, ha, "/v1/traces", mediaProto, "", b); code != 200 {
				t.Fatalf("seed %d: HTTP replay of request %d: %d %q", seed, i, code, body)
			}
		}
		st.Sync()
		snap := st.Snapshot()
		got := renderTrees(snap)
		if n := int64(snap.Stats.Stored); n != f.sent.Load() {
			t.Fatalf("seed %d: stored %d spans, sent %d", seed, n, f.sent.Load())
		}
		if seed == 0 {
			want = got
			if strings.Count(want, "rollout ") != 7 || strings.Contains(want, "fragments=2") {
				t.Fatalf("in-order replay is not 7 joined rollouts:\n%s", want)
			}
			continue
		}
		if got != want {
			t.Fatalf("seed %d: trees differ from in-order replay\ngot:\n%s\nwant:\n%s", seed, got, want)
		}
	}
}

// TestTinyQueueRefusesThenExportersRetry stalls the store's writer (through
// its injected clock) behind a one-batch queue, so exports are refused with
// Unavailable/503 until it is released; the SDK exporters retry and in the
// end every span sent is stored once.
func TestTinyQueueRefusesThenExportersRetry(t *testing.T) {
	var stalled atomic.Bool
	release := make(chan struct{})
	clock := func() time.Time {
		if stalled.Load() {
			<-release
		}
		return time.Now()
	}
	srv, st := startServer(t, Config{RetryAfter: 20 * time.Millisecond}, model.Options{QueueLen: 1, Now: clock})
	stalled.Store(true)
	// One batch for the writer to block on; the next one fills the queue.
	for i := 0; i < 2; i++ {
		l := model.NewLocal(st.Interner())
		b, _, err := DecodeProto(l, encodeRequest(t, testRequest(1)), Limits{})
		if err != nil {
			t.Fatal(err)
		}
		b.Spans[0].SpanID[0] = 0xf0 + byte(i)
		for st.Submit(b) != nil {
			time.Sleep(time.Millisecond) // the writer has not taken the first batch yet
		}
	}
	var fleets []*fleet
	var wg sync.WaitGroup
	for _, tr := range []transport{{name: "grpc", grpc: true}, {name: "http", batchMax: 8}, {name: "http-json", json: true}} {
		f := newFleet(t, func() sdktrace.SpanExporter { return newExporter(t, srv, tr, nil) }, tr.batchMax, true)
		fleets = append(fleets, f)
		wg.Add(1)
		go func() {
			defer wg.Done()
			f.job(context.Background(), tr.name, 4, 2)
			f.shutdown(t)
		}()
	}
	deadline := time.Now().Add(30 * time.Second)
	for srv.Stats().Failed < 3 {
		if time.Now().After(deadline) {
			t.Fatal("no export was refused while the writer was stalled")
		}
		time.Sleep(5 * time.Millisecond)
	}
	stalled.Store(false)
	close(release)
	wg.Wait()
	st.Sync()
	snap := st.Snapshot()
	want := map[model.SpanID]storedSpan{}
	for _, f := range fleets {
		for id, s := range f.truth() {
			want[id] = s
		}
	}
	got := storedSpans(t, snap)
	for i := byte(0); i < 2; i++ { // the two stall batches
		delete(got, model.SpanID{0xf0 + i, 0, 0, 0, 0, 0, 0, 1})
	}
	compareTruth(t, want, got)
	if snap.Stats.Refused == 0 {
		t.Error("Stats.Refused = 0, want the refused spans counted")
	}
	if snap.Stats.Duplicates != 0 {
		t.Errorf("Stats.Duplicates = %d: a refused batch was stored anyway", snap.Stats.Duplicates)
	}
	t.Logf("refused %d spans in %d failed requests, then stored all %d", snap.Stats.Refused, srv.Stats().Failed, len(want))
}

// TestConcurrentExporters runs 8 SDK exporters at once over both transports
// and checks received == sent: every span stored once, every rollout whole.
func TestConcurrentExporters(t *testing.T) {
	total := 200_000
	if testing.Short() {
		total = 20_000
	}
	const workers, perRollout = 8, 10
	rolloutsPer := total / workers / perRollout
	srv, st := startServer(t, Config{}, model.Options{})
	trs := []transport{{grpc: true}, {}, {grpc: true, gzip: true}, {json: true}}
	var sent atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < workers; w++ {
		tr := trs[w%len(trs)]
		p := newProc(t, fmt.Sprintf("nemo-gym/worker_%d", w), newExporter(t, srv, tr, nil), 0, false)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < rolloutsPer; i++ {
				id := fmt.Sprintf("w%d-%05d", w, i)
				ctx, r := p.tracer.Start(context.Background(), "gym.rollout", trace.WithAttributes(attribute.String(model.RolloutIDKey, id)))
				for j := 0; j < perRollout-1; j++ {
					_, c := p.tracer.Start(ctx, "gym.model.responses")
					c.End()
				}
				r.End()
				sent.Add(perRollout)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			if err := p.tp.Shutdown(ctx); err != nil {
				t.Errorf("worker %d: %v", w, err)
			}
		}()
	}
	wg.Wait()
	st.Sync()
	elapsed := time.Since(start)
	snap := st.Snapshot()
	n := sent.Load()
	if snap.Stats.Accepted != n || int64(snap.Stats.Stored) != n || snap.Stats.Duplicates != 0 {
		t.Fatalf("sent %d spans; accepted %d, stored %d, duplicates %d", n, snap.Stats.Accepted, snap.Stats.Stored, snap.Stats.Duplicates)
	}
	if snap.Stats.Rollouts != workers*rolloutsPer {
		t.Fatalf("rollouts = %d, want %d", snap.Stats.Rollouts, workers*rolloutsPer)
	}
	for _, r := range snap.Rollouts {
		if len(r.Fragments) != 1 || r.Spans != perRollout {
			t.Fatalf("rollout %s: %d fragments, %d spans; want 1 and %d", r.ID, len(r.Fragments), r.Spans, perRollout)
		}
	}
	t.Logf("%d spans from %d exporters in %v (%.0f spans/s, refused and retried %d)",
		n, workers, elapsed.Round(time.Millisecond), float64(n)/elapsed.Seconds(), snap.Stats.Refused)
}

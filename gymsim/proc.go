package gymsim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/nemo-gym/gymtrace/gate"
)

// Gym's version as reported in nemo.gym.version.
const gymVersion = "0.2.0"

// The four simulated processes.
const (
	driverName    = "rollout_collection"
	agentName     = "simple_agent"
	modelName     = "policy_model"
	resourcesName = "example_tools"
)

var serverTypes = map[string]string{
	driverName:    "rollout_collection",
	agentName:     "responses_api_agents",
	modelName:     "responses_api_models",
	resourcesName: "resources_servers",
}

// resourceOrder is the order Python's SDK prints the resource attributes in.
var resourceOrder = []attribute.Key{
	"telemetry.sdk.language", "telemetry.sdk.name", "telemetry.sdk.version",
	"service.instance.id", "service.name", "nemo.gym.service_group",
	"nemo.gym.server.name", "nemo.gym.server.type", "nemo.gym.version", "nemo.run.id",
}

// noSpan stands in for a span whose group is off: every method is a no-op.
var noSpan = trace.SpanFromContext(context.Background())

// traceContext is the W3C propagator Gym configures.
var traceContext = propagation.TraceContext{}

// proc is one simulated process: its TracerProvider, its HTTP server (not
// for the driver) and its HTTP client.
type proc struct {
	f      *Fleet
	name   string
	spec   gate.Set // the span_groups this process reads from its config
	tp     *sdktrace.TracerProvider
	tracer trace.Tracer
	client *http.Client
	ln     net.Listener
	srv    *http.Server
	base   string // http://host:port
	routes map[string]handler
	// sem is the agent's concurrency semaphore (nil elsewhere); mp and
	// queueWait exist only with concurrency on and an OTLP exporter.
	sem       semaphore
	mp        *sdkmetric.MeterProvider
	queueWait metric.Float64Histogram
}

// request is what a handler gets: the context (carrying the SERVER span when
// server is on), the rollout id from the /ng-rollout/ path, and the body.
type request struct {
	ctx  context.Context
	rid  string
	body []byte
}

// response is what a handler answers. exc is an exception that escaped the
// handler: the SERVER span records it.
type response struct {
	status int
	body   any
	exc    *pyException
}

type handler func(req request) response

// pyException is a Python exception as Gym's spans report it.
type pyException struct {
	typ     string // fully qualified, e.g. nemo_gym.sandbox.SandboxError
	message string
	file    string
}

func (e *pyException) short() string {
	t := e.typ
	if i := strings.LastIndexByte(t, '.'); i >= 0 {
		t = t[i+1:]
	}
	return t + ": " + e.message
}

// record adds the exception event and the ERROR status to sp, as the Python
// SDK does when an exception passes through a span.
func (e *pyException) record(sp trace.Span) {
	if !sp.IsRecording() {
		return
	}
	t := e.typ
	if i := strings.LastIndexByte(t, '.'); i >= 0 {
		t = t[i+1:]
	}
	stack := fmt.Sprintf("Traceback (most recent call last):\n  File %q, line 117, in handler\n    raise %s(...)\n%s: %s\n", e.file, t, e.typ, e.message)
	sp.AddEvent("exception", trace.WithAttributes(
		attribute.String("exception.type", e.typ),
		attribute.String("exception.message", e.message),
		attribute.String("exception.stacktrace", stack),
		attribute.String("exception.escaped", "False"),
	))
	sp.SetStatus(codes.Error, e.short())
}

func newProc(ctx context.Context, f *Fleet, name string, serve bool) (*proc, error) {
	p := &proc{f: f, name: name, spec: f.cfg.specOf(name), routes: map[string]handler{}}
	res := resource.NewWithAttributes("",
		attribute.String("telemetry.sdk.language", "go"),
		attribute.String("telemetry.sdk.name", "opentelemetry"),
		attribute.String("telemetry.sdk.version", otel.Version()),
		attribute.String("service.instance.id", instanceID(f.cfg.Seed, name)),
		attribute.String("service.name", "nemo-gym/"+name),
		attribute.String("nemo.gym.service_group", "nemo-gym"),
		attribute.String("nemo.gym.server.name", name),
		attribute.String("nemo.gym.server.type", serverTypes[name]),
		attribute.String("nemo.gym.version", gymVersion),
		attribute.String("nemo.run.id", f.cfg.RunID),
	)
	exp, err := f.newExporter(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s exporter: %w", name, err)
	}
	// Blocking: a full queue slows span ends down instead of dropping spans,
	// so the truth (recorded at span end) is exactly what was exported.
	bsp := []sdktrace.BatchSpanProcessorOption{sdktrace.WithMaxExportBatchSize(512), sdktrace.WithBlocking()}
	if f.cfg.BatchTimeout > 0 {
		bsp = append(bsp, sdktrace.WithBatchTimeout(f.cfg.BatchTimeout))
	}
	p.tp = sdktrace.NewTracerProvider(
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.AlwaysSample()),
		// The truth processor runs first so that a span is counted before
		// the batcher can export it.
		sdktrace.WithSpanProcessor(f.truth.processor("nemo-gym/"+name)),
		sdktrace.WithBatcher(exp, bsp...),
	)
	p.tracer = p.tp.Tracer("nemo_gym")
	if name == agentName {
		p.sem = make(semaphore, f.cfg.AgentSlots)
		if p.mp, p.queueWait, err = f.newMeterProvider(ctx, res, p.spec); err != nil {
			_ = p.tp.Shutdown(ctx)
			return nil, fmt.Errorf("%s metric exporter: %w", name, err)
		}
	}
	p.client = &http.Client{
		Timeout:   30 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true},
	}
	if serve {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("%s listen: %w", name, err)
		}
		p.ln = ln
		p.base = "http://" + ln.Addr().String()
		p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	}
	return p, nil
}

// instanceID is a uuid-shaped id derived from the seed and the server name.
func instanceID(seed int64, name string) string {
	h := fnv.New128a()
	fmt.Fprintf(h, "%d/%s", seed, name)
	b := h.Sum(nil)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func (p *proc) serve() {
	if p.srv != nil {
		go func() { _ = p.srv.Serve(p.ln) }()
	}
}

// on reports whether group g is enabled in this process's span_groups: the
// gate every span site, and the inject/extract decisions, check first.
func (p *proc) on(g gate.Group) bool { return p.spec.Has(g) }

// start starts a span of group g for rollout rid. Callers check p.on(g) first.
func (p *proc) start(ctx context.Context, g gate.Group, rid, name string, kind trace.SpanKind, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	ctx, sp := p.tracer.Start(ctx, name, trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
	p.f.truth.note(sp.SpanContext().SpanID(), g, rid)
	return ctx, sp
}

// ServeHTTP is the FastAPI app with its OpenTelemetry instrumentation: with
// server on it extracts traceparent and wraps the handler in a SERVER span
// with ASGI receive/send children; with server off it does neither, so the
// handler's spans start a new trace.
func (p *proc) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	rid := ""
	if rest, ok := strings.CutPrefix(path, "/ng-rollout/"); ok {
		if i := strings.IndexByte(rest, '/'); i > 0 {
			rid, path = rest[:i], rest[i:]
		}
	}
	h, ok := p.routes[path]
	if !ok || r.Method != http.MethodPost {
		http.NotFound(w, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	p.f.requests.Add(1)
	// The handler's context must not inherit the request's: a Python handler
	// only has the context the instrumentation gives it.
	ctx := context.Background()
	name := r.Method + " " + path
	srvSpan := noSpan
	// The truth knows the rollout of a /run call from its body; the spans
	// themselves carry no id there, as in Gym.
	truthRID := rid
	if truthRID == "" {
		var b struct {
			RolloutID string `json:"rollout_id"`
		}
		_ = json.Unmarshal(body, &b)
		truthRID = b.RolloutID
	}
	if p.on(gate.Server) {
		ctx = traceContext.Extract(ctx, propagation.HeaderCarrier(r.Header))
		host, port, _ := net.SplitHostPort(p.ln.Addr().String())
		peerIP, peerPort, _ := net.SplitHostPort(r.RemoteAddr)
		np, _ := strconv.Atoi(port)
		pp, _ := strconv.Atoi(peerPort)
		ctx, srvSpan = p.start(ctx, gate.Server, truthRID, name, trace.SpanKindServer,
			attribute.String("http.scheme", "http"),
			attribute.String("http.host", host+":"+port),
			attribute.Int("net.host.port", np),
			attribute.String("http.flavor", "1.1"),
			attribute.String("http.target", r.URL.RequestURI()),
			attribute.String("http.url", p.base+r.URL.RequestURI()),
			attribute.String("http.method", r.Method),
			attribute.String("http.server_name", host+":"+port),
			attribute.String("http.user_agent", r.UserAgent()),
			attribute.String("net.peer.ip", peerIP),
			attribute.Int("net.peer.port", pp),
			attribute.String("http.route", path),
		)
		_, rcv := p.start(ctx, gate.Server, truthRID, name+" http receive", trace.SpanKindInternal,
			attribute.String("asgi.event.type", "http.request"))
		rcv.End()
	}
	resp := h(request{ctx: ctx, rid: rid, body: body})
	out, _ := json.Marshal(resp.body)
	if p.on(gate.Server) {
		_, snd := p.start(ctx, gate.Server, truthRID, name+" http send", trace.SpanKindInternal,
			attribute.String("asgi.event.type", "http.response.start"),
			attribute.Int("http.status_code", resp.status))
		if resp.status >= 500 {
			snd.SetStatus(codes.Error, "")
		}
		snd.End()
		_, snd = p.start(ctx, gate.Server, truthRID, name+" http send", trace.SpanKindInternal,
			attribute.String("asgi.event.type", "http.response.body"))
		snd.End()
		srvSpan.SetAttributes(attribute.Int("http.status_code", resp.status))
		if resp.exc != nil {
			resp.exc.record(srvSpan)
		} else if resp.status >= 500 {
			srvSpan.SetStatus(codes.Error, "")
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(resp.status)
	_, _ = w.Write(out)
	srvSpan.End()
}

// post is Gym's one egress function: with http_client on it makes the CLIENT
// span and injects traceparent inside it; with it off, neither.
func (p *proc) post(ctx context.Context, url, rid string, body any) (int, []byte, error) {
	in, err := json.Marshal(body)
	if err != nil {
		return 0, nil, err
	}
	req, err := http.NewRequestWithContext(context.WithoutCancel(ctx), http.MethodPost, url, bytes.NewReader(in))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Python/3.11 aiohttp/3.12.13")
	sp := noSpan
	if p.on(gate.HTTPClient) {
		full := url
		if i := strings.IndexByte(full, '?'); i >= 0 {
			full = full[:i]
		}
		var cctx context.Context
		cctx, sp = p.start(ctx, gate.HTTPClient, rid, "HTTP POST", trace.SpanKindClient,
			attribute.String("http.request.method", http.MethodPost),
			attribute.String("url.full", full),
			attribute.String("nemo.gym.rollout.id", rid),
		)
		p.f.truth.noteCallee(sp.SpanContext().SpanID(), p.f.calleeOf(url))
		traceContext.Inject(cctx, propagation.HeaderCarrier(req.Header))
	}
	defer sp.End()
	resp, err := p.client.Do(req)
	if err != nil {
		if sp.IsRecording() {
			sp.SetStatus(codes.Error, err.Error())
		}
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if sp.IsRecording() {
		sp.SetAttributes(attribute.Int("http.response.status_code", resp.StatusCode))
		if resp.StatusCode >= 500 {
			sp.SetStatus(codes.Error, "")
		}
	}
	return resp.StatusCode, out, err
}

// calleeOf names the fleet process serving url; "" for any other host.
func (f *Fleet) calleeOf(url string) string {
	for _, p := range f.procs {
		if p.base != "" && strings.HasPrefix(url, p.base+"/") {
			return p.name
		}
	}
	return ""
}

// clientError is the exception aiohttp raises for an error answer.
func clientError(status int, url string) *pyException {
	return &pyException{
		typ:     "aiohttp.client_exceptions.ClientResponseError",
		message: fmt.Sprintf("%d, message='%s', url='%s'", status, http.StatusText(status), url),
		file:    "/opt/nemo_gym/nemo_gym/server_utils.py",
	}
}

// sleep simulates work; it returns early when the fleet stops.
func (p *proc) sleep(d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-p.f.stopping:
	}
}

func (p *proc) shutdownHTTP(ctx context.Context) error {
	if p.srv == nil {
		return nil
	}
	return p.srv.Shutdown(ctx)
}

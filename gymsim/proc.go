package gymsim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// The four processes, by role, and the server names of the three servers
// (the driver's name depends on the variant).
const (
	RoleDriver    = "driver"
	RoleAgent     = "agent"
	RoleModel     = "model"
	RoleResources = "resources"

	agentName     = "simple_agent"
	modelName     = "policy_model"
	resourcesName = "example_single_tool_call"
)

var serverTypes = map[string]string{
	RoleAgent:     "responses_api_agents",
	RoleModel:     "responses_api_models",
	RoleResources: "resources_servers",
}

// Instrumentation scopes, as Gym's processes name their tracers.
const (
	scopeClient  = "nemo.gym"
	scopeLens    = "nemo.lens.helpers"
	scopeFastAPI = "opentelemetry.instrumentation.fastapi"
	scopeAIOHTTP = "opentelemetry.instrumentation.aiohttp_client"
	// contribVersion is the version of the contrib instrumentations.
	contribVersion = "0.65b0"
	fastAPISchema  = "https://opentelemetry.io/schemas/1.11.0"
	// lensVersion is nemo-lens's version, which Gym reports as service.version.
	lensVersion = "0.2.0"
)

// rolloutHeader carries the fleet's own bookkeeping (the rollout a request
// belongs to) from caller to callee. No instrumentation records it.
const rolloutHeader = "X-Gymsim-Rollout"

// resourceOrder is the order Gym builds its resource in; the console
// exporter prints it so and the OTLP exporters send it so.
var resourceOrder = []attribute.Key{
	"telemetry.sdk.language", "telemetry.sdk.name", "telemetry.sdk.version",
	"service.instance.id", "service.name", "service.version", "dl.rank", "dl.world_size",
	"nemo.run.id", "nemo.gym.version", "nemo.gym.server.name", "nemo.gym.server.type",
	"nemo.gym.service_group", "nv.dl.rank", "nv.dl.world_size", "host.name", "process.pid",
}

// noSpan stands in for a span whose group is off: every method is a no-op.
var noSpan = trace.SpanFromContext(context.Background())

// traceContext is the W3C propagator Gym configures.
var traceContext = propagation.TraceContext{}

// proc is one simulated process: its TracerProvider and tracers, its HTTP
// server (not for the driver) and its HTTP client.
type proc struct {
	f     *Fleet
	role  string
	name  string // server name, e.g. simple_agent
	stype string // nemo.gym.server.type
	// res is what this process made of its span_groups; telemetry is
	// false when set-up raised or never ran (a standalone driver).
	res       Resolution
	telemetry bool

	tp                             *sdktrace.TracerProvider
	client, lens, fastapi, aiohttp trace.Tracer

	httpClient *http.Client
	ln         net.Listener
	srv        *http.Server
	base       string // http://host:port
	routes     map[string]handler

	// sem is the agent's concurrency semaphore (nil elsewhere).
	sem    semaphore
	meters *meters

	// The keep-alive carry-over: the span of the request this process
	// started last, and the draw of whether the next one inherits it.
	leakMu  sync.Mutex
	lastReq trace.SpanContext
	leakRng *rand.Rand
	// raceRng draws the disconnect races (Config.DisconnectRace).
	raceMu  sync.Mutex
	raceRng *rand.Rand
}

// request is what a handler gets: the context (carrying the request span
// when server is on), the rollout id from a /ng-rollout/ prefix, the
// fleet's rollout index (-1 for run-level traffic) and the body.
type request struct {
	ctx     context.Context
	rid     string
	rollout int
	body    []byte
}

// response is what a handler answers.
type response struct {
	status int
	body   any
}

type handler func(req request) response

// pyException is a Python exception as Gym's spans report it.
type pyException struct {
	typ     string // fully qualified, e.g. aiohttp.client_exceptions.ClientResponseError
	message string
	file    string
	line    int
	fn      string
	code    string
}

// record adds the exception event and the ERROR status with str(exc) to sp,
// as nemo-lens's managed span does when an exception passes through it.
func (e *pyException) record(sp trace.Span) {
	if !sp.IsRecording() {
		return
	}
	stack := fmt.Sprintf("Traceback (most recent call last):\n"+
		"  File \"/opt/venv/lib/python3/site-packages/nemo/lens/helpers.py\", line 131, in managed_span\n    yield span\n"+
		"  File \"/opt/gym/nemo_gym/telemetry/endpoints.py\", line 83, in wrapper\n    return await handler(*args, **kwargs)\n"+
		"           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"+
		"  File %q, line %d, in %s\n    %s\n%s: %s\n", e.file, e.line, e.fn, e.code, e.typ, e.message)
	sp.AddEvent("exception", trace.WithAttributes(
		attribute.String("exception.type", e.typ),
		attribute.String("exception.message", e.message),
		attribute.String("exception.stacktrace", stack),
		attribute.String("exception.escaped", "False"),
	))
	sp.SetStatus(codes.Error, e.message)
}

// clientResponseError is what aiohttp's raise_for_status raises.
func clientResponseError(status int, url string) *pyException {
	return &pyException{
		typ:     "aiohttp.client_exceptions.ClientResponseError",
		message: fmt.Sprintf("%d, message='%s', url=URL('%s')", status, http.StatusText(status), url),
		file:    "/opt/gym/nemo_gym/server_utils.py", line: 171, fn: "raise_for_status", code: "raise e",
	}
}

func newProc(ctx context.Context, f *Fleet, role, name, stype string, spec string, telemetry bool, serve bool) (*proc, error) {
	p := &proc{f: f, role: role, name: name, stype: stype, routes: map[string]handler{}}
	p.res = f.variant.Resolve(spec)
	p.telemetry = telemetry && p.res.On
	host, _ := os.Hostname()
	var nvdl []attribute.KeyValue
	if f.variant.NVDLResource {
		nvdl = []attribute.KeyValue{attribute.Int("nv.dl.rank", 0), attribute.Int("nv.dl.world_size", 1)}
	}
	res := resource.NewWithAttributes("", append(append([]attribute.KeyValue{
		attribute.String("telemetry.sdk.language", "go"),
		attribute.String("telemetry.sdk.name", "opentelemetry"),
		attribute.String("telemetry.sdk.version", otel.Version()),
		attribute.String("service.instance.id", f.cfg.RunID+"-rank0"),
		attribute.String("service.name", "nemo-gym/"+name),
		attribute.String("service.version", lensVersion),
		attribute.Int("dl.rank", 0),
		attribute.Int("dl.world_size", 1),
		attribute.String("nemo.run.id", f.cfg.RunID),
		attribute.String("nemo.gym.version", f.variant.GymVersion),
		attribute.String("nemo.gym.server.name", name),
		attribute.String("nemo.gym.server.type", stype),
		attribute.String("nemo.gym.service_group", "nemo-gym")},
		nvdl...),
		attribute.String("host.name", host),
		attribute.Int("process.pid", pidOf()),
	)...)
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
		sdktrace.WithSpanProcessor(f.truth.processor("nemo-gym/"+name, role)),
		sdktrace.WithBatcher(exp, bsp...),
	)
	p.client = p.tp.Tracer(scopeClient)
	p.lens = p.tp.Tracer(scopeLens)
	p.fastapi = p.tp.Tracer(scopeFastAPI, trace.WithInstrumentationVersion(contribVersion), trace.WithSchemaURL(fastAPISchema))
	p.aiohttp = p.tp.Tracer(scopeAIOHTTP, trace.WithInstrumentationVersion(contribVersion), trace.WithSchemaURL(fastAPISchema))
	p.leakRng = rand.New(rand.NewPCG(uint64(f.cfg.Seed), uint64(len(role))*0x51ed27+uint64(role[0])))
	p.raceRng = rand.New(rand.NewPCG(uint64(f.cfg.Seed)^0xd15c, uint64(len(role))*0x51ed27+uint64(role[0])))
	if role == RoleAgent {
		p.sem = make(semaphore, f.cfg.AgentSlots)
	}
	if p.meters, err = f.newMeters(ctx, res, p); err != nil {
		_ = p.tp.Shutdown(ctx)
		return nil, fmt.Errorf("%s metric exporter: %w", name, err)
	}
	p.httpClient = &http.Client{
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

// pidOf is process.pid: the fleet's processes share the OS process.
func pidOf() int { return os.Getpid() }

func (p *proc) serve() {
	if p.srv != nil {
		go func() { _ = p.srv.Serve(p.ln) }()
	}
}

// on reports whether group g is enabled in this process: the gate every
// span site, and the inject/extract decisions, check first.
func (p *proc) on(g string) bool { return p.telemetry && p.res.Groups[g] }

// start starts a span on tracer tr and notes what the truth must know about
// it: the group that let it exist and the rollout it was made for.
func (p *proc) start(ctx context.Context, tr trace.Tracer, g string, rollout int, name string, kind trace.SpanKind, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	opts = append(opts, trace.WithSpanKind(kind))
	ctx, sp := tr.Start(ctx, name, opts...)
	p.f.truth.note(sp.SpanContext().SpanID(), g, rollout)
	return ctx, sp
}

// semantic starts one of nemo-lens's INTERNAL spans; callers check p.on(g).
func (p *proc) semantic(ctx context.Context, g string, rollout int, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	return p.start(ctx, p.lens, g, rollout, name, trace.SpanKindInternal, trace.WithAttributes(attrs...))
}

// carryOver decides whether the request starting now inherits the span of
// the request this process started before it, as a reused keep-alive
// connection does when uvicorn starts the next request while the previous
// one's span is still current. It returns that span, or an invalid one.
func (p *proc) carryOver() trace.SpanContext {
	rate := p.f.cfg.ContextLeak
	p.leakMu.Lock()
	defer p.leakMu.Unlock()
	if rate <= 0 || !p.lastReq.IsValid() || p.leakRng.Float64() >= rate {
		return trace.SpanContext{}
	}
	return p.lastReq
}

// disconnectRaced draws whether the caller of the answer being sent is
// gone before its last body message (Config.DisconnectRace).
func (p *proc) disconnectRaced() bool {
	rate := p.f.cfg.DisconnectRace
	if rate <= 0 {
		return false
	}
	p.raceMu.Lock()
	defer p.raceMu.Unlock()
	return p.raceRng.Float64() < rate
}

func (p *proc) noteRequest(sc trace.SpanContext) {
	p.leakMu.Lock()
	p.lastReq = sc
	p.leakMu.Unlock()
}

// ServeHTTP is the FastAPI app with its OpenTelemetry instrumentation,
// installed only with server on: a request span (SERVER, or INTERNAL when a
// carried-over span is current) with its ASGI receive/send children, the
// traceparent extracted only when no span is current. With server off there
// is neither span nor extraction, so the handler's spans start new traces.
func (p *proc) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	rid := ""
	if rest, ok := strings.CutPrefix(path, "/ng-rollout/"); ok {
		if i := strings.IndexByte(rest, '/'); i > 0 {
			rid, path = rest[:i], rest[i:]
		}
	}
	h, ok := p.routes[r.Method+" "+path]
	if !ok {
		http.NotFound(w, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rollout := -1
	if v := r.Header.Get(rolloutHeader); v != "" {
		rollout, _ = strconv.Atoi(v)
	}
	p.f.requests.Add(1)
	began := time.Now()
	// A Python handler has only the context the instrumentation gives it.
	ctx := context.Background()
	var common, full []attribute.KeyValue
	srv, listener := noSpan, noSpan
	name := ""
	if p.on(GroupServer) {
		// The route template names the span. With an /ng-rollout/ prefix
		// the route is matched after stripping it, so the template does
		// not match the raw path and the span is just the method, without
		// http.route; the agent serves its own calls on a prefixed route.
		route := path
		named := true
		if rid != "" {
			if p.role == RoleAgent && path == "/v1/responses" {
				route = "/ng-rollout/{rollout_id}/v1/responses"
			} else {
				named = false
			}
		}
		name = r.Method
		if named {
			name += " " + route
		}
		kind := trace.SpanKindServer
		if parent := p.carryOver(); parent.IsValid() && rollout >= 0 {
			ctx = trace.ContextWithSpanContext(ctx, parent)
			kind = trace.SpanKindInternal
		} else {
			ctx = traceContext.Extract(ctx, propagation.HeaderCarrier(r.Header))
		}
		host, port, _ := net.SplitHostPort(p.ln.Addr().String())
		peerIP, peerPort, _ := net.SplitHostPort(r.RemoteAddr)
		np, _ := strconv.Atoi(port)
		pp, _ := strconv.Atoi(peerPort)
		attrs := []attribute.KeyValue{
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
		}
		if named {
			attrs = append(attrs, attribute.String("http.route", route))
		}
		common = []attribute.KeyValue{attrs[3], attrs[1], attrs[6], attrs[0], attrs[7]} // flavor, host, method, scheme, server_name
		full = append(append([]attribute.KeyValue(nil), common...), attribute.String("http.target", route), attrs[2])
		p.meters.requestStarted(ctx, common)
		ctx, srv = p.start(ctx, p.fastapi, GroupServer, rollout, name, kind, trace.WithAttributes(attrs...))
		p.noteRequest(srv.SpanContext())
		// The handler reads a POST body; G3's disconnect middleware reads
		// every request, then listens for the disconnect.
		if r.Method == http.MethodPost || p.f.variant.DisconnectReceive {
			p.asgi(ctx, rollout, name+" http receive", attribute.String("asgi.event.type", "http.request"))
		}
		if p.f.variant.DisconnectReceive {
			_, listener = p.start(ctx, p.fastapi, GroupServer, rollout, name+" http receive", trace.SpanKindInternal)
		}
	}
	resp := h(request{ctx: ctx, rid: rid, rollout: rollout, body: body})
	out, _ := json.Marshal(resp.body)
	if p.on(GroupServer) {
		_, snd := p.start(ctx, p.fastapi, GroupServer, rollout, name+" http send", trace.SpanKindInternal,
			trace.WithAttributes(attribute.String("asgi.event.type", "http.response.start"), attribute.Int("http.status_code", resp.status)))
		if resp.status >= 500 {
			snd.SetStatus(codes.Error, "")
		}
		snd.End()
		p.asgi(ctx, rollout, name+" http send", attribute.String("asgi.event.type", "http.response.body"))
		srv.SetAttributes(attribute.Int("http.status_code", resp.status))
		if resp.status >= 500 {
			// Gym's exception middleware answers 500 itself, so no
			// exception reaches the instrumentation: ERROR, no event.
			srv.SetStatus(codes.Error, "")
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(resp.status)
	_, _ = w.Write(out)
	if fl, ok := w.(http.Flusher); ok {
		fl.Flush()
	}
	if d := p.f.cfg.Latency / 50; d > 0 && resp.status < 500 {
		time.Sleep(d)
	}
	// A streamed 200 answer ends with an empty body message, sent after
	// the caller already has the headers: the caller's CLIENT span often
	// ends before this SERVER span. When the caller is gone before it, the
	// disconnect listener hears http.disconnect and the stream is cancelled
	// before that message.
	raced := resp.status < 500 && listener.IsRecording() && p.disconnectRaced()
	if raced {
		listener.SetAttributes(attribute.String("asgi.event.type", "http.disconnect"))
		listener.End()
	}
	if p.on(GroupServer) && resp.status < 500 && !raced {
		p.asgi(ctx, rollout, name+" http send", attribute.String("asgi.event.type", "http.response.body"))
	}
	srv.End()
	// Otherwise the listener is cancelled once the answer is out, after
	// the request span ended, and so carries no event type.
	if !raced {
		listener.End()
	}
	if p.on(GroupServer) {
		p.meters.requestEnded(ctx, common, append(full, attribute.Int("http.status_code", resp.status)), time.Since(began), len(body), len(out))
	}
}

// asgi records one ASGI receive or send span under the request span.
func (p *proc) asgi(ctx context.Context, rollout int, name string, attrs ...attribute.KeyValue) {
	_, sp := p.start(ctx, p.fastapi, GroupServer, rollout, name, trace.SpanKindInternal, trace.WithAttributes(attrs...))
	sp.End()
}

// post is Gym's egress (server_utils._traced_request): with http_client on,
// one CLIENT span per logical request, the retries of connection errors
// inside it, traceparent injected within it, ended when the response
// headers arrive and UNSET whatever the status. ridAttr is the rollout id
// the call site knows (observability on), "" for none; rollout is the
// fleet's bookkeeping.
func (p *proc) post(ctx context.Context, url string, rollout int, ridAttr string, body any) (int, []byte, error) {
	in, err := json.Marshal(body)
	if err != nil {
		return 0, nil, err
	}
	sp := noSpan
	cctx := ctx
	if p.on(GroupHTTPClient) {
		full := url
		if i := strings.IndexByte(full, '?'); i >= 0 {
			full = full[:i]
		}
		attrs := []attribute.KeyValue{attribute.String("http.request.method", http.MethodPost), attribute.String("url.full", full)}
		if ridAttr != "" {
			attrs = append(attrs, attribute.String("nemo.gym.rollout.id", ridAttr))
		}
		cctx, sp = p.start(ctx, p.client, GroupHTTPClient, rollout, "HTTP POST", trace.SpanKindClient, trace.WithAttributes(attrs...))
		p.f.truth.noteCallee(sp.SpanContext().SpanID(), p.f.calleeOf(url))
	}
	var resp *http.Response
	for attempt := 0; attempt < maxAttempts; attempt++ {
		req, rerr := http.NewRequestWithContext(context.WithoutCancel(ctx), http.MethodPost, url, bytes.NewReader(in))
		if rerr != nil {
			sp.End()
			return 0, nil, rerr
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("User-Agent", "Python/3.11 aiohttp/3.12.13")
		req.Header.Set(rolloutHeader, strconv.Itoa(rollout))
		if p.on(GroupHTTPClient) {
			traceContext.Inject(cctx, propagation.HeaderCarrier(req.Header))
		}
		resp, err = p.send(cctx, req, rollout)
		if err == nil {
			break
		}
		// Only a connection error is retried; an answer never is.
	}
	if err != nil {
		if sp.IsRecording() {
			sp.AddEvent("exception", trace.WithAttributes(
				attribute.String("exception.type", "aiohttp.client_exceptions.ClientConnectionError"),
				attribute.String("exception.message", err.Error()),
				attribute.String("exception.escaped", "False")))
			sp.SetStatus(codes.Error, "ClientConnectionError: "+err.Error())
		}
		sp.End()
		return 0, nil, err
	}
	defer resp.Body.Close()
	sp.SetAttributes(attribute.Int("http.response.status_code", resp.StatusCode))
	sp.End()
	out, err := io.ReadAll(resp.Body)
	return resp.StatusCode, out, err
}

// maxAttempts bounds the tries of a request whose connection fails.
const maxAttempts = 3

// send does one HTTP attempt, inside the aiohttp client instrumentation's
// span when the fleet runs with it: a CLIENT span named by the method with
// old-semconv attributes that injects traceparent whatever the span groups.
func (p *proc) send(ctx context.Context, req *http.Request, rollout int) (*http.Response, error) {
	if !p.f.cfg.AIOHTTP || !p.telemetry {
		return p.httpClient.Do(req)
	}
	actx, sp := p.start(ctx, p.aiohttp, GroupAIOHTTP, rollout, req.Method, trace.SpanKindClient,
		trace.WithAttributes(attribute.String("http.method", req.Method), attribute.String("http.url", req.URL.String())))
	traceContext.Inject(actx, propagation.HeaderCarrier(req.Header))
	p.f.truth.noteCallee(sp.SpanContext().SpanID(), p.f.calleeOf(req.URL.String()))
	resp, err := p.httpClient.Do(req)
	if err != nil {
		sp.SetStatus(codes.Error, err.Error())
		sp.End()
		return nil, err
	}
	sp.SetAttributes(attribute.Int("http.status_code", resp.StatusCode))
	if resp.StatusCode >= 400 {
		sp.SetStatus(codes.Error, "")
	}
	sp.End()
	return resp, nil
}

// probe is the start-up health check: a plain GET of the server's root, with
// no CLIENT span and no traceparent.
func (p *proc) probe(target *proc) error {
	req, err := http.NewRequest(http.MethodGet, target.base+"/", nil)
	if err != nil {
		return err
	}
	req.Header.Set("User-Agent", "python-requests/2.28.1")
	req.Header.Set(rolloutHeader, "-1")
	resp, err := p.httpClient.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.Body.Close()
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

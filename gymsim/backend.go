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
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Model backends behind the model server (Config.ModelBackend). Gym's own
// spans carry no token counts; the server it calls may.
const (
	// BackendVLLM: the model server calls vLLM through Gym's egress (an
	// HTTP POST CLIENT span when http_client is on); vLLM, tracing on,
	// records one llm_request SERVER span per request with its token
	// usage under the older GenAI names.
	BackendVLLM = "vllm"
	// BackendGateway: the model server calls vLLM through an OpenAI-style
	// client instrumented by the GenAI conventions: a `chat <model>`
	// CLIENT span with the usage under the current names, vLLM's
	// llm_request under it reporting the same call again.
	BackendGateway = "gateway"
	// GroupBackend marks, in the truth, the backend's spans and the
	// gateway client's: no Gym group gates them.
	GroupBackend = "model_backend"
	// RoleBackend is the truth role of vLLM's spans.
	RoleBackend = "backend"

	backendService = "vllm"
	// servedModel is the model vLLM serves, as it names it.
	servedModel = "gymsim/policy-8b"
	scopeVLLM   = "vllm.llm_engine"
	scopeOpenAI = "opentelemetry.instrumentation.openai_v2"
)

// Usage is the token usage the backend answered: the fleet's own record,
// the truth a token summary is checked against.
type Usage struct {
	Input, Output int64
	Calls         int
}

// backend is the simulated vLLM server: its own process, resource and
// tracer provider, reached over HTTP on loopback.
type backend struct {
	f      *Fleet
	tp     *sdktrace.TracerProvider
	tracer trace.Tracer
	ln     net.Listener
	srv    *http.Server
	url    string // the chat completions endpoint
	client *http.Client

	mu    sync.Mutex
	calls map[int]int   // rollout -> calls answered, draws the counts
	usage map[int]Usage // rollout -> what was answered
	seq   int
}

func startBackend(ctx context.Context, f *Fleet) (*backend, error) {
	switch f.cfg.ModelBackend {
	case BackendVLLM, BackendGateway:
	default:
		return nil, fmt.Errorf("model backend %q: want %s, %s or none", f.cfg.ModelBackend, BackendVLLM, BackendGateway)
	}
	exp, err := f.newExporter(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s exporter: %w", backendService, err)
	}
	b := &backend{f: f, calls: map[int]int{}, usage: map[int]Usage{},
		client: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}}}
	b.tp = sdktrace.NewTracerProvider(
		sdktrace.WithResource(resource.NewWithAttributes("", attribute.String("service.name", backendService))),
		sdktrace.WithSampler(sdktrace.AlwaysSample()),
		sdktrace.WithSpanProcessor(f.truth.processor(backendService, RoleBackend)),
		sdktrace.WithBatcher(exp, sdktrace.WithBlocking()),
	)
	b.tracer = b.tp.Tracer(scopeVLLM)
	if b.ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		_ = b.tp.Shutdown(ctx)
		return nil, fmt.Errorf("%s listen: %w", backendService, err)
	}
	b.url = "http://" + b.ln.Addr().String() + "/v1/chat/completions"
	b.srv = &http.Server{Handler: http.HandlerFunc(b.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = b.srv.Serve(b.ln) }()
	return b, nil
}

// draw decides a call's token counts from the seed, the rollout and the
// call's place in it, so a seed always answers the same.
func (b *backend) draw(rollout int) (in, out int64, id int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := b.calls[rollout]
	b.calls[rollout] = n + 1
	b.seq++
	in, out = drawTokens(b.f.cfg.Seed, rollout, n)
	u := b.usage[rollout]
	u.Input, u.Output, u.Calls = u.Input+in, u.Output+out, u.Calls+1
	b.usage[rollout] = u
	return in, out, b.seq
}

// drawTokens decides the token counts of call n of a rollout from the seed:
// the prompt grows with the conversation.
func drawTokens(seed int64, rollout, n int) (in, out int64) {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%d/%d", seed, rollout, n)
	x := h.Sum64()
	return 300 + int64(n)*250 + int64(x%400), 16 + int64(x>>20%480)
}

// serve is vLLM's OpenAI-compatible endpoint with tracing on: the caller's
// traceparent is extracted and one llm_request span records the request,
// started at its arrival.
func (b *backend) serve(w http.ResponseWriter, r *http.Request) {
	arrived := time.Now()
	body, _ := io.ReadAll(r.Body)
	var step stepBody
	_ = json.Unmarshal(body, &step)
	rollout := -1
	if v := r.Header.Get(rolloutHeader); v != "" {
		rollout, _ = strconv.Atoi(v)
	}
	in, out, id := b.draw(rollout)
	work := b.f.work(step, 3)
	queued := work / 20
	b.f.model.sleep(work)
	ctx := traceContext.Extract(context.Background(), propagation.HeaderCarrier(r.Header))
	_, sp := b.tracer.Start(ctx, "llm_request", trace.WithSpanKind(trace.SpanKindServer), trace.WithTimestamp(arrived))
	b.f.truth.note(sp.SpanContext().SpanID(), GroupBackend, rollout)
	e2e := time.Since(arrived).Seconds()
	sp.SetAttributes(
		attribute.String("gen_ai.response.model", servedModel),
		attribute.String("gen_ai.request.id", fmt.Sprintf("chatcmpl-%d", id)),
		attribute.Float64("gen_ai.request.top_p", 1),
		attribute.Int("gen_ai.request.max_tokens", 2048),
		attribute.Float64("gen_ai.request.temperature", 1),
		attribute.Int("gen_ai.request.n", 1),
		attribute.Int64("gen_ai.usage.prompt_tokens", in),
		attribute.Int64("gen_ai.usage.completion_tokens", out),
		attribute.Float64("gen_ai.latency.time_in_queue", queued.Seconds()),
		attribute.Float64("gen_ai.latency.time_to_first_token", queued.Seconds()+e2e/8),
		attribute.Float64("gen_ai.latency.e2e", e2e),
		attribute.Float64("gen_ai.latency.time_in_model_prefill", e2e/8),
		attribute.Float64("gen_ai.latency.time_in_model_decode", e2e*3/4),
		attribute.Float64("gen_ai.latency.time_in_model_inference", e2e*7/8),
	)
	sp.End()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": fmt.Sprintf("chatcmpl-%d", id), "model": servedModel,
		"usage": map[string]int64{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out},
	})
}

// chatAnswer is what the model server reads of vLLM's answer.
type chatAnswer struct {
	ID    string `json:"id"`
	Model string `json:"model"`
	Usage struct {
		Prompt     int64 `json:"prompt_tokens"`
		Completion int64 `json:"completion_tokens"`
	} `json:"usage"`
}

// callBackend is the model server's call to its backend, under ctx (the
// handler's span when one is on). It returns the usage the backend answered.
func (f *Fleet) callBackend(ctx context.Context, rollout int, body any) (prompt, completion int64, err error) {
	b, m := f.backend, f.model
	if f.cfg.ModelBackend == BackendVLLM {
		_, out, err := m.post(ctx, b.url, rollout, "", body)
		if err != nil {
			return 0, 0, err
		}
		var a chatAnswer
		if err := json.Unmarshal(out, &a); err != nil {
			return 0, 0, fmt.Errorf("%s answer: %w", backendService, err)
		}
		return a.Usage.Prompt, a.Usage.Completion, nil
	}
	in, err := json.Marshal(body)
	if err != nil {
		return 0, 0, err
	}
	// The GenAI client instrumentation is no Gym group: with telemetry on
	// it records and injects whatever the span groups.
	sp := noSpan
	cctx := ctx
	host, port, _ := net.SplitHostPort(b.ln.Addr().String())
	if m.telemetry {
		np, _ := strconv.Atoi(port)
		cctx, sp = m.start(ctx, m.tp.Tracer(scopeOpenAI), GroupBackend, rollout, "chat "+servedModel, trace.SpanKindClient,
			trace.WithAttributes(
				attribute.String("gen_ai.operation.name", "chat"),
				attribute.String("gen_ai.system", "openai"),
				attribute.String("gen_ai.provider.name", "openai"),
				attribute.String("gen_ai.request.model", servedModel),
				attribute.String("server.address", host),
				attribute.Int("server.port", np)))
	}
	defer sp.End()
	req, err := http.NewRequestWithContext(context.WithoutCancel(ctx), http.MethodPost, b.url, bytes.NewReader(in))
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(rolloutHeader, strconv.Itoa(rollout))
	if m.telemetry {
		traceContext.Inject(cctx, propagation.HeaderCarrier(req.Header))
	}
	resp, err := b.client.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	var a chatAnswer
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		return 0, 0, err
	}
	sp.SetAttributes(
		attribute.String("gen_ai.response.model", a.Model),
		attribute.String("gen_ai.response.id", a.ID),
		attribute.StringSlice("gen_ai.response.finish_reasons", []string{"stop"}),
		attribute.Int64("gen_ai.usage.input_tokens", a.Usage.Prompt),
		attribute.Int64("gen_ai.usage.output_tokens", a.Usage.Completion))
	return a.Usage.Prompt, a.Usage.Completion, nil
}

// Tokens returns the token usage the backend answered, by rollout index
// (-1 for calls outside any rollout); nil without a backend.
func (f *Fleet) Tokens() map[int]Usage {
	if f.backend == nil {
		return nil
	}
	f.backend.mu.Lock()
	defer f.backend.mu.Unlock()
	out := make(map[int]Usage, len(f.backend.usage))
	for k, v := range f.backend.usage {
		out[k] = v
	}
	return out
}

func (b *backend) shutdown(ctx context.Context) error {
	b.client.CloseIdleConnections()
	err := b.srv.Shutdown(ctx)
	if terr := b.tp.Shutdown(ctx); err == nil {
		err = terr
	}
	return err
}

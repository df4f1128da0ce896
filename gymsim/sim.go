package gymsim

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/nemo-gym/gymtrace/gate"
)

const internal = trace.SpanKindInternal

// routes registers every server's handlers.
func (f *Fleet) routes() {
	f.agent.routes["/run"] = f.agentRun
	f.agent.routes["/v1/responses"] = f.agentResponses
	for _, api := range modelAPIs {
		api := api
		f.model.routes[api.route] = func(req request) response { return f.modelCall(req, api.span) }
	}
	f.resources.routes["/seed_session"] = f.seedSession
	f.resources.routes["/get_weather"] = f.simpleTool
	f.resources.routes["/search_web"] = f.simpleTool
	f.resources.routes["/run_code"] = f.runCode
	f.resources.routes["/verify"] = f.verify
}

// drive is the rollout-collection driver: runs of RunSize rollouts, each run
// under one gym.job span when job is on.
func (f *Fleet) drive() {
	defer close(f.done)
	next := 0
	var start time.Time
	for run := 0; f.cfg.Rollouts == 0 || next < f.cfg.Rollouts; run++ {
		size := f.cfg.RunSize
		if f.cfg.Rollouts > 0 && next+size > f.cfg.Rollouts {
			size = f.cfg.Rollouts - next
		}
		d := f.driver
		ctx := context.Background()
		job := noSpan
		sem := make(chan struct{}, f.cfg.Concurrency)
		var wg sync.WaitGroup
		var failed int
		var mu sync.Mutex
		stopped := false
		for i := 0; i < size; i++ {
			if f.cfg.Rate > 0 {
				if start.IsZero() {
					start = time.Now()
				}
				at := start.Add(time.Duration(float64(f.started.Load()) / f.cfg.Rate * float64(time.Second)))
				if !f.waitUntil(at) {
					stopped = true
					break
				}
			}
			// Checked first: a select with both ready picks at random.
			select {
			case <-f.stopping:
				stopped = true
			default:
			}
			if !stopped {
				select {
				case sem <- struct{}{}:
				case <-f.stopping:
					stopped = true
				}
			}
			if stopped {
				break
			}
			// The job starts with its first rollout, so a stop between
			// runs leaves no empty job span.
			if i == 0 && d.on(gate.Job) {
				ctx, job = d.start(ctx, gate.Job, "", "gym.job", internal,
					attribute.String("nemo.gym.job.name", "collect_rollouts"),
					attribute.Int("nemo.gym.job.num_rollouts", size),
					attribute.Int("nemo.gym.job.concurrency", f.cfg.Concurrency))
			}
			n := next
			next++
			f.started.Add(1)
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				rid := rolloutID(f.cfg.Seed, n)
				status, _, err := d.post(ctx, f.agent.base+"/run", rid, map[string]any{"rollout_id": rid, "index": n})
				f.completed.Add(1)
				if err != nil || status != http.StatusOK {
					f.failed.Add(1)
					mu.Lock()
					failed++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if job.IsRecording() {
			job.SetAttributes(attribute.Int("nemo.gym.job.rollouts_failed", failed))
		}
		job.End()
		if stopped {
			return
		}
	}
}

// waitUntil sleeps until t; false when the fleet is stopping.
func (f *Fleet) waitUntil(t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		select {
		case <-f.stopping:
			return false
		default:
			return true
		}
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-f.stopping:
		return false
	}
}

type runBody struct {
	RolloutID string `json:"rollout_id"`
	Index     int    `json:"index"`
}

func decode[T any](b []byte) T {
	var v T
	_ = json.Unmarshal(b, &v)
	return v
}

// agentRun is the agent's /run: one rollout. It seeds the session, runs the
// agent loop by calling its own /v1/responses, then verifies.
func (f *Fleet) agentRun(req request) response {
	a := f.agent
	// The semaphore is there whatever the spec, so timing does not depend
	// on it; only the measurement is gated.
	wait := a.sem.acquire()
	defer a.sem.release()
	if a.queueWait != nil {
		a.queueWait.Record(req.ctx, float64(wait)/float64(time.Millisecond))
	}
	in := decode[runBody](req.body)
	plan := planRollout(f.cfg.Seed, in.Index)
	rid := plan.ID
	ctx := req.ctx
	sp := noSpan
	if a.on(gate.Rollout) {
		ctx, sp = a.start(ctx, gate.Rollout, rid, "gym.rollout", internal,
			attribute.String("nemo.gym.rollout.id", rid),
			attribute.Int("nemo.gym.rollout.index", plan.Index),
			attribute.String("nemo.gym.agent.name", agentName))
	}
	defer sp.End()
	prefix := "/ng-rollout/" + rid
	if exc := f.call(ctx, a, f.resources.base+prefix+"/seed_session", rid, map[string]any{"index": plan.Index}, 1); exc != nil {
		exc.record(sp)
		return response{status: 500, body: map[string]string{"detail": exc.message}, exc: exc}
	}
	if exc := f.call(ctx, a, a.base+prefix+"/v1/responses", rid, map[string]any{"index": plan.Index}, 1); exc != nil {
		exc.record(sp)
		return response{status: 500, body: map[string]string{"detail": exc.message}, exc: exc}
	}
	vb := map[string]any{"index": plan.Index, "fail": plan.VerifyFail, "reward": plan.Reward, "work": plan.work(15)}
	if exc := f.call(ctx, a, f.resources.base+prefix+"/verify", rid, vb, 1); exc != nil {
		exc.record(sp)
		return response{status: 500, body: map[string]string{"detail": exc.message}, exc: exc}
	}
	if sp.IsRecording() {
		sp.SetAttributes(attribute.Float64("nemo.gym.reward", plan.Reward))
	}
	return response{status: 200, body: map[string]any{"rollout_id": rid, "reward": plan.Reward}}
}

// call posts body, retrying 503 answers up to maxAttempts (each attempt its
// own CLIENT span), and turns a final error answer into the exception the
// caller raises. body's "attempt" is set per attempt.
func (f *Fleet) call(ctx context.Context, p *proc, url, rid string, body map[string]any, attempts int) *pyException {
	for attempt := 0; ; attempt++ {
		body["attempt"] = attempt
		status, _, err := p.post(ctx, url, rid, body)
		if err != nil {
			return &pyException{typ: "aiohttp.client_exceptions.ClientConnectionError", message: err.Error(), file: "/opt/nemo_gym/nemo_gym/server_utils.py"}
		}
		if status == http.StatusServiceUnavailable && attempt+1 < attempts {
			continue
		}
		if status != http.StatusOK {
			return clientError(status, url)
		}
		return nil
	}
}

// agentResponses is the agent's /v1/responses: the model/tool loop.
func (f *Fleet) agentResponses(req request) response {
	a := f.agent
	in := decode[runBody](req.body)
	plan := planRollout(f.cfg.Seed, in.Index)
	rid := plan.ID
	ctx := req.ctx
	sp := noSpan
	if a.on(gate.Agent) {
		ctx, sp = a.start(ctx, gate.Agent, rid, "gym.agent.responses", internal,
			attribute.String("nemo.gym.rollout.id", rid),
			attribute.String("nemo.gym.agent.name", agentName))
	}
	defer sp.End()
	api := modelAPIs[plan.API]
	prefix := "/ng-rollout/" + rid
	step := 0
	for t, turn := range plan.Turns {
		body := map[string]any{"turn": t, "fail_503": turn.Model503, "input": turn.Input, "output": turn.Output, "work": plan.work(step)}
		step++
		if exc := f.call(ctx, a, f.model.base+prefix+api.route, rid, body, maxAttempts); exc != nil {
			exc.record(sp)
			return response{status: 500, body: map[string]string{"detail": exc.message}, exc: exc}
		}
		for i, tool := range turn.Tools {
			last := t == len(plan.Turns)-1 && i == len(turn.Tools)-1
			body := map[string]any{"fail_503": tool.Fail503, "raise": plan.SandboxFail && last, "work": plan.work(step)}
			step++
			if exc := f.call(ctx, a, f.resources.base+prefix+"/"+tool.Name, rid, body, maxAttempts); exc != nil {
				exc.record(sp)
				return response{status: 500, body: map[string]string{"detail": exc.message}, exc: exc}
			}
		}
	}
	if sp.IsRecording() {
		sp.SetAttributes(attribute.Int("nemo.gym.agent.turns", len(plan.Turns)))
	}
	return response{status: 200, body: map[string]any{"output": "done", "turns": len(plan.Turns)}}
}

type stepBody struct {
	Attempt int     `json:"attempt"`
	Fail503 int     `json:"fail_503"`
	Turn    int     `json:"turn"`
	Input   int     `json:"input"`
	Output  int     `json:"output"`
	Raise   bool    `json:"raise"`
	Fail    bool    `json:"fail"`
	Reward  float64 `json:"reward"`
	Work    float64 `json:"work"`
}

func (f *Fleet) work(b stepBody, scale float64) time.Duration {
	return time.Duration(float64(f.cfg.Latency) * scale * b.Work)
}

// modelCall is the model server's chat/responses/messages endpoint.
func (f *Fleet) modelCall(req request, spanName string) response {
	m := f.model
	in := decode[stepBody](req.body)
	sp := noSpan
	if m.on(gate.ModelCall) {
		_, sp = m.start(req.ctx, gate.ModelCall, req.rid, spanName, internal,
			attribute.String("nemo.gym.rollout.id", req.rid),
			attribute.String("gen_ai.system", "openai"),
			attribute.String("gen_ai.request.model", "policy-8b-instruct"),
			attribute.Float64("gen_ai.request.temperature", 1.0),
			attribute.Int("nemo.gym.turn", in.Turn))
	}
	defer sp.End()
	if in.Attempt < in.Fail503 {
		m.sleep(f.work(in, 0.2))
		// FastAPI turns an HTTPException into a 503 answer: it is recorded
		// on the model span but does not escape the SERVER span.
		(&pyException{typ: "fastapi.exceptions.HTTPException", message: "503: model backend overloaded",
			file: "/opt/nemo_gym/responses_api_models/vllm_model/app.py"}).record(sp)
		return response{status: 503, body: map[string]string{"detail": "model backend overloaded"}}
	}
	m.sleep(f.work(in, 4))
	if sp.IsRecording() {
		sp.SetAttributes(attribute.Int("gen_ai.usage.input_tokens", in.Input), attribute.Int("gen_ai.usage.output_tokens", in.Output))
	}
	return response{status: 200, body: map[string]any{"output": []string{"ok"}}}
}

func (f *Fleet) seedSession(req request) response {
	f.sandboxMu.Lock()
	f.sandboxes[req.rid] = false
	f.sandboxMu.Unlock()
	return response{status: 200, body: map[string]string{"status": "ok"}}
}

func (f *Fleet) simpleTool(req request) response {
	in := decode[stepBody](req.body)
	if in.Attempt < in.Fail503 {
		return response{status: 503, body: map[string]string{"detail": "tool busy"}}
	}
	f.resources.sleep(f.work(in, 0.5))
	return response{status: 200, body: map[string]string{"result": "ok"}}
}

// runCode runs a snippet in the rollout's sandbox, starting it on first use.
func (f *Fleet) runCode(req request) response {
	r := f.resources
	in := decode[stepBody](req.body)
	if in.Attempt < in.Fail503 {
		return response{status: 503, body: map[string]string{"detail": "sandbox pool exhausted"}}
	}
	f.sandboxMu.Lock()
	started := f.sandboxes[req.rid]
	f.sandboxes[req.rid] = true
	f.sandboxMu.Unlock()
	if !started {
		sp := noSpan
		if r.on(gate.Sandbox) {
			_, sp = r.start(req.ctx, gate.Sandbox, req.rid, "gym.sandbox.start", internal,
				attribute.String("nemo.gym.rollout.id", req.rid),
				attribute.String("nemo.gym.sandbox.image", "python:3.11-slim"))
		}
		r.sleep(f.work(in, 1))
		sp.End()
	}
	sp := noSpan
	if r.on(gate.Sandbox) {
		_, sp = r.start(req.ctx, gate.Sandbox, req.rid, "gym.sandbox.exec", internal,
			attribute.String("nemo.gym.rollout.id", req.rid),
			attribute.String("nemo.gym.sandbox.command", "python /tmp/snippet.py"))
	}
	defer sp.End()
	r.sleep(f.work(in, 0.5))
	if in.Raise {
		exc := &pyException{typ: "nemo_gym.sandbox.SandboxError", message: "process exited with code 137",
			file: "/opt/nemo_gym/resources_servers/example_tools/app.py"}
		exc.record(sp)
		f.dropSandbox(req.rid)
		return response{status: 500, body: map[string]string{"detail": "Internal Server Error"}, exc: exc}
	}
	if sp.IsRecording() {
		sp.SetAttributes(attribute.Int("nemo.gym.sandbox.exit_code", 0))
	}
	return response{status: 200, body: map[string]string{"stdout": "42\n"}}
}

func (f *Fleet) dropSandbox(rid string) {
	f.sandboxMu.Lock()
	delete(f.sandboxes, rid)
	f.sandboxMu.Unlock()
}

// verify scores the rollout.
func (f *Fleet) verify(req request) response {
	r := f.resources
	in := decode[stepBody](req.body)
	defer f.dropSandbox(req.rid)
	sp := noSpan
	if r.on(gate.Verify) {
		_, sp = r.start(req.ctx, gate.Verify, req.rid, "gym.verify", internal,
			attribute.String("nemo.gym.rollout.id", req.rid))
	}
	defer sp.End()
	r.sleep(f.work(in, 1))
	if in.Fail {
		exc := &pyException{typ: "ValueError", message: "could not parse final answer",
			file: "/opt/nemo_gym/resources_servers/example_tools/app.py"}
		exc.record(sp)
		return response{status: 500, body: map[string]string{"detail": "Internal Server Error"}, exc: exc}
	}
	if sp.IsRecording() {
		sp.SetAttributes(attribute.Float64("nemo.gym.reward", in.Reward))
	}
	return response{status: 200, body: map[string]any{"reward": in.Reward}}
}

package gymsim

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
)

// routes registers every server's handlers, by "METHOD path" (the path
// with any /ng-rollout/{id} prefix stripped).
func (f *Fleet) routes() {
	for _, p := range []*proc{f.agent, f.model, f.resources} {
		p.routes["GET /"] = func(request) response { return response{status: 200, body: map[string]string{"status": "ok"}} }
	}
	f.agent.routes["POST /run"] = f.agentRun
	f.agent.routes["POST /v1/responses"] = f.agentResponses
	f.agent.routes["POST /aggregate_metrics"] = f.agentAggregate
	f.model.routes["POST /v1/responses"] = f.modelCall
	f.resources.routes["POST /seed_session"] = f.seedSession
	f.resources.routes["POST /get_weather"] = f.simpleTool
	f.resources.routes["POST /search_web"] = f.simpleTool
	f.resources.routes["POST /run_code"] = f.runCode
	f.resources.routes["POST /verify"] = f.verify
	f.resources.routes["POST /aggregate_metrics"] = func(request) response {
		return response{status: 200, body: map[string]any{"metrics": map[string]float64{}}}
	}
}

// drive is the driver: the servers' start-up and health probes, then runs
// of RunSize rollouts, each under one gym.job span (job on) and closed by
// the /aggregate_metrics call.
func (f *Fleet) drive() {
	defer close(f.done)
	f.startServers()
	next := 0
	var start time.Time
	d := f.driver
	for run := 0; f.cfg.Rollouts == 0 || next < f.cfg.Rollouts; run++ {
		size := f.cfg.RunSize
		if f.cfg.Rollouts > 0 && next+size > f.cfg.Rollouts {
			size = f.cfg.Rollouts - next
		}
		ctx := context.Background()
		job := noSpan
		sem := make(chan struct{}, f.cfg.Concurrency)
		var wg sync.WaitGroup
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
			if i == 0 && d.on(GroupJob) {
				ctx, job = d.semantic(ctx, GroupJob, -1, "gym.job")
			}
			n := next
			next++
			f.started.Add(1)
			plan := f.plan(n)
			if f.evidence != nil {
				f.evidence.dispatched(&plan)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				// The driver's /run call carries no rollout id.
				status, body, err := d.post(ctx, f.agent.base+"/run", n, "", map[string]any{"task_index": n})
				if f.evidence != nil {
					f.evidence.completed(&plan, status, body, err)
				}
				f.completed.Add(1)
				if err != nil || status != http.StatusOK {
					f.failed.Add(1)
				}
			}()
		}
		wg.Wait()
		if !stopped && next > 0 {
			_, _, _ = d.post(ctx, f.agent.base+"/aggregate_metrics", -1, "", map[string]any{})
		}
		job.End()
		if f.evidence != nil && next > 0 {
			f.evidence.aggregate()
		}
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
	TaskIndex int `json:"task_index"`
}

func decode[T any](b []byte) T {
	var v T
	_ = json.Unmarshal(b, &v)
	return v
}

// scoped returns the URL prefix and the rollout id attribute of a
// rollout's own calls: both empty unless observability is on.
func (f *Fleet) scoped(plan *rolloutPlan) (prefix, rid string) {
	if !f.cfg.Observability {
		return "", ""
	}
	return "/ng-rollout/" + plan.ID, plan.ID
}

// agentRun is the agent's /run: one rollout. It seeds the session, runs the
// agent loop by calling its own /v1/responses, then verifies; a failed
// verify raises (aiohttp's raise_for_status) and the answer is a 500. The
// answer is the rollout's row as Gym's agent returns it: the response with
// its token usage and the reward, and with observability on what the agent
// measured (ng_perf, the model-call capture, the tool calls).
func (f *Fleet) agentRun(req request) response {
	a := f.agent
	// The semaphore is there whatever the spec, so timing does not depend
	// on it; only the measurement is gated.
	wait := a.sem.acquire()
	defer a.sem.release()
	a.meters.queueWaited(req.ctx, wait)
	began := time.Now()
	defer func() { a.meters.rollout(req.ctx, time.Since(began)) }()
	in := decode[runBody](req.body)
	plan := f.plan(in.TaskIndex)
	n := plan.Index
	prefix, rid := f.scoped(&plan)
	ctx := req.ctx
	sp := noSpan
	if a.on(GroupRollout) {
		attrs := []attribute.KeyValue{attribute.String("nemo.gym.server.name", a.name)}
		if rid != "" {
			attrs = append(attrs, attribute.String("nemo.gym.rollout.id", rid))
		}
		ctx, sp = a.semantic(ctx, GroupRollout, n, "gym.rollout", attrs...)
	}
	defer sp.End()
	calls := []struct {
		path string
		url  string
		body map[string]any
	}{
		{"/seed_session", f.resources.base + prefix + "/seed_session", map[string]any{"task_index": n}},
		{"/v1/responses", a.base + prefix + "/v1/responses", map[string]any{"task_index": n}},
		{"/verify", f.resources.base + prefix + "/verify", map[string]any{"task_index": n, "verify": plan.Verify, "work": plan.work(15)}},
	}
	var loop loopAnswer
	var reward float64
	for _, c := range calls {
		status, out, err := a.post(ctx, c.url, n, rid, c.body)
		if err == nil && status < 400 {
			switch c.path {
			case "/v1/responses":
				loop = decode[loopAnswer](out)
			case "/verify":
				reward = decode[verifyAnswer](out).Reward
			}
			continue
		}
		ans := f.rolloutAnswer(&plan, &loop, began)
		ans.Detail = "Internal Server Error"
		if err != nil {
			ans.Error = fmt.Sprintf("POST %s: %v", c.path, err)
		} else {
			clientResponseError(status, c.url).record(sp)
			ans.Error = fmt.Sprintf("POST %s answered %d", c.path, status)
		}
		return response{status: 500, body: ans}
	}
	ans := f.rolloutAnswer(&plan, &loop, began)
	ans.Reward = &reward
	return response{status: 200, body: ans}
}

// rolloutAnswer is the /run answer of a rollout whose loop answered loop
// (empty when it never ran).
func (f *Fleet) rolloutAnswer(plan *rolloutPlan, loop *loopAnswer, began time.Time) *runAnswer {
	ans := &runAnswer{
		Params:   taskParams(plan.Task),
		Response: &responseObj{ID: loop.ID, Object: "response", Output: []any{}, Usage: loop.Usage},
	}
	if !f.cfg.Observability {
		return ans
	}
	p := &perf{NumTurns: len(loop.ModelCalls), NumToolCalls: len(loop.ToolCalls),
		TotalLatencyMS: ms(time.Since(began))}
	known := 0
	var prompt, completion int64
	for _, c := range loop.ModelCalls {
		if c.PromptTokens != nil && c.CompletionTokens != nil {
			known++
			prompt += *c.PromptTokens
			completion += *c.CompletionTokens
		}
	}
	if known > 0 {
		p.PromptTokens, p.CompletionTokens = &prompt, &completion
	}
	if len(loop.ModelCalls) > 0 {
		p.TokenCoverage = float64(known) / float64(len(loop.ModelCalls))
	}
	ans.Perf = p
	ans.Capture = append([]modelCallRecord{}, loop.ModelCalls...)
	ans.Trajectory = &trajectory{SchemaVersion: "1", TaskID: strconv.Itoa(plan.Task), RolloutID: plan.ID,
		ToolCalls: append([]toolCallRecord{}, loop.ToolCalls...)}
	return ans
}

// loopAnswer is the agent loop's answer to the agent's own /run: the last
// response's id, the usage summed over the model calls, and what the loop
// measured of each call.
type loopAnswer struct {
	ID         string            `json:"id"`
	Usage      usage             `json:"usage"`
	ModelCalls []modelCallRecord `json:"model_calls"`
	ToolCalls  []toolCallRecord  `json:"tool_calls"`
}

type verifyAnswer struct {
	Reward float64 `json:"reward"`
}

// modelAnswer is the model server's answer, as the agent reads it.
type modelAnswer struct {
	ID    string `json:"id"`
	Usage *usage `json:"usage"`
}

// agentResponses is the agent's /v1/responses: the model/tool loop. A tool
// that fails answers 500 and the agent hands the error to the model. The
// loop times every call it makes, as Gym's model-call capture does.
func (f *Fleet) agentResponses(req request) response {
	a := f.agent
	in := decode[runBody](req.body)
	plan := f.plan(in.TaskIndex)
	n := plan.Index
	prefix, _ := f.scoped(&plan)
	ctx := req.ctx
	sp := noSpan
	if a.on(GroupAgent) {
		ctx, sp = a.semantic(ctx, GroupAgent, n, "gym.agent.responses", attribute.String("nemo.gym.server.name", a.name))
	}
	defer sp.End()
	step := 0
	ans := loopAnswer{ModelCalls: []modelCallRecord{}, ToolCalls: []toolCallRecord{}}
	for t, turn := range plan.Turns {
		body := map[string]any{"work": plan.work(step), "turn": t}
		step++
		began := time.Now()
		status, out, err := a.post(ctx, f.model.base+prefix+"/v1/responses", n, "", body)
		done := time.Now()
		rec := modelCallRecord{ModelCallID: fmt.Sprintf("%s-m%d", plan.ID, t), StartedAt: unixSeconds(began), CompletedAt: unixSeconds(done),
			StatusCode: status, LatencyTotalMS: ms(done.Sub(began))}
		if err != nil {
			rec.ErrorCategory = "connection_error"
			ans.ModelCalls = append(ans.ModelCalls, rec)
			return response{status: 500, body: ans}
		}
		if m := decode[modelAnswer](out); status == http.StatusOK && m.Usage != nil {
			rec.PromptTokens, rec.CompletionTokens = &m.Usage.Input, &m.Usage.Output
			ans.ID = m.ID
			ans.Usage.Input += m.Usage.Input
			ans.Usage.Output += m.Usage.Output
			ans.Usage.Total += m.Usage.Total
		} else if status != http.StatusOK {
			rec.ErrorCategory = "http_error"
		}
		rec.FinishReason = "stop"
		if len(turn.Tools) > 0 {
			rec.FinishReason = "tool_calls"
		}
		ans.ModelCalls = append(ans.ModelCalls, rec)
		for i, tool := range turn.Tools {
			body := map[string]any{"task_index": n, "fail": tool.Fail, "exit_code": tool.ExitCode, "work": plan.work(step)}
			step++
			began := time.Now()
			status, _, err := a.post(ctx, f.resources.base+"/"+tool.Name, n, "", body)
			if err != nil {
				return response{status: 500, body: ans}
			}
			ans.ToolCalls = append(ans.ToolCalls, toolCallRecord{Turn: t, Index: i, Name: tool.Name, StatusCode: status,
				StartedAt: unixSeconds(began), CompletedAt: unixSeconds(time.Now())})
		}
	}
	return response{status: 200, body: ans}
}

// agentAggregate is the agent's /aggregate_metrics: it asks the resources
// server for its metrics.
func (f *Fleet) agentAggregate(req request) response {
	status, _, err := f.agent.post(req.ctx, f.resources.base+"/aggregate_metrics", -1, "", map[string]any{})
	if err != nil || status >= 400 {
		return response{status: 500, body: map[string]string{"detail": "Internal Server Error"}}
	}
	return response{status: 200, body: map[string]any{"metrics": map[string]float64{}}}
}

type stepBody struct {
	TaskIndex int     `json:"task_index"`
	Turn      int     `json:"turn"`
	Fail      bool    `json:"fail"`
	ExitCode  int     `json:"exit_code"`
	Verify    string  `json:"verify"`
	Work      float64 `json:"work"`
}

func (f *Fleet) work(b stepBody, scale float64) time.Duration {
	return time.Duration(float64(f.cfg.Latency) * scale * b.Work)
}

// modelCall is the model server's /v1/responses. Its answer carries the
// token usage: its backend's when it has one, else drawn from the seed.
func (f *Fleet) modelCall(req request) response {
	m := f.model
	in := decode[stepBody](req.body)
	sp := noSpan
	ctx := req.ctx
	if m.on(GroupModelCall) {
		ctx, sp = m.semantic(req.ctx, GroupModelCall, req.rollout, "gym.model.responses", attribute.String("nemo.gym.server.name", m.name))
	}
	var u usage
	if f.backend == nil {
		m.sleep(f.work(in, 4))
		u.Input, u.Output = drawTokens(f.cfg.Seed, req.rollout, in.Turn)
	} else if prompt, completion, err := f.callBackend(ctx, req.rollout, map[string]any{"work": in.Work}); err != nil {
		sp.End()
		return response{status: 500, body: map[string]string{"detail": "Internal Server Error"}}
	} else {
		u.Input, u.Output = prompt, completion
		m.sleep(f.work(in, 1))
	}
	u.Total = u.Input + u.Output
	sp.End()
	return response{status: 200, body: map[string]any{
		"id": fmt.Sprintf("resp_%d_%d", req.rollout, in.Turn), "object": "response", "output": []string{"ok"}, "usage": u}}
}

func (f *Fleet) seedSession(req request) response {
	f.sandboxMu.Lock()
	f.sandboxes[req.rollout] = false
	f.sandboxMu.Unlock()
	return response{status: 200, body: map[string]string{"status": "ok"}}
}

func (f *Fleet) simpleTool(req request) response {
	in := decode[stepBody](req.body)
	if in.Fail {
		return response{status: 500, body: map[string]string{"detail": "Internal Server Error"}}
	}
	f.resources.sleep(f.work(in, 0.5))
	return response{status: 200, body: map[string]string{"result": "ok"}}
}

// runCode runs a snippet in the rollout's sandbox, starting it on first use.
func (f *Fleet) runCode(req request) response {
	r := f.resources
	in := decode[stepBody](req.body)
	if in.Fail {
		return response{status: 500, body: map[string]string{"detail": "Internal Server Error"}}
	}
	f.sandboxMu.Lock()
	started := f.sandboxes[req.rollout]
	f.sandboxes[req.rollout] = true
	f.sandboxMu.Unlock()
	if !started {
		sp := noSpan
		if r.on(GroupSandbox) {
			_, sp = r.semantic(req.ctx, GroupSandbox, req.rollout, "gym.sandbox.start", attribute.String("nemo.gym.sandbox.provider", "local"))
		}
		r.sleep(f.work(in, 1))
		sp.End()
	}
	sp := noSpan
	if r.on(GroupSandbox) {
		_, sp = r.semantic(req.ctx, GroupSandbox, req.rollout, "gym.sandbox.exec", attribute.String("nemo.gym.sandbox.provider", "local"))
	}
	r.sleep(f.work(in, 0.5))
	if sp.IsRecording() {
		sp.SetAttributes(attribute.Int("nemo.gym.sandbox.return_code", in.ExitCode))
		if in.ExitCode != 0 {
			sp.SetAttributes(attribute.String("nemo.gym.sandbox.error_type", "nonzero_exit"))
		}
	}
	sp.End()
	return response{status: 200, body: map[string]any{"stdout": "42\n", "return_code": in.ExitCode}}
}

// verify scores the rollout; a raising verifier answers 500.
func (f *Fleet) verify(req request) response {
	r := f.resources
	in := decode[stepBody](req.body)
	defer func() {
		f.sandboxMu.Lock()
		delete(f.sandboxes, req.rollout)
		f.sandboxMu.Unlock()
	}()
	sp := noSpan
	if r.on(GroupVerify) {
		attrs := []attribute.KeyValue{attribute.String("nemo.gym.server.name", r.name)}
		if f.cfg.Observability && req.rid != "" {
			attrs = append(attrs, attribute.String("nemo.gym.rollout.id", req.rid))
		}
		_, sp = r.semantic(req.ctx, GroupVerify, req.rollout, "gym.verify", attrs...)
	}
	defer sp.End()
	began := time.Now()
	r.sleep(f.work(in, 1))
	defer func() { r.meters.verified(req.ctx, time.Since(began), in.Verify == verifyOK) }()
	if in.Verify == verifyRaise {
		(&pyException{typ: "ValueError", message: "verifier blew up",
			file: "/opt/gym/resources_servers/example_single_tool_call/app.py", line: 88, fn: "verify",
			code: `raise ValueError("verifier blew up")`}).record(sp)
		return response{status: 500, body: map[string]string{"detail": "Internal Server Error"}}
	}
	reward := 0.0
	if in.Verify == verifyOK {
		reward = 1
	}
	return response{status: 200, body: map[string]any{"reward": reward}}
}

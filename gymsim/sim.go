package gymsim

import (
	"context"
	"encoding/json"
	"net/http"
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
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				// The driver's /run call carries no rollout id.
				status, _, err := d.post(ctx, f.agent.base+"/run", n, "", map[string]any{"task_index": n})
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
// verify raises (aiohttp's raise_for_status) and the answer is a 500.
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
	plan := planRollout(f.cfg.Seed, in.TaskIndex)
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
		url  string
		body map[string]any
	}{
		{f.resources.base + prefix + "/seed_session", map[string]any{"task_index": n}},
		{a.base + prefix + "/v1/responses", map[string]any{"task_index": n}},
		{f.resources.base + prefix + "/verify", map[string]any{"task_index": n, "verify": plan.Verify, "work": plan.work(15)}},
	}
	for _, c := range calls {
		status, _, err := a.post(ctx, c.url, n, rid, c.body)
		if err != nil {
			return response{status: 500, body: map[string]string{"detail": "Internal Server Error"}}
		}
		if status >= 400 {
			clientResponseError(status, c.url).record(sp)
			return response{status: 500, body: map[string]string{"detail": "Internal Server Error"}}
		}
	}
	return response{status: 200, body: map[string]any{"reward": plan.Verify == verifyOK}}
}

// agentResponses is the agent's /v1/responses: the model/tool loop. A tool
// that fails answers 500 and the agent hands the error to the model.
func (f *Fleet) agentResponses(req request) response {
	a := f.agent
	in := decode[runBody](req.body)
	plan := planRollout(f.cfg.Seed, in.TaskIndex)
	n := plan.Index
	prefix, _ := f.scoped(&plan)
	ctx := req.ctx
	sp := noSpan
	if a.on(GroupAgent) {
		ctx, sp = a.semantic(ctx, GroupAgent, n, "gym.agent.responses", attribute.String("nemo.gym.server.name", a.name))
	}
	defer sp.End()
	step := 0
	for _, turn := range plan.Turns {
		body := map[string]any{"work": plan.work(step)}
		step++
		if _, _, err := a.post(ctx, f.model.base+prefix+"/v1/responses", n, "", body); err != nil {
			return response{status: 500, body: map[string]string{"detail": "Internal Server Error"}}
		}
		for _, tool := range turn.Tools {
			body := map[string]any{"task_index": n, "fail": tool.Fail, "exit_code": tool.ExitCode, "work": plan.work(step)}
			step++
			if _, _, err := a.post(ctx, f.resources.base+"/"+tool.Name, n, "", body); err != nil {
				return response{status: 500, body: map[string]string{"detail": "Internal Server Error"}}
			}
		}
	}
	return response{status: 200, body: map[string]any{"output": "done", "turns": len(plan.Turns)}}
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
	Fail      bool    `json:"fail"`
	ExitCode  int     `json:"exit_code"`
	Verify    string  `json:"verify"`
	Work      float64 `json:"work"`
}

func (f *Fleet) work(b stepBody, scale float64) time.Duration {
	return time.Duration(float64(f.cfg.Latency) * scale * b.Work)
}

// modelCall is the model server's /v1/responses.
func (f *Fleet) modelCall(req request) response {
	m := f.model
	in := decode[stepBody](req.body)
	sp := noSpan
	ctx := req.ctx
	if m.on(GroupModelCall) {
		ctx, sp = m.semantic(req.ctx, GroupModelCall, req.rollout, "gym.model.responses", attribute.String("nemo.gym.server.name", m.name))
	}
	if f.backend == nil {
		m.sleep(f.work(in, 4))
	} else if err := f.callBackend(ctx, req.rollout, map[string]any{"work": in.Work}); err != nil {
		sp.End()
		return response{status: 500, body: map[string]string{"detail": "Internal Server Error"}}
	} else {
		m.sleep(f.work(in, 1))
	}
	sp.End()
	return response{status: 200, body: map[string]any{"output": []string{"ok"}}}
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

package gymsim

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// The files Gym's driver writes beside its output (Config.EvidenceDir), for
// the output stem "rollouts".
const (
	EvidenceResults    = "rollouts.jsonl"
	EvidenceFailures   = "rollouts_failures.jsonl"
	EvidenceInputs     = "rollouts_materialized_inputs.jsonl"
	EvidenceAggregate  = "rollouts_aggregate_metrics.json"
	EvidenceVerdicts   = "rollout_verdicts.jsonl"
	EvidenceModelCalls = "model-calls" // one <rollout_id>.capture.jsonl per rollout
)

// The health checks the verdicts report; both read what the agent measured,
// which only observability records.
const (
	checkModelCalls = "model_call_errors"
	checkToolCalls  = "tool_call_errors"
)

var healthChecks = []string{checkModelCalls, checkToolCalls}

// agentRef names the agent a row ran on.
type agentRef struct {
	Type string `json:"type"`
	Name string `json:"name"`
}

var simpleAgent = agentRef{Type: serverTypes[RoleAgent], Name: agentName}

type message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type createParams struct {
	Input []message `json:"input"`
}

// taskParams is task i's responses_create_params.
func taskParams(task int) createParams {
	return createParams{Input: []message{{Role: "user", Content: fmt.Sprintf("task %d", task)}}}
}

type usage struct {
	Input  int64 `json:"input_tokens"`
	Output int64 `json:"output_tokens"`
	Total  int64 `json:"total_tokens"`
}

type responseObj struct {
	ID     string `json:"id"`
	Object string `json:"object"`
	Output []any  `json:"output"`
	Usage  usage  `json:"usage"`
}

// modelCallRecord is Gym's ModelCallRecord: one model call as the agent
// timed it. Token counts are absent when the call answered none.
type modelCallRecord struct {
	ModelCallID      string  `json:"model_call_id"`
	StartedAt        float64 `json:"started_at"`
	CompletedAt      float64 `json:"completed_at"`
	StatusCode       int     `json:"status_code"`
	FinishReason     string  `json:"finish_reason,omitempty"`
	PromptTokens     *int64  `json:"prompt_tokens,omitempty"`
	CompletionTokens *int64  `json:"completion_tokens,omitempty"`
	LatencyTotalMS   float64 `json:"latency_total_ms"`
	ErrorCategory    string  `json:"error_category,omitempty"`
}

// toolCallRecord is one tool call as the agent saw it.
type toolCallRecord struct {
	Turn        int     `json:"turn"`
	Index       int     `json:"index"`
	Name        string  `json:"name"`
	StatusCode  int     `json:"status_code"`
	StartedAt   float64 `json:"started_at"`
	CompletedAt float64 `json:"completed_at"`
}

// perf is ng_perf; a count nobody measured is absent, never 0.
type perf struct {
	NumTurns         int     `json:"num_turns"`
	NumToolCalls     int     `json:"num_tool_calls"`
	PromptTokens     *int64  `json:"prompt_tokens,omitempty"`
	CompletionTokens *int64  `json:"completion_tokens,omitempty"`
	TotalLatencyMS   float64 `json:"total_latency_ms"`
	TokenCoverage    float64 `json:"token_observability_coverage"`
}

// trajectory is the part of ng_trajectory the health checks read: the tool
// calls (the model calls are the capture).
type trajectory struct {
	SchemaVersion string           `json:"schema_version"`
	TaskID        string           `json:"task_id"`
	RolloutID     string           `json:"rollout_id"`
	ToolCalls     []toolCallRecord `json:"tool_calls"`
}

// runAnswer is the agent's /run answer. A failed rollout answers 500 with
// FastAPI's detail, what failed, and what the agent measured before.
type runAnswer struct {
	Params     createParams      `json:"responses_create_params"`
	Response   *responseObj      `json:"response,omitempty"`
	Reward     *float64          `json:"reward,omitempty"`
	Perf       *perf             `json:"ng_perf,omitempty"`
	Capture    []modelCallRecord `json:"ng_model_call_capture,omitempty"`
	Trajectory *trajectory       `json:"ng_trajectory,omitempty"`
	Detail     string            `json:"detail,omitempty"`
	Error      string            `json:"error,omitempty"`
}

// resultLine is a line of rollouts.jsonl: the agent's answer and the row's
// indices, in Gym's key order.
type resultLine struct {
	Params       createParams      `json:"responses_create_params"`
	Response     responseObj       `json:"response"`
	Reward       float64           `json:"reward"`
	TaskIndex    int               `json:"_ng_task_index"`
	RolloutIndex int               `json:"_ng_rollout_index"`
	AgentRef     agentRef          `json:"agent_ref"`
	Perf         *perf             `json:"ng_perf,omitempty"`
	Capture      []modelCallRecord `json:"ng_model_call_capture,omitempty"`
	Trajectory   *trajectory       `json:"ng_trajectory,omitempty"`
}

type failureLine struct {
	TaskIndex    int      `json:"_ng_task_index"`
	RolloutIndex int      `json:"_ng_rollout_index"`
	AgentRef     agentRef `json:"agent_ref"`
	FailureClass string   `json:"_ng_failure_class"`
	Error        string   `json:"error"`
}

type inputLine struct {
	TaskIndex    int          `json:"_ng_task_index"`
	RolloutIndex int          `json:"_ng_rollout_index"`
	AgentRef     agentRef     `json:"agent_ref"`
	Params       createParams `json:"responses_create_params"`
}

type finding struct {
	Check   string `json:"check"`
	Locator string `json:"locator"`
	Detail  string `json:"detail"`
}

type verdictLine struct {
	TaskIndex    int       `json:"_ng_task_index"`
	RolloutIndex int       `json:"_ng_rollout_index"`
	RolloutID    string    `json:"rollout_id"`
	Verdict      string    `json:"verdict"`
	Findings     []finding `json:"findings"`
	Unobserved   []string  `json:"unobserved"`
}

type stat struct {
	Mean   float64 `json:"mean"`
	Median float64 `json:"median"`
	P90    float64 `json:"p90"`
	P99    float64 `json:"p99"`
}

type aggregateEntry struct {
	AgentRef     agentRef           `json:"agent_ref"`
	AgentMetrics map[string]float64 `json:"agent_metrics"`
	KeyMetrics   map[string]float64 `json:"key_metrics"`
	PerfSummary  map[string]stat    `json:"perf_summary,omitempty"`
}

// evidence writes Gym's rollout files as the driver does: a dispatched row
// at dispatch, each outcome as its rollout completes (so the lines are in
// completion order), one write per line so a reader tailing a file sees
// whole lines, and the aggregate metrics at the end of each collection run.
type evidence struct {
	dir     string
	obs     bool
	perTask int

	mu                                  sync.Mutex
	inputs, results, failures, verdicts *os.File
	err                                 error // the first write error

	rewards  map[int][]float64 // task -> rewards of its successful rollouts
	perfs    map[string][]float64
	ordered  []string // perf keys in the order perf_summary lists them
	written  int      // aggregate writes, for the temporary file's name
	finished bool
}

func openEvidence(dir string, obs bool, perTask int) (*evidence, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("evidence dir: %w", err)
	}
	if obs {
		if err := os.MkdirAll(filepath.Join(dir, EvidenceModelCalls), 0o755); err != nil {
			return nil, fmt.Errorf("evidence dir: %w", err)
		}
	}
	e := &evidence{dir: dir, obs: obs, perTask: perTask, rewards: map[int][]float64{}, perfs: map[string][]float64{},
		ordered: []string{"total_latency_ms", "num_turns", "num_tool_calls", "prompt_tokens", "completion_tokens"}}
	var err error
	open := func(name string) *os.File {
		if err != nil {
			return nil
		}
		var fh *os.File
		// A fresh run starts its files anew, as Gym's driver does.
		fh, err = os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_TRUNC|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			err = fmt.Errorf("evidence: %w", err)
		}
		return fh
	}
	e.inputs = open(EvidenceInputs)
	e.results = open(EvidenceResults)
	e.failures = open(EvidenceFailures)
	e.verdicts = open(EvidenceVerdicts)
	if err != nil {
		_ = e.close()
		return nil, err
	}
	return e, nil
}

// line writes v as one JSON line with one write; e.mu is held.
func (e *evidence) line(fh *os.File, v any) {
	b, err := json.Marshal(v)
	if err == nil {
		_, err = fh.Write(append(b, '\n'))
	}
	if err != nil && e.err == nil {
		e.err = fmt.Errorf("evidence %s: %w", filepath.Base(fh.Name()), err)
	}
}

// dispatched records the row of rollout plan as the driver sends it.
func (e *evidence) dispatched(plan *rolloutPlan) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.line(e.inputs, inputLine{TaskIndex: plan.Task, RolloutIndex: plan.Repeat, AgentRef: simpleAgent, Params: taskParams(plan.Task)})
}

// completed records the outcome of rollout plan: the agent's answer
// (status and body) or the error of the call.
func (e *evidence) completed(plan *rolloutPlan, status int, body []byte, callErr error) {
	var ans runAnswer
	decodeErr := json.Unmarshal(body, &ans)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.obs && len(ans.Capture) > 0 {
		e.capture(plan, ans.Capture)
	}
	fail := failureLine{TaskIndex: plan.Task, RolloutIndex: plan.Repeat, AgentRef: simpleAgent, FailureClass: "http_error"}
	switch {
	case callErr != nil:
		fail.FailureClass, fail.Error = "connection_error", fmt.Sprintf("POST /run: %v", callErr)
	case status != 200:
		fail.Error = ans.Error
		if fail.Error == "" {
			fail.Error = fmt.Sprintf("POST /run answered %d", status)
		}
	case decodeErr != nil || ans.Reward == nil || ans.Response == nil:
		fail.FailureClass, fail.Error = "invalid_response", "POST /run answered no reward"
	default:
		e.line(e.results, resultLine{Params: ans.Params, Response: *ans.Response, Reward: *ans.Reward,
			TaskIndex: plan.Task, RolloutIndex: plan.Repeat, AgentRef: simpleAgent,
			Perf: ans.Perf, Capture: ans.Capture, Trajectory: ans.Trajectory})
		e.line(e.verdicts, e.verdict(plan, &ans))
		e.rewards[plan.Task] = append(e.rewards[plan.Task], *ans.Reward)
		if p := ans.Perf; p != nil {
			e.perfs["total_latency_ms"] = append(e.perfs["total_latency_ms"], p.TotalLatencyMS)
			e.perfs["num_turns"] = append(e.perfs["num_turns"], float64(p.NumTurns))
			e.perfs["num_tool_calls"] = append(e.perfs["num_tool_calls"], float64(p.NumToolCalls))
			if p.PromptTokens != nil && p.CompletionTokens != nil {
				e.perfs["prompt_tokens"] = append(e.perfs["prompt_tokens"], float64(*p.PromptTokens))
				e.perfs["completion_tokens"] = append(e.perfs["completion_tokens"], float64(*p.CompletionTokens))
			}
		}
		return
	}
	e.line(e.failures, fail)
}

// verdict is the health check of a successful rollout: unhealthy when a
// model or tool call answered an error, unobserved without observability.
func (e *evidence) verdict(plan *rolloutPlan, ans *runAnswer) verdictLine {
	v := verdictLine{TaskIndex: plan.Task, RolloutIndex: plan.Repeat, RolloutID: plan.ID, Findings: []finding{}, Unobserved: []string{}}
	if !e.obs || ans.Trajectory == nil {
		v.Verdict, v.Unobserved = "unobserved", append(v.Unobserved, healthChecks...)
		return v
	}
	for i, c := range ans.Capture {
		if c.StatusCode != 200 {
			v.Findings = append(v.Findings, finding{Check: checkModelCalls, Locator: fmt.Sprintf("model_calls[%d]", i),
				Detail: fmt.Sprintf("model call %s answered %d", c.ModelCallID, c.StatusCode)})
		}
	}
	for i, c := range ans.Trajectory.ToolCalls {
		if c.StatusCode >= 400 {
			v.Findings = append(v.Findings, finding{Check: checkToolCalls, Locator: fmt.Sprintf("tool_calls[%d]", i),
				Detail: fmt.Sprintf("turn %d: POST /%s answered %d", c.Turn, c.Name, c.StatusCode)})
		}
	}
	v.Verdict = "healthy"
	if len(v.Findings) > 0 {
		v.Verdict = "unhealthy"
	}
	return v
}

// capture writes the rollout's model-call capture file; e.mu is held.
func (e *evidence) capture(plan *rolloutPlan, recs []modelCallRecord) {
	var b []byte
	for _, r := range recs {
		l, err := json.Marshal(r)
		if err != nil {
			continue
		}
		b = append(append(b, l...), '\n')
	}
	path := filepath.Join(e.dir, EvidenceModelCalls, plan.ID+".capture.jsonl")
	if err := os.WriteFile(path, b, 0o644); err != nil && e.err == nil {
		e.err = fmt.Errorf("evidence: %w", err)
	}
}

// aggregate rewrites the aggregate metrics over every rollout so far; the
// file is replaced whole, so a reader never sees half of it.
func (e *evidence) aggregate() {
	e.mu.Lock()
	defer e.mu.Unlock()
	var all []float64
	passAt1, passAtK := 0.0, 0.0
	tasks := 0
	for _, rs := range e.rewards {
		tasks++
		sum, any1 := 0.0, false
		for _, r := range rs {
			all = append(all, r)
			sum += r
			any1 = any1 || r >= 1
		}
		passAt1 += sum / float64(len(rs))
		if any1 {
			passAtK++
		}
	}
	ent := aggregateEntry{AgentRef: simpleAgent, AgentMetrics: map[string]float64{}, KeyMetrics: map[string]float64{}}
	if len(all) > 0 {
		m := mean(all)
		ent.AgentMetrics["mean/reward"] = m
		ent.KeyMetrics["mean/reward"] = m
		ent.AgentMetrics["pass@1"] = passAt1 / float64(tasks)
		if e.perTask > 1 {
			ent.AgentMetrics[fmt.Sprintf("pass@%d", e.perTask)] = passAtK / float64(tasks)
		}
	}
	for _, k := range e.ordered {
		if vals := e.perfs[k]; len(vals) > 0 {
			if ent.PerfSummary == nil {
				ent.PerfSummary = map[string]stat{}
			}
			s := slices.Clone(vals)
			slices.Sort(s)
			ent.PerfSummary[k] = stat{Mean: mean(s), Median: quantile(s, 0.5), P90: quantile(s, 0.9), P99: quantile(s, 0.99)}
		}
	}
	b, err := json.MarshalIndent([]aggregateEntry{ent}, "", "  ")
	if err == nil {
		e.written++
		tmp := filepath.Join(e.dir, fmt.Sprintf(".%s.%d", EvidenceAggregate, e.written))
		if err = os.WriteFile(tmp, append(b, '\n'), 0o644); err == nil {
			err = os.Rename(tmp, filepath.Join(e.dir, EvidenceAggregate))
		}
	}
	if err != nil && e.err == nil {
		e.err = fmt.Errorf("evidence: %w", err)
	}
}

// close closes the files and returns the first error writing them.
func (e *evidence) close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.finished {
		return e.err
	}
	e.finished = true
	errs := []error{e.err}
	for _, fh := range []*os.File{e.inputs, e.results, e.failures, e.verdicts} {
		if fh != nil {
			errs = append(errs, fh.Close())
		}
	}
	return errors.Join(errs...)
}

func mean(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// quantile of sorted v, interpolated linearly between ranks as numpy does.
func quantile(v []float64, q float64) float64 {
	pos := q * float64(len(v)-1)
	lo := int(math.Floor(pos))
	if lo+1 >= len(v) {
		return v[len(v)-1]
	}
	return v[lo] + (v[lo+1]-v[lo])*(pos-float64(lo))
}

// unixSeconds is t as Gym's capture stamps it: Unix seconds, a float.
func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

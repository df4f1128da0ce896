package evidence

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
)

// ids are the fields that name a row's rollout.
type ids struct {
	explicit      string
	task, index   int32
	attempt       int16
	taskSet, idxS bool
}

// field reads one of the id fields; it reports whether key was one.
func (d *ids) field(key string, v []byte) bool {
	switch key {
	case "_ng_rollout_id":
		d.explicit, _ = text(v)
	case "rollout_id":
		if d.explicit == "" {
			d.explicit, _ = text(v)
		}
	case "_ng_task_index":
		if n, ok := number(v); ok && n >= 0 && n <= math.MaxInt32 {
			d.task, d.taskSet = int32(n), true
		}
	case "_ng_rollout_index":
		if n, ok := number(v); ok && n >= 0 && n <= math.MaxInt32 {
			d.index, d.idxS = int32(n), true
		}
	case "_ng_attempt_index":
		if n, ok := number(v); ok && n >= 0 && n <= math.MaxInt16 {
			d.attempt = int16(n)
		}
	default:
		return false
	}
	return true
}

func (d *ids) id() string {
	task, index := int32(-1), int32(-1)
	if d.taskSet {
		task = d.task
	}
	if d.idxS {
		index = d.index
	}
	return rolloutID(d.explicit, task, index, d.attempt)
}

var errNoID = errors.New("names no rollout: no _ng_rollout_id, nor _ng_task_index and _ng_rollout_index")

// put records the row's ids on its outcome.
func (d *ids) put(o *Outcome) {
	if d.taskSet {
		o.Task = d.task
	}
	if d.idxS {
		o.Index = d.index
	}
	o.Attempt = d.attempt
}

// row reads one row of a JSON-lines file of t's kind.
func (b *builder) row(t *tail, raw []byte) error {
	switch t.kind {
	case Results:
		return b.result(t, raw)
	case Failures, Inputs:
		return b.plain(t, raw)
	case Verdicts:
		return b.verdict(raw)
	case Captures:
		return b.capture(t, raw)
	case RLTrain:
		return b.rl(raw)
	}
	return nil
}

// perf is the part of ng_perf gymtrace shows; pointers tell absent from 0.
type perf struct {
	Turns      *float64 `json:"num_turns"`
	Tools      *float64 `json:"num_tool_calls"`
	Prompt     *float64 `json:"prompt_tokens"`
	Completion *float64 `json:"completion_tokens"`
	Latency    *float64 `json:"total_latency_ms"`
}

type usage struct {
	Usage *struct {
		In  *float64 `json:"input_tokens"`
		Out *float64 `json:"output_tokens"`
	} `json:"usage"`
}

func count32(p *float64) int32 {
	if p == nil || *p < 0 || *p > math.MaxInt32 {
		return -1
	}
	return int32(*p)
}

func (b *builder) result(t *tail, raw []byte) error {
	var d ids
	var reward []byte
	var pf, resp, calls []byte
	err := eachField(raw, func(k, v []byte) error {
		key := string(k)
		if d.field(key, v) {
			return nil
		}
		switch key {
		case "reward":
			reward = v
		case "ng_perf":
			pf = v
		case "response":
			resp = v
		case "ng_model_call_capture":
			calls = v
		}
		return nil
	})
	if err != nil {
		return err
	}
	id := d.id()
	if id == "" {
		return errNoID
	}
	r, hasReward := number(reward)
	if !hasReward && len(reward) > 0 && string(reward) != "null" {
		return errors.New("reward is not a number")
	}
	o := b.at(id)
	d.put(o)
	o.State, o.File, o.Line = Succeeded, t.idx, int32(t.line)
	if hasReward {
		o.Reward = r
	}
	if len(pf) > 0 && pf[0] == '{' {
		var p perf
		if json.Unmarshal(pf, &p) == nil {
			o.Turns, o.Tools = count32(p.Turns), count32(p.Tools)
			o.InTokens, o.OutTokens = count32(p.Prompt), count32(p.Completion)
			if p.Latency != nil {
				o.LatencyMS = *p.Latency
			}
		}
	}
	if o.InTokens < 0 && len(resp) > 0 && resp[0] == '{' {
		if u := responseUsage(resp); u.Usage != nil {
			o.InTokens, o.OutTokens = count32(u.Usage.In), count32(u.Usage.Out)
		}
	}
	if len(calls) > 0 && calls[0] == '[' {
		b.captureList(id, calls)
	}
	return nil
}

// responseUsage reads response.usage alone: a response's output is large.
func responseUsage(resp []byte) usage {
	var u usage
	_ = eachField(resp, func(k, v []byte) error {
		if string(k) == "usage" {
			_ = json.Unmarshal([]byte(`{"usage":`+string(v)+`}`), &u)
		}
		return nil
	})
	return u
}

// plain reads a failure row or a materialized input.
func (b *builder) plain(t *tail, raw []byte) error {
	var d ids
	var class string
	err := eachField(raw, func(k, v []byte) error {
		key := string(k)
		if !d.field(key, v) && key == "_ng_failure_class" {
			class, _ = text(v)
		}
		return nil
	})
	if err != nil {
		return err
	}
	id := d.id()
	if id == "" {
		return errNoID
	}
	o := b.at(id)
	d.put(o)
	if t.kind == Inputs {
		if o.State < Dispatched {
			o.State = Dispatched
		}
		return nil
	}
	if class == "" {
		class = "unclassified"
	}
	o.Failure = b.intern(class)
	if o.State < Failed {
		o.State, o.File, o.Line = Failed, t.idx, int32(t.line)
	}
	return nil
}

type finding struct {
	Check string `json:"check"`
}

func (b *builder) verdict(raw []byte) error {
	var d ids
	var verdict string
	var findings []finding
	err := eachField(raw, func(k, v []byte) error {
		key := string(k)
		if d.field(key, v) {
			return nil
		}
		switch key {
		case "verdict":
			verdict, _ = text(v)
		case "findings":
			if json.Unmarshal(v, &findings) != nil {
				return errors.New("findings is not a list of {check, locator, detail}")
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	v, ok := parseVerdict(verdict)
	if !ok {
		return errors.New("verdict " + quote(verdict) + " is not healthy, unhealthy or unobserved")
	}
	id := d.id()
	if id == "" {
		return errNoID
	}
	o := b.at(id)
	d.put(o)
	o.Verdict, o.Findings = v, int16(min(len(findings), math.MaxInt16))
	if len(findings) > 0 {
		o.Finding = b.intern(findings[0].Check)
	}
	return nil
}

func quote(s string) string {
	q, _ := json.Marshal(s)
	return string(q)
}

// call is the part of a ModelCallRecord gymtrace reads.
type call struct {
	ID        string   `json:"rollout_id"`
	Started   *float64 `json:"started_at"`
	Completed *float64 `json:"completed_at"`
	Status    *float64 `json:"status_code"`
	ErrorCat  *string  `json:"error_category"`
}

// capture reads one ModelCallRecord of <rollout_id>.capture.jsonl.
func (b *builder) capture(t *tail, raw []byte) error {
	var c call
	if err := json.Unmarshal(raw, &c); err != nil {
		return errors.New("not a model-call record: " + err.Error())
	}
	id := NormalizeID(c.ID)
	if id == "" {
		id = NormalizeID(strings.TrimSuffix(strings.TrimSuffix(t.fileName, ".jsonl"), ".capture"))
	}
	if id == "" {
		return errNoID
	}
	b.addCall(id, &c)
	return nil
}

func (b *builder) captureList(id string, raw []byte) {
	var cs []call
	if json.Unmarshal(raw, &cs) != nil {
		return
	}
	o := b.at(id)
	o.Calls, o.CallErrors = 0, 0 // the row's own list is the whole of it
	for i := range cs {
		b.addCall(id, &cs[i])
	}
}

func (b *builder) addCall(id string, c *call) {
	o := b.at(id)
	if o.Calls < 0 {
		o.Calls = 0
	}
	o.Calls++
	if c.Status != nil && *c.Status >= 400 || c.ErrorCat != nil && *c.ErrorCat != "" {
		o.CallErrors++
	}
	if c.Started != nil && c.Completed != nil && *c.Completed >= *c.Started {
		b.windows = append(b.windows, Window{Outcome: b.byID[id], Start: secondsNS(*c.Started), End: secondsNS(*c.Completed)})
	}
}

func secondsNS(s float64) int64 { return int64(s * 1e9) }

func (b *builder) rl(raw []byte) error {
	var row struct {
		Rewards []float64 `json:"rewards"`
	}
	if err := json.Unmarshal(raw, &row); err != nil {
		return errors.New("not a NeMo-RL train-data row: " + err.Error())
	}
	b.rlRows++
	b.rlRew += len(row.Rewards)
	return nil
}

// doc reads a whole-document file: aggregate metrics or a quality summary.
func (b *builder) doc(body []byte, t *tail) (Kind, int) {
	var list []struct {
		Agent struct {
			Name string `json:"name"`
		} `json:"agent_ref"`
		Metrics map[string]any `json:"agent_metrics"`
		Perf    any            `json:"perf_summary"`
	}
	if json.Unmarshal(body, &list) == nil {
		var agents []AgentMetrics
		for _, e := range list {
			if e.Metrics == nil && e.Perf == nil {
				return NotEvidence, 0
			}
			m := AgentMetrics{Agent: e.Agent.Name, MeanReward: math.NaN()}
			if v, ok := e.Metrics["mean/reward"].(float64); ok {
				m.MeanReward = v
			}
			agents = append(agents, m)
		}
		if len(agents) == 0 {
			return NotEvidence, 0
		}
		b.agents = agents
		return Aggregate, len(agents)
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(body, &obj) != nil {
		return NotEvidence, 0
	}
	if _, ok := obj["agent_metrics"]; ok {
		var one struct {
			Metrics map[string]any `json:"agent_metrics"`
		}
		_ = json.Unmarshal(body, &one)
		m := AgentMetrics{MeanReward: math.NaN()}
		if v, ok := one.Metrics["mean/reward"].(float64); ok {
			m.MeanReward = v
		}
		b.agents = []AgentMetrics{m}
		return Aggregate, 1
	}
	if _, ok := obj["run"]; ok {
		if _, ok := obj["tasks"]; ok {
			return Quality, 1
		}
	}
	return NotEvidence, 0
}

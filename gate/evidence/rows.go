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
func (d *ids) field(key []byte, v []byte) bool {
	switch string(key) { // no allocation: the compiler compares in place
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

// count32 reads a count; -1 (unknown) for anything but one.
func count32(v []byte) int32 {
	f, ok := number(v)
	if !ok || f < 0 || f > math.MaxInt32 {
		return -1
	}
	return int32(f)
}

func (b *builder) result(t *tail, raw []byte) error {
	var d ids
	var reward []byte
	var pf, resp, calls []byte
	err := eachField(raw, func(k, v []byte) error {
		if d.field(k, v) {
			return nil
		}
		switch string(k) {
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
		_ = eachField(pf, func(k, v []byte) error {
			switch string(k) {
			case "num_turns":
				o.Turns = count16(v)
			case "num_tool_calls":
				o.Tools = count16(v)
			case "prompt_tokens":
				o.InTokens = count32(v)
			case "completion_tokens":
				o.OutTokens = count32(v)
			case "total_latency_ms":
				if f, ok := number(v); ok {
					o.LatencyMS = f
				}
			}
			return nil
		})
	}
	if o.InTokens < 0 && len(resp) > 0 && resp[0] == '{' {
		// response.usage alone: a response's output is large.
		_ = eachField(resp, func(k, v []byte) error {
			if string(k) == "usage" && len(v) > 0 && v[0] == '{' {
				_ = eachField(v, func(k, v []byte) error {
					switch string(k) {
					case "input_tokens":
						o.InTokens = count32(v)
					case "output_tokens":
						o.OutTokens = count32(v)
					}
					return nil
				})
			}
			return nil
		})
	}
	if len(calls) > 0 && calls[0] == '[' {
		// The row's own list is the whole of the attempt's calls: counts a
		// capture file gave are replaced, its windows kept (the same calls).
		windows := o.calls != fromFile
		o.Calls, o.CallErrors, o.calls = 0, 0, fromRow
		_ = eachElem(calls, func(v []byte) error {
			c, err := readCall(v)
			if err == nil {
				c.timed = c.timed && windows
				b.addCall(id, &c)
			}
			return nil
		})
	}
	return nil
}

// plain reads a failure row or a materialized input.
func (b *builder) plain(t *tail, raw []byte) error {
	var d ids
	var class string
	err := eachField(raw, func(k, v []byte) error {
		if !d.field(k, v) && string(k) == "_ng_failure_class" {
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
		if d.field(k, v) {
			return nil
		}
		switch string(k) {
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

// callSource is where an outcome's model calls were read.
type callSource uint8

const (
	noCalls  callSource = iota
	fromFile            // <rollout_id>.capture.jsonl
	fromRow             // the result row's ng_model_call_capture
)

// call is the part of a ModelCallRecord gymtrace reads.
type call struct {
	id                 string
	started, completed float64
	timed, failed      bool
}

// readCall reads a ModelCallRecord: its times, whether it failed (a
// status of 400 or more, or an error category), its rollout when named.
func readCall(raw []byte) (call, error) {
	var c call
	var start, end float64
	var hasStart, hasEnd bool
	err := eachField(raw, func(k, v []byte) error {
		switch string(k) {
		case "rollout_id":
			c.id, _ = text(v)
		case "started_at":
			start, hasStart = number(v)
		case "completed_at":
			end, hasEnd = number(v)
		case "status_code":
			if f, ok := number(v); ok && f >= 400 {
				c.failed = true
			}
		case "error_category":
			if s, ok := text(v); ok && s != "" {
				c.failed = true
			}
		}
		return nil
	})
	if hasStart && hasEnd && end >= start {
		c.started, c.completed, c.timed = start, end, true
	}
	return c, err
}

// capture reads one ModelCallRecord of <rollout_id>.capture.jsonl.
func (b *builder) capture(t *tail, raw []byte) error {
	c, err := readCall(raw)
	if err != nil {
		return errors.New("not a model-call record: " + err.Error())
	}
	id := NormalizeID(c.id)
	if id == "" {
		id = NormalizeID(strings.TrimSuffix(strings.TrimSuffix(t.fileName, ".jsonl"), ".capture"))
	}
	if id == "" {
		return errNoID
	}
	if o := b.at(id); o.calls != fromRow {
		o.calls = fromFile
		b.addCall(id, &c)
	}
	return nil
}

func (b *builder) addCall(id string, c *call) {
	o := b.at(id)
	if o.Calls < 0 {
		o.Calls = 0
	}
	o.Calls = min(o.Calls+1, math.MaxInt16)
	if c.failed && o.CallErrors < math.MaxInt16 {
		o.CallErrors++
	}
	if c.timed {
		start := secondsNS(c.started)
		b.windows = append(b.windows, Window{Outcome: b.byID[id], Start: start,
			Micros: uint32(min((secondsNS(c.completed)-start)/1e3, math.MaxUint32))})
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

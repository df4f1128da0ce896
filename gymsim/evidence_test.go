package gymsim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// readLines reads a JSON lines file into one key → raw value map per line,
// failing on a line that is not one JSON object or whose keys are not
// exactly want plus any of maybe.
func readLines(t *testing.T, path string, want, maybe []string) []map[string]json.RawMessage {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]json.RawMessage
	for i, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if l == "" {
			continue
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%s:%d: %v", filepath.Base(path), i+1, err)
		}
		for _, k := range want {
			if _, ok := m[k]; !ok {
				t.Fatalf("%s:%d: no %q in %s", filepath.Base(path), i+1, k, l)
			}
		}
		for k := range m {
			if !slices.Contains(want, k) && !slices.Contains(maybe, k) {
				t.Fatalf("%s:%d: unexpected key %q in %s", filepath.Base(path), i+1, k, l)
			}
		}
		out = append(out, m)
	}
	return out
}

func field[T any](t *testing.T, m map[string]json.RawMessage, k string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(m[k], &v); err != nil {
		t.Fatalf("%s: %v in %s", k, err, m[k])
	}
	return v
}

// idOf is Gym's rollout id of a row: "<task>-<repeat>".
func idOf(t *testing.T, m map[string]json.RawMessage) string {
	return fmt.Sprintf("%d-%d", field[int](t, m, "_ng_task_index"), field[int](t, m, "_ng_rollout_index"))
}

// tail polls path while the fleet runs and reports the line counts it saw.
func tail(path string, done <-chan struct{}) <-chan []int {
	out := make(chan []int, 1)
	go func() {
		var seen []int
		for {
			b, _ := os.ReadFile(path)
			n := bytes.Count(b, []byte("\n"))
			if len(seen) == 0 || seen[len(seen)-1] != n {
				seen = append(seen, n)
			}
			select {
			case <-done:
				out <- seen
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	return out
}

// TestEvidenceMatchesTruth: with observability on, every file the fleet
// writes is JSON lines of Gym's shapes, and says what the fleet's own
// record says: every dispatched rollout once, the ids the spans were made
// for, a failure exactly where verify raised (its span ERROR), rewards as
// the plan's verify decided, lines in the order the driver's /run calls
// ended (not the order they started), model calls timed around the model
// server's spans, unhealthy verdicts exactly where a tool's server span
// answered 500; and rollouts.jsonl grows while the fleet runs.
func TestEvidenceMatchesTruth(t *testing.T) {
	dir := t.TempDir()
	const rollouts, perTask = 24, 3
	cfg := Config{Seed: 7, Spec: "all", Protocol: "none", RecordTruth: true, Observability: true,
		Rollouts: rollouts, RolloutsPerTask: perTask, Concurrency: 8, Latency: 10 * time.Millisecond, EvidenceDir: dir}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	f, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	seen := tail(filepath.Join(dir, EvidenceResults), f.Done())
	f.Wait()
	if err := f.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if counts := <-seen; len(counts) < 3 {
		t.Errorf("rollouts.jsonl seen with line counts %v while the fleet ran: it did not grow rollout by rollout", counts)
	}
	truth := f.Truth()

	// The fleet's record: each rollout's id, the end of the driver's /run
	// call, whether verify raised, its model server spans and its tool
	// calls that answered 500.
	type rec struct {
		id          string
		runEnd      time.Time
		verifyErr   bool
		model       []TruthSpan
		toolErrors  int
		tools       int
		runDuration time.Duration
	}
	recs := map[int]*rec{}
	get := func(n int) *rec {
		if recs[n] == nil {
			recs[n] = &rec{}
		}
		return recs[n]
	}
	for _, s := range truth {
		if s.Rollout < 0 {
			continue
		}
		r := get(s.Rollout)
		r.id = s.RolloutID
		switch {
		case s.Role == RoleDriver && s.Kind == trace.SpanKindClient:
			r.runEnd, r.runDuration = s.End, s.End.Sub(s.Start)
		case s.Name == "gym.verify":
			r.verifyErr = s.Status == codes.Error
		case s.Name == "gym.model.responses":
			r.model = append(r.model, s)
		case s.Role == RoleResources && s.Kind == trace.SpanKindServer && slices.Contains([]string{"POST /get_weather", "POST /search_web", "POST /run_code"}, s.Name):
			r.tools++
			if s.Status == codes.Error {
				r.toolErrors++
			}
		}
	}
	byID := map[string]int{}
	for n, r := range recs {
		if r.runEnd.IsZero() {
			t.Fatalf("rollout %d: no driver /run span in the truth", n)
		}
		if task, repeat := n/perTask, n%perTask; r.id != fmt.Sprintf("%d-%d", task, repeat) {
			t.Fatalf("rollout %d: truth id %q, want task %d repeat %d", n, r.id, task, repeat)
		}
		byID[r.id] = n
		sort.Slice(r.model, func(i, j int) bool { return r.model[i].Start.Before(r.model[j].Start) })
	}
	if len(recs) != rollouts {
		t.Fatalf("%d rollouts in the truth, want %d", len(recs), rollouts)
	}

	ref := `{"type":"responses_api_agents","name":"simple_agent"}`
	inputs := readLines(t, filepath.Join(dir, EvidenceInputs), []string{"_ng_task_index", "_ng_rollout_index", "agent_ref", "responses_create_params"}, nil)
	if len(inputs) != rollouts {
		t.Fatalf("%d materialized inputs, want %d", len(inputs), rollouts)
	}
	for i, m := range inputs {
		// Dispatched in order.
		if id := idOf(t, m); id != recs[i].id || string(m["agent_ref"]) != ref {
			t.Fatalf("input %d: %s, agent_ref %s; want rollout %s", i, id, m["agent_ref"], recs[i].id)
		}
	}

	results := readLines(t, filepath.Join(dir, EvidenceResults),
		[]string{"responses_create_params", "response", "reward", "_ng_task_index", "_ng_rollout_index", "agent_ref", "ng_perf", "ng_model_call_capture", "ng_trajectory"}, nil)
	failures := readLines(t, filepath.Join(dir, EvidenceFailures), []string{"_ng_task_index", "_ng_rollout_index", "agent_ref", "_ng_failure_class", "error"}, nil)
	outcome := map[string]bool{}
	var failed int
	for _, m := range failures {
		id := idOf(t, m)
		r := recs[byID[id]]
		if _, ok := byID[id]; !ok || !r.verifyErr || outcome[id] {
			t.Errorf("failure row %s: in the truth %v, verify error %v, seen before %v", id, ok, r != nil && r.verifyErr, outcome[id])
		}
		if c, e := field[string](t, m, "_ng_failure_class"), field[string](t, m, "error"); c != "http_error" || e != "POST /verify answered 500" {
			t.Errorf("failure row %s: class %q, error %q", id, c, e)
		}
		outcome[id] = true
		failed++
	}
	rewards := map[int][]float64{}
	var order []int
	for _, m := range results {
		id := idOf(t, m)
		n, ok := byID[id]
		if !ok || outcome[id] {
			t.Fatalf("result %s: in the truth %v, seen before %v", id, ok, outcome[id])
		}
		outcome[id] = true
		order = append(order, n)
		r := recs[n]
		if r.verifyErr {
			t.Errorf("result %s: its verify span is ERROR", id)
		}
		plan := f.plan(n)
		reward := field[float64](t, m, "reward")
		if want := map[string]float64{verifyOK: 1, verifyZero: 0}[plan.Verify]; reward != want || plan.Verify == verifyRaise {
			t.Errorf("result %s: reward %g, the plan's verify %s", id, reward, plan.Verify)
		}
		rewards[plan.Task] = append(rewards[plan.Task], reward)

		var caps []modelCallRecord
		if err := json.Unmarshal(m["ng_model_call_capture"], &caps); err != nil {
			t.Fatal(err)
		}
		if len(caps) != len(r.model) {
			t.Fatalf("result %s: %d model calls captured, %d model server spans", id, len(caps), len(r.model))
		}
		var in, out int64
		const slack = 1e-3 // float seconds
		for i, c := range caps {
			s := r.model[i]
			if c.StartedAt > unixSeconds(s.Start)+slack || c.CompletedAt < unixSeconds(s.End)-slack || c.StatusCode != 200 || c.PromptTokens == nil {
				t.Errorf("result %s: model call %d %+v does not hold its span [%f, %f]", id, i, c, unixSeconds(s.Start), unixSeconds(s.End))
				continue
			}
			in += *c.PromptTokens
			out += *c.CompletionTokens
		}
		resp := field[responseObj](t, m, "response")
		if resp.Usage.Input != in || resp.Usage.Output != out || resp.Usage.Total != in+out || resp.Object != "response" || resp.ID == "" {
			t.Errorf("result %s: response %+v, the capture sums to %d in, %d out", id, resp, in, out)
		}
		p := field[perf](t, m, "ng_perf")
		if p.NumTurns != len(r.model) || p.NumToolCalls != r.tools || *p.PromptTokens != in || p.TokenCoverage != 1 ||
			p.TotalLatencyMS <= 0 || p.TotalLatencyMS > ms(r.runDuration)+1 {
			t.Errorf("result %s: ng_perf %+v; truth: %d model calls, %d tool calls, /run %v", id, p, len(r.model), r.tools, r.runDuration)
		}
		// The capture file holds the same records.
		b, err := os.ReadFile(filepath.Join(dir, EvidenceModelCalls, id+".capture.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		var fromFile []modelCallRecord
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var c modelCallRecord
			if err := json.Unmarshal([]byte(l), &c); err != nil {
				t.Fatalf("%s.capture.jsonl: %v", id, err)
			}
			fromFile = append(fromFile, c)
		}
		if !reflect.DeepEqual(fromFile, caps) {
			t.Errorf("%s.capture.jsonl differs from its row's ng_model_call_capture", id)
		}
	}
	if len(outcome) != rollouts || failed == 0 {
		t.Fatalf("%d outcomes for %d rollouts, %d failed (want some: pick a seed with a raising verify)", len(outcome), rollouts, failed)
	}
	// Completion order: a line never comes after one whose /run call ended
	// clearly later (the slack absorbs the write after the span's end), and
	// the order is not the order of dispatch.
	inverted := false
	for i := range order {
		for j := i + 1; j < len(order); j++ {
			a, b := recs[order[i]], recs[order[j]]
			if a.runEnd.Sub(b.runEnd) > 30*time.Millisecond {
				t.Errorf("rollouts.jsonl lists %s before %s, whose /run ended %v earlier", a.id, b.id, a.runEnd.Sub(b.runEnd))
			}
			if order[i] > order[j] && b.runEnd.Sub(a.runEnd) > 30*time.Millisecond {
				inverted = true
			}
		}
	}
	if !inverted {
		t.Errorf("rollouts.jsonl in dispatch order %v: no rollout finished clearly before one started earlier", order)
	}
	sometimes := false
	for _, rs := range rewards {
		sometimes = sometimes || (slices.Contains(rs, 0) && slices.Contains(rs, 1))
	}
	if !sometimes {
		t.Errorf("no task sometimes passes: %v", rewards)
	}

	verdicts := readLines(t, filepath.Join(dir, EvidenceVerdicts), []string{"_ng_task_index", "_ng_rollout_index", "rollout_id", "verdict", "findings", "unobserved"}, nil)
	unhealthy := 0
	for i, m := range verdicts {
		id := field[string](t, m, "rollout_id")
		if id != idOf(t, m) || id != recs[order[i]].id {
			t.Fatalf("verdict %d: rollout %s (%s), want %s, in the order of rollouts.jsonl", i, id, idOf(t, m), recs[order[i]].id)
		}
		var fs []finding
		_ = json.Unmarshal(m["findings"], &fs)
		r := recs[order[i]]
		want := "healthy"
		if r.toolErrors > 0 {
			want = "unhealthy"
			unhealthy++
		}
		if v := field[string](t, m, "verdict"); v != want || len(fs) != r.toolErrors || string(m["unobserved"]) != "[]" {
			t.Errorf("verdict %s: %s %s, unobserved %s; truth: %d tool calls answered 500", id, v, m["findings"], m["unobserved"], r.toolErrors)
		}
		for _, fd := range fs {
			if fd.Check != checkToolCalls || !strings.Contains(fd.Detail, "answered 500") || fd.Locator == "" {
				t.Errorf("verdict %s: finding %+v", id, fd)
			}
		}
	}
	if len(verdicts) != len(results) || unhealthy == 0 {
		t.Errorf("%d verdicts for %d results, %d unhealthy (want some: pick a seed with a failing tool)", len(verdicts), len(results), unhealthy)
	}

	checkAggregate(t, dir, results, true)
}

// checkAggregate checks the aggregate metrics against the results' rewards.
func checkAggregate(t *testing.T, dir string, results []map[string]json.RawMessage, perfWanted bool) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, EvidenceAggregate))
	if err != nil {
		t.Fatal(err)
	}
	var agg []map[string]json.RawMessage
	if err := json.Unmarshal(b, &agg); err != nil || len(agg) != 1 {
		t.Fatalf("aggregate metrics %s: %v", b, err)
	}
	sum := 0.0
	for _, m := range results {
		sum += field[float64](t, m, "reward")
	}
	am := field[map[string]float64](t, agg[0], "agent_metrics")
	if want := sum / float64(len(results)); am["mean/reward"] != want || field[agentRef](t, agg[0], "agent_ref") != simpleAgent {
		t.Errorf("aggregate %s: mean/reward, want %g", b, want)
	}
	ps, ok := agg[0]["perf_summary"]
	if ok != perfWanted {
		t.Fatalf("aggregate %s: perf_summary there %v, want %v", b, ok, perfWanted)
	}
	if ok {
		var s map[string]stat
		_ = json.Unmarshal(ps, &s)
		if l := s["total_latency_ms"]; l.Mean <= 0 || l.Median > l.P90 || l.P90 > l.P99 {
			t.Errorf("perf_summary %s", ps)
		}
	}
}

// TestEvidenceWithoutObservability: observability off, rows carry no
// ng_perf or capture, verdicts are unobserved, no capture folder is made;
// the usage of each row is what the model backend answered for it.
func TestEvidenceWithoutObservability(t *testing.T) {
	dir := t.TempDir()
	f := runFleet(t, Config{Seed: 7, Spec: "default", Protocol: "none", Rollouts: 8, ModelBackend: BackendVLLM, EvidenceDir: dir})
	results := readLines(t, filepath.Join(dir, EvidenceResults), []string{"responses_create_params", "response", "reward", "_ng_task_index", "_ng_rollout_index", "agent_ref"}, nil)
	failures := readLines(t, filepath.Join(dir, EvidenceFailures), []string{"_ng_task_index", "_ng_rollout_index", "agent_ref", "_ng_failure_class", "error"}, nil)
	if len(results)+len(failures) != 8 || int64(len(failures)) != f.Stats().Failed {
		t.Fatalf("%d results, %d failures; the fleet counted %d failed of 8", len(results), len(failures), f.Stats().Failed)
	}
	tokens := f.Tokens()
	for _, m := range results {
		n := field[int](t, m, "_ng_task_index") // one rollout per task
		u := field[responseObj](t, m, "response").Usage
		if want := tokens[n]; u.Input != want.Input || u.Output != want.Output || want.Calls == 0 {
			t.Errorf("rollout %d: usage %+v, the backend answered %+v", n, u, want)
		}
	}
	verdicts := readLines(t, filepath.Join(dir, EvidenceVerdicts), []string{"_ng_task_index", "_ng_rollout_index", "rollout_id", "verdict", "findings", "unobserved"}, nil)
	for _, m := range verdicts {
		if v := field[string](t, m, "verdict"); v != "unobserved" || string(m["unobserved"]) != `["model_call_errors","tool_call_errors"]` {
			t.Errorf("verdict %s %s without observability", v, m["unobserved"])
		}
	}
	if len(verdicts) != len(results) {
		t.Errorf("%d verdicts, %d results", len(verdicts), len(results))
	}
	if _, err := os.Stat(filepath.Join(dir, EvidenceModelCalls)); !os.IsNotExist(err) {
		t.Errorf("model-calls folder without observability: %v", err)
	}
	checkAggregate(t, dir, results, false)
}

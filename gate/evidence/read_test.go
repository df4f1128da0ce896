package evidence

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"
)

const realObs1 = "../../testdata/real-gym/s41-obs1-iso/all/evidence"

func TestReadRealEvidence(t *testing.T) {
	s, err := Read(realObs1)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[Kind]int{}
	for _, f := range s.Files {
		kinds[f.Kind] += f.Rows
	}
	if kinds[Results] != 17 || kinds[Failures] != 3 || kinds[Inputs] != 20 {
		t.Fatalf("rows by kind = %v, want 17 results, 3 failures, 20 inputs", kinds)
	}
	ok, failed, disp, other := s.Counts()
	if ok != 17 || failed != 3 || disp != 0 || other != 0 {
		t.Fatalf("Counts = %d %d %d %d, want 17 3 0 0", ok, failed, disp, other)
	}
	o := s.Of("2-0")
	if o == nil || o.Reward != 0 || o.InTokens != 102 || o.OutTokens != 22 || o.Task != 2 {
		t.Fatalf("Of(2-0) = %+v", o)
	}
	if o := s.Of("2:0"); o == nil || o.ID != "2-0" {
		t.Fatalf("the alias 2:0 reads %+v", o)
	}
	if o := s.Of("1-0"); o == nil || o.State != Failed || o.Failure != "http_error" {
		t.Fatalf("Of(1-0) = %+v, want failed http_error", o)
	}
}

func write(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReadKindsByContent(t *testing.T) {
	dir := t.TempDir()
	// Names that say nothing: the kind is told by content.
	write(t, dir, "a.jsonl", `{"_ng_task_index": 0, "_ng_rollout_index": 1, "reward": 0.5, "ng_perf": {"num_turns": 3, "total_latency_ms": 812.5}}`+"\n")
	write(t, dir, "b.jsonl", `{"rollout_id": "0-1", "verdict": "unhealthy", "findings": [{"check": "tool_call_failed", "locator": "t1", "detail": "500"}], "unobserved": []}`+"\n")
	write(t, dir, "model-calls/0-1.capture.jsonl", `{"model_call_id": "m1", "started_at": 1700000000.5, "completed_at": 1700000001.0, "status_code": 500}`+"\n"+`{"model_call_id": "m2", "started_at": 1700000001.5, "completed_at": 1700000002.0, "status_code": 200}`+"\n")
	write(t, dir, "c.json", "[\n  {\"agent_ref\": {\"name\": \"simple_agent\"}, \"agent_metrics\": {\"mean/reward\": 0.5}}\n]\n")
	write(t, dir, "d.jsonl", `{"rewards": [1, 0, 1], "idx": [0, 1, 2]}`+"\n")
	write(t, dir, "traces.jsonl", `{"resourceSpans": []}`+"\n")
	s, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Kind{}
	for _, f := range s.Files {
		got[filepath.Base(f.Path)] = f.Kind
	}
	want := map[string]Kind{"a.jsonl": Results, "b.jsonl": Verdicts, "0-1.capture.jsonl": Captures, "c.json": Aggregate, "d.jsonl": RLTrain, "traces.jsonl": NotEvidence}
	for name, k := range want {
		if got[name] != k {
			t.Errorf("%s read as %v, want %v", name, got[name], k)
		}
	}
	o := s.Of("0-1")
	if o == nil || o.Reward != 0.5 || o.Turns != 3 || o.LatencyMS != 812.5 || o.Verdict != Unhealthy || o.Finding != "tool_call_failed" || o.Calls != 2 || o.CallErrors != 1 {
		t.Fatalf("Of(0-1) = %+v", o)
	}
	if o.Tools != -1 || o.InTokens != -1 {
		t.Errorf("absent perf fields read as %d, %d, want -1 (unknown)", o.Tools, o.InTokens)
	}
	if s.RLRows != 1 || s.RLRewards != 3 || len(s.Agents) != 1 || s.Agents[0].MeanReward != 0.5 {
		t.Errorf("RL %d/%d, agents %+v", s.RLRows, s.RLRewards, s.Agents)
	}
	if len(s.Windows()) != 2 {
		t.Errorf("windows = %v, want 2", s.Windows())
	}
}

func TestReadMalformedLinesNamed(t *testing.T) {
	dir := t.TempDir()
	p := write(t, dir, "rollouts.jsonl", strings.Join([]string{
		`{"_ng_task_index": 0, "_ng_rollout_index": 0, "reward": 1}`,
		`{"_ng_task_index": 1, "_ng_rollout_index": 0, "reward": 1`,
		`not json`,
		`{"reward": 1}`,
		`{"_ng_task_index": 2, "_ng_rollout_index": 0, "reward": "high"}`,
		`{"_ng_task_index": 3, "_ng_rollout_index": 0, "reward": 0}`,
	}, "\n")+"\n")
	s, err := Read(p)
	if err != nil {
		t.Fatal(err)
	}
	if s.Len() != 2 || s.Of("0-0") == nil || s.Of("3-0") == nil {
		t.Fatalf("kept %d outcomes, want 0-0 and 3-0", s.Len())
	}
	if s.BadTotal != 4 || len(s.Bad) != 4 {
		t.Fatalf("bad = %d %v, want 4", s.BadTotal, s.Bad)
	}
	for i, line := range []int{2, 3, 4, 5} {
		if s.Bad[i].Line != line || s.Bad[i].Path != p {
			t.Errorf("bad[%d] = %v, want %s:%d", i, s.Bad[i], p, line)
		}
	}
	if !strings.Contains(s.Bad[2].String(), "names no rollout") {
		t.Errorf("bad[2] = %q", s.Bad[2])
	}
}

func TestReaderTailsGrowingFiles(t *testing.T) {
	dir := t.TempDir()
	p := write(t, dir, "rollouts.jsonl", `{"_ng_task_index": 0, "_ng_rollout_index": 0, "reward": 1}`+"\n"+`{"_ng_task_index": 1, "_ng_rol`)
	r := NewReader(dir)
	s1, changed, err := r.Poll()
	if err != nil || !changed || s1.Len() != 1 {
		t.Fatalf("first poll: %v %v %d", err, changed, s1.Len())
	}
	if _, changed, _ := r.Poll(); changed {
		t.Fatal("a poll with nothing new reports a change")
	}
	f, _ := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`lout_index": 0, "reward": 0}` + "\n")
	f.Close()
	write(t, dir, "rollouts_failures.jsonl", `{"_ng_task_index": 2, "_ng_rollout_index": 0, "_ng_failure_class": "timeout"}`+"\n")
	s2, changed, err := r.Poll()
	if err != nil || !changed || s2.Len() != 3 {
		t.Fatalf("second poll: %v %v %d", err, changed, s2.Len())
	}
	if s1.Len() != 1 || s1.Of("1-0") != nil {
		t.Fatal("an earlier Set changed")
	}
	if o := s2.Of("1-0"); o == nil || o.Reward != 0 || s2.BadTotal != 0 {
		t.Fatalf("the line finished later reads %+v (bad %v)", o, s2.Bad)
	}
}

// TestReaderRereadsRewrittenDocument: aggregate metrics rewritten shorter
// (a run's writer replaces the file whole) are read anew, not refused as a
// file that shrank; a JSON-lines file that shrinks is still said plainly.
func TestReaderRereadsRewrittenDocument(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "rollouts_aggregate_metrics.json", "[\n  {\"agent_ref\": {\"name\": \"simple_agent\"}, \"agent_metrics\": {\"mean/reward\": 0.123456789}}\n]\n")
	r := NewReader(dir)
	s, _, err := r.Poll()
	if err != nil || len(s.Agents) != 1 || s.Agents[0].MeanReward != 0.123456789 {
		t.Fatalf("first poll: %v %+v", err, s.Agents)
	}
	write(t, dir, "rollouts_aggregate_metrics.json", "[{\"agent_ref\": {\"name\": \"simple_agent\"}, \"agent_metrics\": {\"mean/reward\": 0.5}}]\n")
	s, changed, err := r.Poll()
	if err != nil || !changed || len(s.Agents) != 1 || s.Agents[0].MeanReward != 0.5 {
		t.Fatalf("after a shorter rewrite: %v %v %+v", err, changed, s.Agents)
	}
	p := write(t, dir, "rollouts.jsonl", `{"_ng_task_index": 0, "_ng_rollout_index": 0, "reward": 1}`+"\n")
	if _, _, err := r.Poll(); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "rollouts.jsonl", "\n")
	if _, _, err := r.Poll(); err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "shrank") {
		t.Fatalf("a results file that shrank: %v", err)
	}
}

func TestReadMissingPath(t *testing.T) {
	_, err := Read(filepath.Join(t.TempDir(), "nope.jsonl"))
	if err == nil || !strings.Contains(err.Error(), "nope.jsonl") {
		t.Fatalf("err = %v", err)
	}
}

func TestNormalizeID(t *testing.T) {
	for in, want := range map[string]string{"3:0": "3-0", "3:0-a2": "3-0-a2", "3-0": "3-0", "a:b": "a:b", "stable-task": "stable-task", "1:2:3": "1:2:3"} {
		if got := NormalizeID(in); got != want {
			t.Errorf("NormalizeID(%q) = %q, want %q", in, got, want)
		}
	}
}

// An Outcome is what a Set holds per attempt: the budget is 200 bytes
// per joined rollout with the index and the windows.
func TestOutcomeSize(t *testing.T) {
	if n := unsafe.Sizeof(Outcome{}); n > 104 {
		t.Fatalf("Outcome is %d bytes, want at most 104", n)
	}
	if n := unsafe.Sizeof(Window{}); n != 16 {
		t.Fatalf("Window is %d bytes, want 16", n)
	}
}

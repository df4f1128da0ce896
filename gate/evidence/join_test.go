package evidence_test

import (
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/nemo-gym/gymtrace/gate/evidence"
	"github.com/nemo-gym/gymtrace/gate/internal/realgym"
)

func TestJoinRealObservabilityOn(t *testing.T) {
	eng, snap := realgym.Capture(t, "s41-obs1-iso/all")
	st := eng.Structure(snap)
	s, err := Read(filepath.Join(realgym.Dir(), "s41-obs1-iso/all/evidence"))
	if err != nil {
		t.Fatal(err)
	}
	j := Join(s, st, true)
	c := j.Coverage
	if c.Rollouts != 20 || c.Exact != 20 || c.Inferred != 0 || c.Untraced != 0 || c.Reason != NoReason {
		t.Fatalf("coverage = %+v, want 20 of 20 exact", c)
	}
	if got := c.String(); got != "20 of 20 rollouts joined exactly by id" {
		t.Errorf("coverage line = %q", got)
	}
	// Every traced rollout has its files' outcome, by id: the reward of a
	// rollout whose verify failed is 0, a raised verify is a failure row.
	for _, r := range st.Rollouts {
		o, how := j.Of(r.ID)
		if o == nil || how != Exact || o.ID != r.ID {
			t.Fatalf("rollout %s joined %+v %v", r.ID, o, how)
		}
		if o.State == Failed && r.Errors == 0 {
			t.Errorf("rollout %s: a failure row on a trace with no error", r.ID)
		}
	}
	if n := j.Conflicts[FailedOK] + j.Conflicts[NoTrace] + j.Conflicts[NoEvidence] + j.Conflicts[Killed]; n != 0 {
		t.Errorf("contradictions on a consistent run: %v", j.Contradictions)
	}
}

func TestJoinRealObservabilityOffSaysWhy(t *testing.T) {
	eng, snap := realgym.Capture(t, "s41-obs0-iso/all")
	st := eng.Structure(snap)
	s, err := Read(filepath.Join(realgym.Dir(), "s41-obs0-iso/all/evidence"))
	if err != nil {
		t.Fatal(err)
	}
	j := Join(s, st, true)
	if c := j.Coverage; c.Joined() != 0 || c.Reason != NoIDs || c.Untraced != 20 {
		t.Fatalf("coverage = %+v, want nothing joined for want of ids", c)
	}
	if !strings.Contains(j.Coverage.String(), "observability off") {
		t.Errorf("coverage line = %q", j.Coverage.String())
	}
	for _, r := range st.Rollouts {
		if o, _ := j.Of(r.ID); o != nil {
			t.Fatalf("rollout %s joined by something other than id or time", r.ID)
		}
	}
}

func TestJoinOtherRunAndKilled(t *testing.T) {
	eng, snap := realgym.Capture(t, "s41-obs1-iso/all")
	st := eng.Structure(snap)
	dir := t.TempDir()
	// Ids of another run: nothing in common.
	os.WriteFile(filepath.Join(dir, "rollouts.jsonl"), []byte(`{"_ng_rollout_id": "other-1", "reward": 1}`+"\n"), 0o644)
	s, _ := Read(dir)
	if c := Join(s, st, true).Coverage; c.Reason != OtherRun || c.Joined() != 0 {
		t.Fatalf("coverage = %+v, want no id in common", c)
	}
	// A dispatched row with no result and no failure was killed; a result
	// with no trace is named.
	in := `{"_ng_task_index": 0, "_ng_rollout_index": 0}` + "\n" + `{"_ng_task_index": 99, "_ng_rollout_index": 0}` + "\n"
	res := `{"_ng_task_index": 0, "_ng_rollout_index": 0, "reward": 1}` + "\n" + `{"_ng_task_index": 98, "_ng_rollout_index": 0, "reward": 1}` + "\n"
	os.WriteFile(filepath.Join(dir, "rollouts.jsonl"), []byte(res), 0o644)
	os.WriteFile(filepath.Join(dir, "rollouts_materialized_inputs.jsonl"), []byte(in), 0o644)
	s, _ = Read(dir)
	j := Join(s, st, true)
	if j.Coverage.Exact != 1 || j.Conflicts[Killed] != 1 || j.Conflicts[NoTrace] != 1 || j.Conflicts[NoEvidence] != 19 {
		t.Fatalf("coverage %+v conflicts %v", j.Coverage, j.Conflicts)
	}
	var killed, untraced string
	for _, c := range j.Contradictions {
		switch c.Kind {
		case Killed:
			killed = c.Rollout
		case NoTrace:
			untraced = c.Rollout
		}
	}
	if killed != "99-0" || untraced != "98-0" {
		t.Errorf("killed %q, untraced %q", killed, untraced)
	}
}

// truthRollouts maps each span id of a case's truth to its rollout index.
func truthRollouts(t *testing.T, name string) map[string]int {
	t.Helper()
	out := map[string]int{}
	files, _ := filepath.Glob(filepath.Join(realgym.Dir(), name, "truth", "*.jsonl.gz"))
	for _, p := range files {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := json.NewDecoder(zr)
		for {
			var s struct {
				SpanID  string `json:"span_id"`
				Rollout *int   `json:"rollout"`
			}
			if dec.Decode(&s) != nil {
				break
			}
			if s.Rollout != nil {
				out[s.SpanID] = *s.Rollout
			}
		}
		f.Close()
	}
	return out
}

// Where the spans carry no rollout id (observability off), the model-call
// captures join by time: every rollout to the right attempt, as the truth
// tells, and said to be inferred.
func TestJoinInferredByModelCallTime(t *testing.T) {
	for _, name := range []string{"s41-obs0-iso/all", "s52-g3-obs0-iso/all"} {
		t.Run(name, func(t *testing.T) {
			eng, snap := realgym.Capture(t, name)
			st := eng.Structure(snap)
			s, err := Read(filepath.Join(realgym.Dir(), name, "evidence-perf"))
			if err != nil {
				t.Fatal(err)
			}
			j := Join(s, st, true)
			if c := j.Coverage; c.Inferred != len(st.Rollouts) || c.Exact != 0 || c.Reason != NoReason {
				t.Fatalf("coverage = %+v, want all %d inferred", c, len(st.Rollouts))
			}
			truth := truthRollouts(t, name)
			for _, r := range st.Rollouts {
				o, how := j.Of(r.ID)
				if how != Inferred {
					t.Fatalf("%s joined %v", r.ID, how)
				}
				want := -1
				for _, f := range r.Fragments {
					for i := range f.Spans {
						if n, ok := truth[f.Spans[i].SpanID.String()]; ok {
							want = n
						}
					}
				}
				if int(o.Task) != want {
					t.Errorf("%s joined to task %d, its spans are rollout %d's", r.ID, o.Task, want)
				}
			}
			if n := j.Conflicts[CallCount] + j.Conflicts[Latency] + j.Conflicts[FailedOK]; n != 0 {
				t.Errorf("contradictions on a consistent run: %v", j.Contradictions)
			}
		})
	}
}

// With observability on, every figure of the files agrees with the traces;
// files made to disagree are named, each by its kind.
func TestJoinContradictionsReal(t *testing.T) {
	const name = "s41-obs1-iso/all"
	eng, snap := realgym.Capture(t, name)
	st := eng.Structure(snap)
	src := filepath.Join(realgym.Dir(), name, "evidence-perf")
	s, err := Read(src)
	if err != nil {
		t.Fatal(err)
	}
	j := Join(s, st, true)
	if len(j.Contradictions) != 0 || j.Coverage.Exact != 20 {
		t.Fatalf("consistent files: coverage %+v, contradictions %v", j.Coverage, j.Contradictions)
	}
	// Rollout 3-0's row: its latency tripled and a model call dropped;
	// a failure row for 4-0, whose trace has no error.
	body, _ := os.ReadFile(filepath.Join(src, "rollouts.jsonl"))
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(body)), "\n") {
		var row map[string]any
		json.Unmarshal([]byte(l), &row)
		if row["_ng_task_index"].(float64) == 3 {
			perf := row["ng_perf"].(map[string]any)
			perf["total_latency_ms"] = perf["total_latency_ms"].(float64) * 3
			calls := row["ng_model_call_capture"].([]any)
			row["ng_model_call_capture"] = calls[1:]
			b, _ := json.Marshal(row)
			l = string(b)
		}
		lines = append(lines, l)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "rollouts.jsonl"), []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "rollouts_failures.jsonl"), []byte(`{"_ng_task_index": 4, "_ng_rollout_index": 0, "_ng_attempt_index": 0, "_ng_failure_class": "timeout"}`+"\n"), 0o644)
	s, _ = Read(dir)
	j = Join(s, st, true)
	got := map[Conflict]string{}
	for _, c := range j.Contradictions {
		got[c.Kind] = c.Rollout
	}
	for k, id := range map[Conflict]string{Latency: "3-0", CallCount: "3-0", FailedOK: "4-0"} {
		if got[k] != id {
			t.Errorf("%s: got %q, want %s (all: %v)", k.Code(), got[k], id, j.Contradictions)
		}
	}
}

package evidence_test

import (
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

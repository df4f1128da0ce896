package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// checkWithEvidence runs check --json over a real-Gym case with its
// evidence files and decodes the report.
func checkWithEvidence(t *testing.T, name string, extra ...string) (checkJSON, string) {
	t.Helper()
	var out, errb bytes.Buffer
	args := append([]string{"--json", "--evidence", realGym + name + "/evidence"}, extra...)
	args = append(args, realGymCase(t, name)...)
	if code := runCheck(args, &out, &errb); code != exitOK {
		t.Fatalf("check %v = %d: %s", args, code, errb.String())
	}
	var got checkJSON
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	return got, errb.String()
}

func TestCheckEvidenceJoinsByID(t *testing.T) {
	got, _ := checkWithEvidence(t, "s41-obs1-iso/all")
	ev := got.Evidence
	if ev == nil || ev.Coverage.Exact != 20 || ev.Coverage.Joined != got.Rollouts || ev.Coverage.Reason != "" {
		t.Fatalf("evidence = %+v, want all %d rollouts joined exactly", ev, got.Rollouts)
	}
	if len(got.RolloutEvidence) != got.Rollouts {
		t.Fatalf("%d rollout blocks, want %d", len(got.RolloutEvidence), got.Rollouts)
	}
	// Rewards from the files (17 rewarded, 3 failed) and each block's state.
	rewarded, failed := 0, 0
	for id, b := range got.RolloutEvidence {
		if b.Join != "exact" {
			t.Errorf("%s joined %q", id, b.Join)
		}
		switch {
		case b.Reward != nil:
			rewarded++
		case b.State == "failed" && b.FailureClass != "":
			failed++
		}
	}
	if rewarded != 17 || failed != 3 || ev.Rewards.Rewarded != 17 || ev.Rewards.Failed != 3 {
		t.Errorf("rewarded %d, failed %d; summary %+v", rewarded, failed, ev.Rewards)
	}
	// A filter on the files: the rollouts rewarded 0.
	zero, _ := checkWithEvidence(t, "s41-obs1-iso/all", "--where", "reward=0")
	if zero.Rollouts != ev.Rewards.Zero || zero.Evidence.Coverage.Joined != zero.Rollouts || len(zero.Evidence.Contradictions) != 0 {
		t.Errorf("--where reward=0: %d rollouts, coverage %+v, want %d", zero.Rollouts, zero.Evidence.Coverage, ev.Rewards.Zero)
	}
}

func TestCheckEvidenceObservabilityOffNotJoinable(t *testing.T) {
	got, _ := checkWithEvidence(t, "s41-obs0-iso/all")
	c := got.Evidence.Coverage
	if c.Joined != 0 || c.Reason != "no_rollout_ids_on_spans" || !strings.Contains(c.Text, "observability off") || len(got.RolloutEvidence) != 0 {
		t.Fatalf("coverage = %+v, blocks %d: want nothing joined, said why", c, len(got.RolloutEvidence))
	}
}

func TestEvidenceFlagErrors(t *testing.T) {
	files := realGymCase(t, "s41-obs1-iso/all")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--where", "reward=0"}, "give them with --evidence PATH"},
		{[]string{"--evidence", filepath.Join(t.TempDir(), "missing")}, "missing: no such file"},
	} {
		var out, errb bytes.Buffer
		if code := runCheck(append(tt.args, files...), &out, &errb); code != exitUsage || !strings.Contains(errb.String(), tt.want) {
			t.Errorf("check %v = %d %q, want exit 2 with %q", tt.args, code, errb.String(), tt.want)
		}
	}
	// A malformed line is named by file:line, the rest kept.
	dir := t.TempDir()
	body, _ := os.ReadFile(realGym + "s41-obs1-iso/all/evidence/rollouts.jsonl")
	lines := strings.SplitAfter(string(body), "\n")
	lines[3] = "{broken\n"
	os.WriteFile(filepath.Join(dir, "rollouts.jsonl"), []byte(strings.Join(lines, "")), 0o644)
	var out, errb bytes.Buffer
	if code := runCheck(append([]string{"--evidence", dir}, files...), &out, &errb); code != exitOK {
		t.Fatalf("check = %d: %s", code, errb.String())
	}
	want := "1 bad line (first " + filepath.Join(dir, "rollouts.jsonl") + ":4:"
	if !strings.Contains(out.String(), want) || !strings.Contains(out.String(), "16 of 20 rollouts joined") {
		t.Errorf("check text:\n%s\nwant %q and 16 of 20 joined (the failures file is not given)", out.String(), want)
	}
}

func TestCohortAndPathWithEvidence(t *testing.T) {
	files := realGymCase(t, "s41-obs1-iso/all")
	evDir := realGym + "s41-obs1-iso/all/evidence"
	var out, errb bytes.Buffer
	args := append([]string{"--cohort", "reward=0", "--baseline", "reward>0", "--json", "--evidence", evDir}, files...)
	if code := runDiff(args, &out, &errb); code != exitOK {
		t.Fatalf("diff --cohort = %d: %s", code, errb.String())
	}
	var c cohortJSON
	if err := json.Unmarshal(out.Bytes(), &c); err != nil {
		t.Fatal(err)
	}
	// 17 results: 4 rewarded 0, 13 above; the 3 failures are on neither side.
	if c.Cohort.Rollouts != 4 || c.Baseline.Rollouts != 13 || c.Overlap != 0 {
		t.Fatalf("cohort %d, baseline %d, overlap %d; want 4, 13, 0", c.Cohort.Rollouts, c.Baseline.Rollouts, c.Overlap)
	}
	out.Reset()
	if code := runPath(append([]string{"--json", "--evidence", evDir, "2-0"}, files...), &out, &errb); code != exitOK {
		t.Fatalf("path = %d: %s", code, errb.String())
	}
	var p pathJSON
	if err := json.Unmarshal(out.Bytes(), &p); err != nil {
		t.Fatal(err)
	}
	if p.Evidence == nil || p.Evidence.Reward == nil || *p.Evidence.Reward != 0 || *p.Evidence.Task != 2 {
		t.Fatalf("path evidence = %+v, want rollout 2-0's reward 0", p.Evidence)
	}
}

func TestCheckEvidenceNeMoRLNotJoinable(t *testing.T) {
	var out, errb bytes.Buffer
	args := append([]string{"--json", "--evidence", realGym + "s61-rl-iso/rl-all/evidence"}, realGymCase(t, "s61-rl-iso/rl-all")...)
	if code := runCheck(args, &out, &errb); code != exitOK {
		t.Fatalf("check = %d: %s", code, errb.String())
	}
	var got checkJSON
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if c := got.Evidence.Coverage; c.Joined != 0 || c.Reason != "rl_rows_no_rollout_id" || got.Evidence.Files[0].Kind != "rl_train_data" {
		t.Fatalf("evidence = %+v, want NeMo-RL's rows said not joinable", got.Evidence)
	}
}

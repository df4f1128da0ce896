package filter

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nemo-gym/gymtrace/gate/evidence"
	"github.com/nemo-gym/gymtrace/gate/internal/testfleet"
)

func TestFilterEvidenceTerms(t *testing.T) {
	snap := testfleet.Capture(t, testfleet.ThreeRollouts)
	dir := t.TempDir()
	rows := strings.Join([]string{
		`{"_ng_rollout_id": "a", "_ng_task_index": 7, "_ng_rollout_index": 0, "reward": 1}`,
		`{"_ng_rollout_id": "b", "_ng_task_index": 7, "_ng_rollout_index": 1, "reward": 0}`,
	}, "\n") + "\n"
	os.WriteFile(filepath.Join(dir, "rollouts.jsonl"), []byte(rows), 0o644)
	os.WriteFile(filepath.Join(dir, "rollouts_failures.jsonl"), []byte(`{"_ng_rollout_id": "c", "_ng_task_index": 8, "_ng_rollout_index": 0, "_ng_failure_class": "http_error"}`+"\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "rollout_verdicts.jsonl"), []byte(`{"rollout_id": "b", "verdict": "unhealthy", "findings": [{"check": "tool_call_failed"}]}`+"\n"), 0o644)
	set, err := evidence.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		filter string
		want   []string
	}{
		{"reward=0", []string{"b"}},
		{"reward>0", []string{"a"}},
		{"reward<0.5", []string{"b"}},
		{"reward!=0", []string{"a"}},
		{"-reward=0", []string{"a", "c"}},
		{"verdict=unhealthy", []string{"b"}},
		{"verdict=none", []string{"a", "c"}},
		{"failure=http_error", []string{"c"}},
		{"failure~http", []string{"c"}},
		{"task=7", []string{"a", "b"}},
		{"task>7", []string{"c"}},
		{"task=7 reward=0 status=error", []string{"b"}},
	}
	for _, tt := range tests {
		f, err := Parse(tt.filter)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tt.filter, err)
		}
		if !f.UsesEvidence() {
			t.Errorf("Parse(%q).UsesEvidence() = false", tt.filter)
		}
		var got []string
		for _, r := range f.WithEvidence(set.Of).Rollouts(snap) {
			got = append(got, r.ID)
		}
		slices.Sort(got)
		if !slices.Equal(got, tt.want) {
			t.Errorf("%q matches %v, want %v", tt.filter, got, tt.want)
		}
		// Without evidence an evidence term holds for no rollout.
		if n := len(f.Rollouts(snap)); n != 0 && !strings.HasPrefix(tt.filter, "-") && tt.filter != "verdict=none" {
			t.Errorf("%q without evidence matches %d rollouts", tt.filter, n)
		}
	}
	for _, bad := range []string{"reward~1", "reward=high", "verdict=sick", "task>x"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
	if f, _ := Parse("status=error"); f.UsesEvidence() {
		t.Error("status=error reads evidence")
	}
}

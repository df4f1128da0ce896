package cohort

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nemo-gym/gymtrace/gate/evidence"
	"github.com/nemo-gym/gymtrace/gate/filter"
	"github.com/nemo-gym/gymtrace/gate/internal/realgym"
)

// TestOutcomeFeatures: with evidence, what Gym's files say ranks beside the
// spans. Rollouts rewarded 0 are given more turns in the files than those
// rewarded 1: turns must set the cohort apart completely.
func TestOutcomeFeatures(t *testing.T) {
	eng, snap := realgym.Capture(t, "s41-obs1-iso/all")
	st := eng.Structure(snap)
	var rows []string
	for i, r := range st.Rollouts {
		reward, turns := 1, 2
		if i%3 == 0 {
			reward, turns = 0, 7
		}
		rows = append(rows, fmt.Sprintf(`{"_ng_rollout_id": %q, "reward": %d, "ng_perf": {"num_turns": %d}}`, r.ID, reward, turns))
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "rollouts.jsonl"), []byte(strings.Join(rows, "\n")+"\n"), 0o644)
	set, err := evidence.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	j := evidence.Join(set, st, true)
	cf := filter.MustParse("reward=0").WithEvidence(j.Lookup)
	bf := filter.MustParse("reward>0").WithEvidence(j.Lookup)
	c, err := CompareWith(eng, snap, cf, bf, j.Lookup)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Cohort) != 7 || len(c.Baseline) != 13 {
		t.Fatalf("cohort %d, baseline %d, want 7 and 13", len(c.Cohort), len(c.Baseline))
	}
	found := false
	for _, r := range c.Rows {
		if r.Feature.Kind == Outcome && r.Feature.Name == "turns" {
			found = true
			if r.Metric != Value || r.Effect != 1 || r.Cohort != 7 || r.Baseline != 2 {
				t.Errorf("turns row = %+v, want value 7 against 2, effect +1", r)
			}
		}
	}
	if !found || c.Rows[0].Effect != 1 {
		t.Fatalf("no turns row at the top effect; rows[0] = %+v", c.Rows[0])
	}
	// Without evidence no outcome row appears.
	plain, _ := Compare(eng, snap, filter.MustParse("status=error"), nil)
	for _, r := range plain.Rows {
		if r.Feature.Kind == Outcome {
			t.Fatalf("an outcome row without evidence: %+v", r)
		}
	}
}

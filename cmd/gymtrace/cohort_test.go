package main

import (
	"encoding/json"
	"github.com/nemo-gym/gymtrace/internal/golden"
	"strings"
	"testing"
)

// TestCohortFailing: `diff --cohort status=error` on a real capture splits
// the failing rollouts from the rest, names every one, and ranks first what
// sets them apart completely.
func TestCohortFailing(t *testing.T) {
	files := realGymCase(t, "s41-obs0-iso/all")
	code, out, errOut := runGateCmd(t, diffCmd, append([]string{"--json", "--cohort", "status=error"}, files...)...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var c cohortJSON
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		t.Fatal(err)
	}
	if c.Cohort.Rollouts == 0 || c.Cohort.Rollouts+c.Baseline.Rollouts != 20 || len(c.Cohort.IDs) != c.Cohort.Rollouts {
		t.Fatalf("cohort %+v baseline %+v", c.Cohort, c.Baseline)
	}
	if len(c.Rows) != 20 || c.Rows[0].Effect != 1 || c.Rows[0].Rank != 1 {
		t.Fatalf("%d rows, first %+v", len(c.Rows), c.Rows)
	}
	// The failing rollouts' own error spans, by name, are among the rows.
	found := false
	for _, r := range c.Rows {
		if r.Kind == "span" && r.Metric == "error_rate" && r.Cohort > 0 && r.Baseline == 0 {
			found = true
		}
	}
	if !found {
		t.Errorf("no span name's error rate sets the cohort apart: %+v", c.Rows)
	}
	// The text report, five rows of it.
	code, text, _ := runGateCmd(t, diffCmd, append([]string{"--cohort", "status=error", "--top", "5"}, files...)...)
	if code != exitOK || !strings.Contains(text, "cohort status=error: ") || !strings.Contains(text, "the 5 of ") {
		t.Errorf("text: exit %d\n%s", code, text)
	}
	golden.CheckNamed(t, "s41_all_status_error", []byte(text))
}

// TestCohortUsage: what cannot run exits 2 with the reason.
func TestCohortUsage(t *testing.T) {
	files := realGymCase(t, "s41-obs0-iso/all")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"baseline alone", append([]string{"--baseline", "status=error"}, files...), "--baseline needs --cohort"},
		{"bad filter", append([]string{"--cohort", "dur>fast"}, files...), "--cohort: filter term"},
		{"empty cohort", append([]string{"--cohort", "service=nosuch"}, files...), "matches none of the 20 rollouts"},
		{"b-from", append(append([]string{"--cohort", "status=error"}, files...), append([]string{"--b-from"}, files...)...), "--b-from does not apply"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runGateCmd(t, diffCmd, tc.args...)
			if code != exitUsage || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, want 2 with %q\nstdout %s\nstderr %s", code, tc.want, out, errOut)
			}
		})
	}
}

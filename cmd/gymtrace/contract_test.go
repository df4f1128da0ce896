package main

import (
	"encoding/json"
	"github.com/nemo-gym/gymtrace/internal/golden"
	"path/filepath"
	"strings"
	"testing"
)

// TestContractReal: on real Gym captures, a capture held to itself (a
// folder as the baseline, every file under it) passes, and the broken-model
// run fails against its healthy twin, naming the hop, in text and JSON.
func TestContractReal(t *testing.T) {
	healthy := filepath.Join(realGym, "s41-obs0-iso/all")
	broken := realGymCase(t, "s41-obs0-iso/broken-model")
	code, out, errOut := runGateCmd(t, checkCmd, append([]string{"--baseline", healthy}, realGymCase(t, "s41-obs0-iso/all")...)...)
	if code != exitOK || !strings.Contains(out, "holds") {
		t.Fatalf("against itself: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = runGateCmd(t, checkCmd, append([]string{"--baseline", healthy}, broken...)...)
	if code != exitBroken || !strings.Contains(out, "hop_broke: hop nemo-gym/simple_agent -> nemo-gym/policy_model (POST /v1/responses) joined in the baseline") {
		t.Fatalf("broken model: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = runGateCmd(t, checkCmd, append([]string{"--json", "--baseline", healthy}, broken...)...)
	if code != exitBroken {
		t.Fatalf("broken model --json: exit %d: %s", code, errOut)
	}
	var c contractJSON
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		t.Fatal(err)
	}
	if c.Pass || len(c.Findings) == 0 || c.Findings[0].Kind != "hop_broke" || c.Findings[0].Hop == nil ||
		c.Findings[0].Hop.ToService != "nemo-gym/policy_model" || c.Findings[0].Hop.SpanName != "POST /v1/responses" {
		t.Fatalf("findings %+v", c.Findings)
	}
	if c.Baseline.Rollouts != 20 || len(c.Baseline.BrokenHops) != 0 || len(c.Current.BrokenHops) != 1 {
		t.Errorf("baseline %+v current %+v", c.Baseline, c.Current)
	}
	golden.CheckNamed(t, "broken_model_json", []byte(strings.ReplaceAll(out, realGym, "REALGYM/")))
}

// TestContractUsage: bad lines exit 2 naming the problem.
func TestContractUsage(t *testing.T) {
	g1 := realGymCase(t, "s41-obs0-iso/all")
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"other variant", append([]string{"--baseline", filepath.Join(realGym, "s52-g3-obs0-iso/all/console")}, g1...), "a contract holds within one Gym variant"},
		{"no baseline", append([]string{"--baseline", filepath.Join(realGym, "nosuch")}, g1...), "--baseline: stat"},
		{"bad tolerance", append([]string{"--baseline", g1[0], "--tolerance", "10"}, g1...), "a bare number is a fraction"},
		{"negative tolerance", append([]string{"--baseline", g1[0], "--tolerance", "-5%"}, g1...), "want a share >= 0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runGateCmd(t, checkCmd, tc.args...)
			if code != exitUsage || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, want 2 with %q\nstdout %s\nstderr %s", code, tc.want, out, errOut)
			}
		})
	}
	// A looser tolerance lets the aiohttp run's extra CLIENT spans pass.
	aio := realGymCase(t, "s41-obs0-iso/aiohttp-all")
	base := filepath.Join(realGym, "s41-obs0-iso/all/console")
	if code, out, _ := runGateCmd(t, checkCmd, append([]string{"--baseline", base}, aio...)...); code != exitBroken || !strings.Contains(out, "spans_drift") {
		t.Errorf("aiohttp at 10%%: exit %d\n%s", code, out)
	}
	if code, out, _ := runGateCmd(t, checkCmd, append([]string{"--baseline", base, "--tolerance", "20%"}, aio...)...); code != exitOK {
		t.Errorf("aiohttp at 20%%: exit %d\n%s", code, out)
	}
}

package main

import (
	"bytes"
	"encoding/json"
	"github.com/nemo-gym/gymtrace/internal/golden"
	"slices"
	"strings"
	"testing"

	"github.com/nemo-gym/gymtrace/gate/groups"
)

func recommendCmd(args []string, o, e *bytes.Buffer) int { return runRecommend(args, o, e) }

// previewFits runs `preview --spec spec --budget b --json` and returns
// whether the spec fits and how many rollouts it joins and splits.
func previewFits(t *testing.T, files []string, spec, b string) (fits bool, joined, split int) {
	t.Helper()
	code, out, errOut := runGateCmd(t, previewCmd, append([]string{"--json", "--spec", spec, "--budget", b}, files...)...)
	if code != exitOK {
		t.Fatalf("preview --spec %s: exit %d: %s", spec, code, errOut)
	}
	var p previewJSON
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatal(err)
	}
	return p.Budget.Fits, p.Result.RolloutsJoined, p.Result.RolloutsSplit
}

// TestRecommendConfirmedByPreview: on real Gym captures under all (which
// join every rollout), what recommend proposes preview confirms fits the
// budget with every rollout joined, and adding any group of the variant to
// it either misses the budget or splits a rollout.
func TestRecommendConfirmedByPreview(t *testing.T) {
	cases := []struct{ capture, budget string }{
		{"s41-obs0-iso/all", "50spans/rollout"},
		{"s41-obs0-iso/all", "10spans/rollout"},
		{"s41-obs0-iso/all", "9KB/rollout"},
		{"s52-g3-obs0-iso/all", "60spans/rollout"},
		{"s52-g3-obs0-iso/all", "500spans/s"},
	}
	for _, tc := range cases {
		t.Run(tc.capture+"/"+tc.budget, func(t *testing.T) {
			files := realGymCase(t, tc.capture)
			code, out, errOut := runGateCmd(t, recommendCmd, append([]string{"--json", "--budget", tc.budget}, files...)...)
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			var r recommendJSON
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				t.Fatal(err)
			}
			if r.Best == nil || r.Outcome != "found" {
				t.Fatalf("no best: %s", out)
			}
			fits, joined, split := previewFits(t, files, r.Best.Spec, tc.budget)
			if !fits || split != 0 || joined != r.Rollouts {
				t.Fatalf("preview of %s: fits %v, %d joined, %d split of %d", r.Best.Spec, fits, joined, split, r.Rollouts)
			}
			v, err := groups.LookupVariant(r.GymVariant)
			if err != nil {
				t.Fatal(err)
			}
			for _, g := range v.Registry().Groups() {
				if slices.Contains(r.Best.Groups, g.Name) {
					continue
				}
				if fits, _, split := previewFits(t, files, r.Best.Spec+","+g.Name, tc.budget); fits && split == 0 {
					t.Errorf("%s is not maximal: with %s it still fits and joins", r.Best.Spec, g.Name)
				}
			}
			if !strings.Contains(r.Best.Snippets["yaml"], "span_groups: \""+r.Best.Spec+"\"") {
				t.Errorf("yaml snippet %q does not set %s", r.Best.Snippets["yaml"], r.Best.Spec)
			}
		})
	}
}

// TestRecommendMustVerify: --must verify keeps verify, where the best
// under the same budget does not.
func TestRecommendMustVerify(t *testing.T) {
	files := realGymCase(t, "s41-obs0-iso/all")
	var free, must recommendJSON
	for _, c := range []struct {
		out  *recommendJSON
		args []string
	}{{&free, nil}, {&must, []string{"--must", "verify"}}} {
		code, out, errOut := runGateCmd(t, recommendCmd, append(append([]string{"--json", "--budget", "10spans/rollout"}, c.args...), files...)...)
		if code != exitOK {
			t.Fatalf("%v: exit %d: %s", c.args, code, errOut)
		}
		if err := json.Unmarshal([]byte(out), c.out); err != nil {
			t.Fatal(err)
		}
	}
	if free.Best == nil || slices.Contains(free.Best.Groups, "verify") {
		t.Fatalf("without --must: best %+v, the test wants one without verify", free.Best)
	}
	if must.Best == nil || !slices.Contains(must.Best.Groups, "verify") {
		t.Fatalf("--must verify: best %+v", must.Best)
	}
	if fits, _, split := previewFits(t, files, must.Best.Spec, "10spans/rollout"); !fits || split != 0 {
		t.Errorf("--must verify: %s fits %v, %d split", must.Best.Spec, fits, split)
	}
}

// TestRecommendText: the text report of a real capture, with the best's
// cost and worth table, its snippet and the runners-up.
func TestRecommendText(t *testing.T) {
	code, out, errOut := runGateCmd(t, recommendCmd, append([]string{"--budget", "50spans/rollout"}, realGymCase(t, "s41-obs0-iso/all")...)...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	golden.CheckNamed(t, "s41_all_50spans", []byte(out))
}

// TestRecommendExitCodes: 1 when no spec fits, 2 for bad usage, each with
// a message naming the problem.
func TestRecommendExitCodes(t *testing.T) {
	files := realGymCase(t, "s41-obs0-iso/all")
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no budget", files, exitUsage, "--budget is required"},
		{"bad budget", append([]string{"--budget", "50spans"}, files...), exitUsage, "no /rollout, /s or /day"},
		{"unknown must", append([]string{"--budget", "50spans/rollout", "--must", "verfy"}, files...), exitUsage, `did you mean "verify"`},
		{"conflict", append([]string{"--budget", "50spans/rollout", "--must", "verify", "--never", "verify"}, files...), exitUsage, "both required and excluded: verify"},
		{"no files", []string{"--budget", "50spans/rollout"}, exitUsage, "no capture files"},
		{"must too dear", append([]string{"--budget", "10spans/rollout", "--must", "server"}, files...), exitBroken, "the required groups alone miss the budget"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runGateCmd(t, recommendCmd, tc.args...)
			if code != tc.code || !strings.Contains(out+errOut, tc.want) {
				t.Errorf("exit %d, want %d with %q\nstdout %s\nstderr %s", code, tc.code, tc.want, out, errOut)
			}
		})
	}
}

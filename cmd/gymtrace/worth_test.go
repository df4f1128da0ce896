package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

type previewBudget struct {
	Input struct {
		Rollouts int `json:"rollouts"`
	} `json:"input"`
	Result struct {
		Spans int   `json:"spans"`
		Bytes int64 `json:"bytes"`
	} `json:"result"`
	PerGroup map[string]groupJSON `json:"per_group"`
	Budget   *budgetJSON          `json:"budget"`
}

func previewWith(t *testing.T, args ...string) previewBudget {
	t.Helper()
	code, out, errOut := runGateCmd(t, previewCmd, append([]string{"--json", "--spec", "per_rollout", gateCaptures + "all.console.jsonl"}, args...)...)
	// (args may narrow it to one rollout with --where)
	if code != exitOK {
		t.Fatalf("preview %q: exit %d: %s", args, code, errOut)
	}
	var p previewBudget
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatal(err)
	}
	return p
}

// The budget verdict at its edges, through the command: a limit equal to
// what the spec produces fits, one span less misses by one. One rollout
// (s3-r0001) keeps the per-rollout figures whole numbers.
func TestPreviewBudget(t *testing.T) {
	if p := previewWith(t); p.Budget != nil {
		t.Errorf("no --budget, yet budget %+v", p.Budget)
	}
	p := previewWith(t, "--where", "id=s3-r0001")
	per := float64(p.Result.Spans) / float64(p.Input.Rollouts)
	perBytes := float64(p.Result.Bytes) / float64(p.Input.Rollouts)
	tests := []struct {
		budget   string
		fits     bool
		missesBy float64
	}{
		{fmt.Sprintf("%gspans/rollout", per), true, 0},
		{fmt.Sprintf("%gspans/rollout", per-1), false, 1},
		{fmt.Sprintf("%gB/rollout", perBytes), true, 0},
		{fmt.Sprintf("%gB/rollout", perBytes-100), false, 100},
		{fmt.Sprintf("%gspans/s", per*2), true, 0},
		{fmt.Sprintf("%gspans/s", per*2-0.5), false, 0.5},
	}
	for _, tt := range tests {
		args := []string{"--where", "id=s3-r0001", "--budget", tt.budget}
		if strings.HasSuffix(tt.budget, "/s") {
			args = append(args, "--rollout-rate", "2")
		}
		b := previewWith(t, args...).Budget
		if b == nil || b.Fits != tt.fits || b.MissesBy != tt.missesBy {
			t.Errorf("--budget %s: %+v, want fits %v, misses by %v", tt.budget, b, tt.fits, tt.missesBy)
		}
	}
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"--budget", "lots"}, "--budget: budget \"lots\": no /rollout, /s or /day"},
		{[]string{"--span-cost", "-1ms"}, "--span-cost -1ms: want a duration >= 0"},
		{[]string{"--rollout-rate", "-2"}, "--rollout-rate -2: want rollouts per second >= 0"},
	} {
		code, _, errOut := runGateCmd(t, previewCmd, append([]string{"--spec", "all", gateCaptures + "all.console.jsonl"}, bad.args...)...)
		if code != exitUsage || !strings.Contains(errOut, bad.want) {
			t.Errorf("preview %q: exit %d, %q; want exit 2 and %q", bad.args, code, errOut, bad.want)
		}
	}
}

// --span-cost scales the CPU columns; the fixture's sandbox group is 8
// spans over 6 rollouts.
func TestPreviewSpanCost(t *testing.T) {
	p := previewWith(t, "--span-cost", "1ms")
	c := p.PerGroup["sandbox"].Cost
	if c == nil || c.Spans != 8 || c.SpansPerRollout != 1.33 || c.CPUMSPerRollout != 1.3333 || c.SpanCostUS != 1000 {
		t.Errorf("sandbox cost %+v, want 8 spans, 1.33 per rollout, 1.3333 ms CPU per rollout", c)
	}
	w := p.PerGroup["server"].Worth
	if w == nil || !w.KeepsJoins || w.JoinedWith != 6 || w.JoinedWithout != 0 {
		t.Errorf("server worth %+v, want it to keep all 6 rollouts joined", w)
	}
	if w := p.PerGroup["verify"].Worth; w == nil || w.ErrorSpans != 1 || w.KeepsJoins {
		t.Errorf("verify worth %+v, want s3-r0001's failing gym.verify and no join role", w)
	}
}

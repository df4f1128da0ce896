package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nemo-gym/gymtrace/gate/report"
)

// TestMCPMatchesCLI starts the real binary as an MCP client does (`gymtrace
// mcp FILE...` on stdio) and holds every tool that has a CLI counterpart to
// that command's --json, number for number.
func TestMCPMatchesCLI(t *testing.T) {
	files, _ := filepath.Glob("../../testdata/real-gym/s41-obs0-iso/broken-model/console/*")
	if len(files) == 0 {
		t.Fatal("no capture")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.Command(gymtraceBinary(t), append([]string{"mcp"}, files...)...)
	cmd.Stderr = &stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v (stderr: %s)", err, stderr.String())
	}
	defer cs.Close()

	cli := func(run func([]string, *bytes.Buffer, *bytes.Buffer) int, args ...string) map[string]any {
		t.Helper()
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code > exitBroken {
			t.Fatalf("%v: exit %d: %s", args, code, errb.String())
		}
		var m map[string]any
		if err := json.Unmarshal(out.Bytes(), &m); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return m
	}
	tool := func(name string, args map[string]any) map[string]any {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", name, err, res)
		}
		b, _ := json.Marshal(res.StructuredContent)
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	check := cli(func(a []string, o, e *bytes.Buffer) int { return runCheck(a, o, e) }, append([]string{"--json"}, files...)...)
	if got := tool("check", nil); !reflect.DeepEqual(got, check) {
		t.Errorf("check tool != check --json:\n got %v\nwant %v", got, check)
	}
	groupsOut := cli(func(a []string, o, e *bytes.Buffer) int { return runGroups(a, o, e) }, "--json", "--gym-version", check["gym_variant"].(string))
	got := tool("groups", nil)
	// The tool tells the variant from the capture, the command is pinned.
	groupsOut["gym_variant_source"], got["gym_variant_source"] = "", ""
	if !reflect.DeepEqual(got, groupsOut) {
		t.Errorf("groups tool != groups --json:\n got %v\nwant %v", got, groupsOut)
	}
	split := check["split_rollouts"].([]any)
	id := split[0].(string)
	path := cli(func(a []string, o, e *bytes.Buffer) int { return runPath(a, o, e) }, append([]string{"--json", id}, files...)...)
	if got := tool("critical_path", map[string]any{"rollout_id": id}); !reflect.DeepEqual(got, path) {
		t.Errorf("critical_path tool != path --json:\n got %v\nwant %v", got, path)
	}
	cohort := cli(func(a []string, o, e *bytes.Buffer) int { return runDiff(a, o, e) },
		append([]string{"--json", "--cohort", "id=" + id, "--top", "20"}, files...)...)
	if got := tool("cohort", map[string]any{"cohort": "id=" + id, "top": 20}); !reflect.DeepEqual(got, cohort) {
		t.Errorf("cohort tool != diff --cohort --json:\n got %v\nwant %v", got, cohort)
	}
	preview := cli(func(a []string, o, e *bytes.Buffer) int { return runPreview(a, o, e) },
		append([]string{"--json", "--spec", "per_rollout", "--budget", "40spans/rollout"}, files...)...)
	if got := tool("preview", map[string]any{"spec": "per_rollout", "budget": "40spans/rollout", "limit": 1000}); !reflect.DeepEqual(got, preview) {
		t.Errorf("preview tool != preview --json:\n got %v\nwant %v", got, preview)
	}
	rec := cli(func(a []string, o, e *bytes.Buffer) int { return runRecommend(a, o, e) },
		append([]string{"--json", "--budget", "30spans/rollout", "--never", "sandbox"}, files...)...)
	if got := tool("recommend", map[string]any{"budget": "30spans/rollout", "never": "sandbox"}); !reflect.DeepEqual(got, rec) {
		t.Errorf("recommend tool != recommend --json:\n got %v\nwant %v", got, rec)
	}
	other := split[1].(string)
	diff := cli(func(a []string, o, e *bytes.Buffer) int { return runDiff(a, o, e) },
		append([]string{"--json", "--b-spec", "all", id, other}, files...)...)
	got = tool("compare", map[string]any{"a": id, "b": other, "b_spec": "all"})
	// The command names the files each side was read from; the server's
	// store has no files to name per call.
	for _, k := range []string{"a", "b"} {
		diff[k].(map[string]any)["files"], got[k].(map[string]any)["files"] = nil, nil
	}
	if !reflect.DeepEqual(got, diff) {
		t.Errorf("compare tool != diff --json:\n got %v\nwant %v", got, diff)
	}
}

// TestMCPEvidence: with --evidence, the tools carry Gym's outcomes as the
// CLI does, and the filter and sort know reward.
func TestMCPEvidence(t *testing.T) {
	files, _ := filepath.Glob("../../testdata/real-gym/s41-obs0-iso/all/console/*")
	ev := "../../testdata/real-gym/s41-obs0-iso/all/evidence-perf"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.Command(gymtraceBinary(t), append([]string{"mcp", "--evidence", ev}, files...)...)
	cmd.Stderr = &stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v (stderr: %s)", err, stderr.String())
	}
	defer cs.Close()
	tool := func(name string, args map[string]any, out any) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("%s(%v): %v %+v", name, args, err, res)
		}
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatal(err)
		}
	}
	var out, errb bytes.Buffer
	if code := runCheck(append([]string{"--json", "--evidence", ev}, files...), &out, &errb); code != exitOK {
		t.Fatalf("check: %d %s", code, errb.String())
	}
	var want, got map[string]any
	json.Unmarshal(out.Bytes(), &want)
	tool("check", nil, &got)
	if want["evidence"] == nil || !reflect.DeepEqual(got, want) {
		t.Errorf("check tool != check --json --evidence:\n got %v\nwant %v", got, want)
	}
	rolloutEv := want["rollout_evidence"].(map[string]any)
	var l report.RolloutList
	tool("list_rollouts", map[string]any{"sort": "-reward", "limit": 500}, &l)
	last, unknown := 2.0, ""
	for _, r := range l.Rollouts {
		var gotEv any
		b, _ := json.Marshal(r.Evidence)
		json.Unmarshal(b, &gotEv)
		if !reflect.DeepEqual(gotEv, rolloutEv[r.RolloutID]) {
			t.Errorf("rollout %s evidence %v, want check's %v", r.RolloutID, gotEv, rolloutEv[r.RolloutID])
		}
		if r.Evidence == nil || r.Evidence.Reward == nil {
			unknown = r.RolloutID
		} else {
			if unknown != "" {
				t.Errorf("sort -reward: %s, without a reward, before %s with %v", unknown, r.RolloutID, *r.Evidence.Reward)
			}
			if *r.Evidence.Reward > last {
				t.Errorf("sort -reward: %s has %v after %v", r.RolloutID, *r.Evidence.Reward, last)
			}
			last = *r.Evidence.Reward
		}
	}
	var zero report.RolloutList
	tool("list_rollouts", map[string]any{"filter": "reward=0"}, &zero)
	if zero.Total == 0 || zero.Total >= l.Total {
		t.Errorf("filter reward=0: %d of %d rollouts", zero.Total, l.Total)
	}
	for _, r := range zero.Rollouts {
		if r.Evidence == nil || r.Evidence.Reward == nil || *r.Evidence.Reward != 0 {
			t.Errorf("filter reward=0 lists %s with %+v", r.RolloutID, r.Evidence)
		}
	}
	var d report.RolloutDetail
	tool("get_rollout", map[string]any{"rollout_id": zero.Rollouts[0].RolloutID}, &d)
	if d.Evidence == nil || *d.Evidence.Reward != 0 {
		t.Errorf("get_rollout evidence %+v", d.Evidence)
	}
}

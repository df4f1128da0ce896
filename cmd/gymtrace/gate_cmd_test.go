package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/internal/golden"
)

const gateCaptures = "testdata/captures/"

func runGateCmd(t *testing.T, fn func([]string, *bytes.Buffer, *bytes.Buffer) int, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	t.Setenv(groups.EnvSpanGroups, "")
	var o, e bytes.Buffer
	code = fn(args, &o, &e)
	return code, o.String(), e.String()
}

func previewCmd(args []string, o, e *bytes.Buffer) int { return runPreview(args, o, e) }
func checkCmd(args []string, o, e *bytes.Buffer) int   { return runCheck(args, o, e) }
func groupsCmd(args []string, o, e *bytes.Buffer) int  { return runGroups(args, o, e) }

func TestPreviewJSON(t *testing.T) {
	cases := []struct {
		name string
		args []string
	}{
		{"all_to_per_rollout", []string{"--json", "--spec", "per_rollout", gateCaptures + "all.console.jsonl"}},
		{"all_to_default", []string{"--spec", "default", gateCaptures + "all.otlp.jsonl", "--json"}},
		{"all_http_client_off", []string{"--json", "--spec", "job,server,rollout,agent,model_call,verify", "--rollouts", "100", gateCaptures + "all.console.jsonl"}},
		{"per_rollout_to_default_sandbox", []string{"--json", "--spec", "default,sandbox,step", "--current", "per_rollout", gateCaptures + "per_rollout.console.jsonl"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runGateCmd(t, previewCmd, tc.args...)
			if code != exitOK {
				t.Fatalf("exit %d, stderr %s", code, errOut)
			}
			golden.Check(t, []byte(out))
		})
	}
}

func TestPreviewText(t *testing.T) {
	code, out, errOut := runGateCmd(t, previewCmd, "--spec", "per_rollout", gateCaptures+"all.console.jsonl")
	if code != exitOK {
		t.Fatalf("exit %d, stderr %s", code, errOut)
	}
	golden.Check(t, []byte(out))
}

// A spec that breaks joins still gets its snippet, but the text before it
// says so; one that joins says only how to use it.
func TestPreviewTextSnippetWarns(t *testing.T) {
	for _, tc := range []struct{ spec, want string }{
		{"job,server,rollout,agent,model_call,verify", "\nto use it anyway (it splits 6 of 6 rollouts, as above), in the Gym config:\n"},
		{"per_rollout", "\nto use it, in the Gym config:\n"},
	} {
		code, out, errOut := runGateCmd(t, previewCmd, "--spec", tc.spec, gateCaptures+"all.console.jsonl")
		if code != exitOK {
			t.Fatalf("exit %d, stderr %s", code, errOut)
		}
		if !strings.Contains(out, tc.want) {
			t.Errorf("preview --spec %s lacks %q:\n%s", tc.spec, tc.want, out)
		}
	}
}

// Previewing per_rollout over a real Gym `all` capture must predict exactly
// what Gym really emitted under per_rollout with the same seed, per rollout
// and per group (observability on, so both captures name rollouts by Gym's
// ids).
func TestPreviewPredictsPerRolloutCapture(t *testing.T) {
	var pred, real previewJSON
	for _, c := range []struct {
		file string
		out  *previewJSON
	}{{"all", &pred}, {"spec-per_rollout", &real}} {
		logs, _ := filepath.Glob(filepath.Join(sharedRealGym, "s41-obs1-iso", c.file, "console", "*.log.gz"))
		if len(logs) != 4 {
			t.Fatalf("%s: %d console logs, want 4", c.file, len(logs))
		}
		code, out, errOut := runGateCmd(t, previewCmd, append([]string{"--json", "--spec", "per_rollout"}, logs...)...)
		if code != exitOK {
			t.Fatalf("%s: exit %d, stderr %s", c.file, code, errOut)
		}
		if err := json.Unmarshal([]byte(out), c.out); err != nil {
			t.Fatal(err)
		}
	}
	if pred.Result.Spans != real.Input.Spans || pred.Result.Traces != real.Input.Traces {
		t.Errorf("predicted %d spans in %d traces, the per_rollout capture holds %d in %d",
			pred.Result.Spans, pred.Result.Traces, real.Input.Spans, real.Input.Traces)
	}
	for g, pc := range pred.PerGroup {
		if rc := real.PerGroup[g]; pc.Kept != rc.Captured {
			t.Errorf("group %s: predicted %d kept, captured %d", g, pc.Kept, rc.Captured)
		}
	}
	captured := map[string]rolloutJSON{}
	for _, r := range real.PerRollout {
		captured[r.RolloutID] = r
	}
	if len(pred.PerRollout) != 20 || len(captured) != 20 {
		t.Fatalf("%d predicted rollouts, %d captured; want 20 each", len(pred.PerRollout), len(captured))
	}
	for _, p := range pred.PerRollout {
		r, ok := captured[p.RolloutID]
		if !ok {
			t.Errorf("rollout %s not in the per_rollout capture", p.RolloutID)
			continue
		}
		if p.Spans != r.Captured || p.Traces != r.Traces || !p.Joined {
			t.Errorf("rollout %s: predicted %d spans in %d traces (joined %v), captured %d in %d",
				p.RolloutID, p.Spans, p.Traces, p.Joined, r.Captured, r.Traces)
		}
		for g, n := range p.PerGroup {
			if r.PerGroup[g] != n {
				t.Errorf("rollout %s group %s: predicted %d, captured %d", p.RolloutID, g, n, r.PerGroup[g])
			}
		}
		if len(p.PerGroup) != len(r.PerGroup) {
			t.Errorf("rollout %s: predicted groups %v, captured %v", p.RolloutID, p.PerGroup, r.PerGroup)
		}
	}
}

// brokenCapture rewrites the `all` capture as if the agent sent no
// traceparent to the model server: the model's SERVER spans lose their
// parent and every model span moves to a trace of its own per request.
func brokenCapture(t *testing.T) string {
	t.Helper()
	in, err := os.Open(gateCaptures + "all.console.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	var out bytes.Buffer
	sc := bufio.NewScanner(in)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var sp map[string]any
		if json.Unmarshal(sc.Bytes(), &sp) != nil || sp["resource"] == nil {
			out.Write(sc.Bytes())
			out.WriteByte('\n')
			continue
		}
		res := sp["resource"].(map[string]any)["attributes"].(map[string]any)
		if res["service.name"] == "nemo-gym/policy_model" {
			ctx := sp["context"].(map[string]any)
			ctx["trace_id"] = "0x0000000000000000000000000000beef"
			if sp["kind"] == "SpanKind.SERVER" {
				sp["parent_id"] = nil
			}
		}
		b, _ := json.Marshal(sp)
		out.Write(b)
		out.WriteByte('\n')
	}
	p := filepath.Join(t.TempDir(), "broken.console.jsonl")
	if err := os.WriteFile(p, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCheckJSON(t *testing.T) {
	cases := []struct {
		name string
		args []string
		code int
	}{
		{"all_console", []string{"--json", gateCaptures + "all.console.jsonl"}, exitOK},
		{"all_otlp", []string{"--json", gateCaptures + "all.otlp.jsonl"}, exitOK},
		{"per_rollout", []string{"--json", "--spec", "per_rollout", gateCaptures + "per_rollout.console.jsonl"}, exitOK},
		{"python_sdk_real", []string{gateCaptures + "python-sdk-real.console.jsonl", "--json"}, exitOK},
		{"model_not_joined", []string{"--json", "--spec", "all"}, exitBroken},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if tc.name == "model_not_joined" {
				args = append(args, brokenCapture(t))
			}
			code, out, errOut := runGateCmd(t, checkCmd, args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr %s", code, tc.code, errOut)
			}
			out = strings.ReplaceAll(out, filepath.Dir(args[len(args)-1])+"/", "")
			golden.Check(t, []byte(out))
		})
	}
}

func TestCheckText(t *testing.T) {
	code, out, errOut := runGateCmd(t, checkCmd, brokenCapture(t))
	if code != exitBroken {
		t.Fatalf("exit %d, want %d; stderr %s", code, exitBroken, errOut)
	}
	golden.Check(t, []byte(out))
}

func TestExitCodes(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "empty.jsonl")
	if err := os.WriteFile(empty, []byte("INFO: nothing here\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	badGroups := filepath.Join(t.TempDir(), "groups.yaml")
	if err := os.WriteFile(badGroups, []byte("groups:\n  - name: Bad\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	metricsOnly := filepath.Join(t.TempDir(), "metrics.jsonl")
	if err := os.WriteFile(metricsOnly, []byte(`{"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"name":"m","gauge":{"dataPoints":[{"asInt":"1","timeUnixNano":"1"}]}}]}]}]}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	blank := filepath.Join(t.TempDir(), "blank.log")
	if err := os.WriteFile(blank, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		fn     func([]string, *bytes.Buffer, *bytes.Buffer) int
		args   []string
		code   int
		stderr string
	}{
		{"preview without spec", previewCmd, []string{gateCaptures + "all.console.jsonl"}, exitUsage, "--spec is required"},
		{"preview without files", previewCmd, []string{"--spec", "all"}, exitUsage, "no capture files given"},
		{"preview unknown variant", previewCmd, []string{"--gym-version", "G9", "--spec", "all", gateCaptures + "all.console.jsonl"}, exitUsage, `--gym-version: unknown Gym variant "G9"`},
		{"preview missing file", previewCmd, []string{"--spec", "all", "testdata/nope.jsonl"}, exitUsage, "nope.jsonl"},
		{"preview no spans", previewCmd, []string{"--spec", "all", empty}, exitUsage, "no spans in"},
		// What a file without spans held instead, so the user knows which mistake it is.
		{"check plain text", checkCmd, []string{empty}, exitUsage, "empty.jsonl: no line is a span record (1 read, first " + empty + ":1: not JSON (plain text)); a NeMo Gym server log holds spans only with telemetry on"},
		{"check metrics only", checkCmd, []string{metricsOnly}, exitUsage, "metrics.jsonl: only metrics and logs (metric points: 1, log records: 0)"},
		{"check empty file", checkCmd, []string{blank}, exitUsage, "blank.log: the file is empty"},
		{"preview bad flag", previewCmd, []string{"--bogus"}, exitUsage, "flag provided but not defined"},
		{"check without files", checkCmd, nil, exitUsage, "no capture files given"},
		{"check unknown variant", checkCmd, []string{"--gym-version", "0.6", gateCaptures + "all.console.jsonl"}, exitUsage, `--gym-version: unknown Gym variant "0.6"`},
		{"check missing file", checkCmd, []string{"testdata/nope.jsonl"}, exitUsage, "nope.jsonl"},
		{"check bad groups file", checkCmd, []string{"--groups", badGroups, gateCaptures + "all.console.jsonl"}, exitUsage, "groups.yaml:2:11: group name \"Bad\" must be snake_case"},
		{"check intact", checkCmd, []string{gateCaptures + "all.console.jsonl"}, exitOK, ""},
		{"groups stray argument", groupsCmd, []string{"extra"}, exitUsage, `unexpected argument "extra"`},
		{"groups bad file", groupsCmd, []string{"--groups", badGroups}, exitUsage, "groups.yaml:2:5: missing description"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := runGateCmd(t, tc.fn, tc.args...)
			if code != tc.code || !strings.Contains(errOut, tc.stderr) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, errOut, tc.code, tc.stderr)
			}
		})
	}
}

func TestGroupsOutput(t *testing.T) {
	file := filepath.Join(t.TempDir(), "startup.yaml")
	src := "groups:\n  - name: startup\n    description: server start-up phases\n    spans: gym.startup*\n" +
		"presets:\n  - name: debug_startup\n    description: default plus start-up\n    groups: [default, startup]\n"
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
	}{
		{"text", nil},
		{"json", []string{"--json"}},
		{"groups_file_json", []string{"--json", "--gym-version", "G1", "--groups", file}},
		{"g1c_text", []string{"--gym-version", "g1c"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runGateCmd(t, groupsCmd, tc.args...)
			if code != exitOK {
				t.Fatalf("exit %d, stderr %s", code, errOut)
			}
			golden.Check(t, []byte(out))
		})
	}
}

// A capture a broken model server split (server off in policy_model) is
// predicted joined under default, which has server on: preview says how
// it was beside the prediction, in text and JSON, as check judges it.
func TestPreviewSaysAsCaptured(t *testing.T) {
	for _, c := range []string{"s41-obs0-iso/broken-model", "s52-g3-obs0-iso/broken-model"} {
		files := realGymCase(t, c)
		code, out, errOut := runGateCmd(t, previewCmd, append([]string{"--json", "--spec", "default"}, files...)...)
		if code != exitOK {
			t.Fatalf("%s: exit %d: %s", c, code, errOut)
		}
		var p previewJSON
		if err := json.Unmarshal([]byte(out), &p); err != nil {
			t.Fatal(err)
		}
		_, chkOut, _ := runGateCmd(t, checkCmd, append([]string{"--json"}, files...)...)
		var chk checkJSON
		if err := json.Unmarshal([]byte(chkOut), &chk); err != nil {
			t.Fatal(err)
		}
		a := p.AsCaptured
		if a.Intact || a.Split == 0 || a.Split != chk.RolloutsSplit || a.Joined != chk.RolloutsJoined || a.Verdict != fmt.Sprintf("✗ %d/%d split", a.Split, a.Split+a.Joined+a.Pending) {
			t.Errorf("%s: as_captured %+v, check says %d joined %d split", c, a, chk.RolloutsJoined, chk.RolloutsSplit)
		}
		_, text, _ := runGateCmd(t, previewCmd, append([]string{"--spec", "default"}, files...)...)
		if !strings.Contains(text, "\nas captured: "+a.Verdict+" ") {
			t.Errorf("%s: preview text lacks the capture's verdict %q:\n%s", c, a.Verdict, text)
		}
	}
	// An intact capture is predicted as it was: nothing more to say.
	_, text, _ := runGateCmd(t, previewCmd, append([]string{"--spec", "default"}, realGymCase(t, "s41-obs0-iso/all")...)...)
	if strings.Contains(text, "as captured") {
		t.Errorf("intact capture says as captured:\n%s", text)
	}
}

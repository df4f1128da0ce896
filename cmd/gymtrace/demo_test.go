package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nemo-gym/gymtrace/gymsim"
	"github.com/nemo-gym/gymtrace/internal/golden"
)

// demoArgs are the flags every test run uses: free loopback ports, no
// simulated latency, a short batch delay.
var demoArgs = []string{"--grpc-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0", "--latency", "0", "--batch-timeout", "50ms", "--rate", "0", "--seed", "1"}

type demoJSON struct {
	SpansReceived int64            `json:"spans_received"`
	SpansStored   int64            `json:"spans_stored"`
	Rollouts      int              `json:"rollouts"`
	Traces        int              `json:"traces"`
	Services      map[string]int64 `json:"services"`
	Fleet         struct {
		RolloutsStarted   int64 `json:"rollouts_started"`
		RolloutsCompleted int64 `json:"rollouts_completed"`
		SpansEmitted      int64 `json:"spans_emitted"`
		ExportErrors      int64 `json:"export_errors"`
	} `json:"fleet"`
}

func runDemoJSON(t *testing.T, ctx context.Context, args []string) demoJSON {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := runDemo(ctx, append(append([]string(nil), demoArgs...), args...), &stdout, &stderr, false)
	if code != exitOK {
		t.Fatalf("runDemo(%q) = %d, stderr:\n%s", args, code, stderr.String())
	}
	var sum demoJSON
	if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil {
		t.Fatalf("summary is not JSON: %v\n%s", err, stdout.String())
	}
	// Everything the fleet emitted was flushed and received before exit.
	if sum.SpansReceived != sum.Fleet.SpansEmitted || sum.SpansStored != sum.SpansReceived || sum.Fleet.ExportErrors != 0 {
		t.Fatalf("received %d, stored %d, emitted %d, export errors %d", sum.SpansReceived, sum.SpansStored, sum.Fleet.SpansEmitted, sum.Fleet.ExportErrors)
	}
	if !strings.Contains(stderr.String(), "spans=") {
		t.Fatalf("no status line on stderr:\n%s", stderr.String())
	}
	golden.Check(t, maskEvidenceDir(t, stdout.Bytes()))
	return sum
}

// maskEvidenceDir checks that the summary names the temporary evidence
// folder the demo made and removed, and masks its name for the golden.
func maskEvidenceDir(t *testing.T, out []byte) []byte {
	t.Helper()
	var sum struct {
		EvidenceDir string `json:"evidence_dir"`
	}
	if err := json.Unmarshal(out, &sum); err != nil || sum.EvidenceDir == "" {
		t.Fatalf("no evidence_dir in the summary (%v):\n%s", err, out)
	}
	if _, err := os.Stat(sum.EvidenceDir); !os.IsNotExist(err) {
		t.Errorf("the demo's temporary evidence folder %s is still there: %v", sum.EvidenceDir, err)
	}
	q, _ := json.Marshal(sum.EvidenceDir)
	return bytes.Replace(out, q, []byte(`"EVIDENCE_DIR"`), 1)
}

// TestDemoJSON: a fixed seed and rollout count give the same summary every
// time, over either transport: the spans a seed produces do not depend on
// scheduling.
func TestDemoJSON(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{"all_grpc", []string{"--spec", "all", "--protocol", "grpc"}},
		{"per_rollout_http", []string{"--spec", "per_rollout", "--protocol", "http"}},
		{"no_http_client_splits", []string{"--spec", "server,rollout,verify"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sum := runDemoJSON(t, context.Background(), append(tt.args, "--rollouts", "6", "--headless", "--json"))
			if sum.Rollouts != 6 || sum.Fleet.RolloutsCompleted != 6 {
				t.Fatalf("summary %+v, want 6 rollouts", sum)
			}
		})
	}
}

// TestDemoInterrupt: running forever, the demo stops on ctx's end (SIGINT),
// flushes the fleet and prints the summary.
func TestDemoInterrupt(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 800*time.Millisecond)
	defer cancel()
	var stdout, stderr bytes.Buffer
	args := append(append([]string(nil), demoArgs...), "--json", "--rate", "40")
	if code := runDemo(ctx, args, &stdout, &stderr, false); code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr.String())
	}
	var sum demoJSON
	if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil {
		t.Fatalf("summary: %v\n%s", err, stdout.String())
	}
	if want := "{\n  \"gym_variant\": \"G1\",\n  \"gym_variant_source\": "; !strings.HasPrefix(stdout.String(), want) {
		t.Errorf("summary starts %.80q, want %q first as in every --json output", stdout.String(), want)
	}
	if sum.Fleet.RolloutsStarted == 0 || sum.Fleet.RolloutsCompleted != sum.Fleet.RolloutsStarted {
		t.Fatalf("fleet %+v: every started rollout should finish before exit", sum.Fleet)
	}
	if sum.SpansReceived == 0 || sum.SpansReceived != sum.Fleet.SpansEmitted {
		t.Fatalf("received %d spans, fleet emitted %d", sum.SpansReceived, sum.Fleet.SpansEmitted)
	}
}

func TestDemoUsage(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown variant", []string{"--gym-variant", "G9"}, `gymtrace demo: --gym-version: unknown Gym variant "G9": want one of G1, G1c, G2, G3`},
		{"leak out of range", []string{"--context-leak", "1.5"}, "--context-leak must be between 0 and 1"},
		{"disconnect race out of range", []string{"--disconnect-race", "-0.1"}, "--disconnect-race must be between 0 and 1"},
		{"bad protocol", []string{"--protocol", "zipkin"}, `--protocol "zipkin": want grpc or http`},
		{"extra argument", []string{"capture.jsonl"}, `gymtrace demo: unexpected argument "capture.jsonl"`},
		{"negative rollouts", []string{"--rollouts", "-1"}, "--rollouts and --rate must be 0 or more"},
		{"busy address", []string{"--grpc-addr", "256.0.0.1:1", "--http-addr", "127.0.0.1:0"}, "256.0.0.1:1"},
		{"process spec without =", []string{"--process-spec", "policy_model"}, `--process-spec "policy_model": want NAME=SPEC`},
		{"unknown process", []string{"--process-spec", "judge=all"}, `unknown process "judge" (want one of orchestrator, simple_agent, policy_model, example_single_tool_call, or a role`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := runDemo(context.Background(), tt.args, &stdout, &stderr, false)
			if code != exitUsage {
				t.Fatalf("runDemo(%q) = %d, want %d", tt.args, code, exitUsage)
			}
			if !strings.Contains(stderr.String(), tt.want) {
				t.Fatalf("stderr %q, want it to contain %q", stderr.String(), tt.want)
			}
			if stdout.Len() != 0 {
				t.Fatalf("stdout %q, want nothing", stdout.String())
			}
		})
	}
}

// TestDemoUnknownGroup: as in Gym, an unknown name in span_groups is not
// the demo's error but the fleet's: in G1 the telemetry set-up raises and
// the processes run without telemetry, saying so; in G2 the name is
// dropped and the rest applies.
func TestDemoUnknownGroup(t *testing.T) {
	run := func(args ...string) (demoJSON, string) {
		var stdout, stderr bytes.Buffer
		if code := runDemo(context.Background(), append(append([]string(nil), demoArgs...), args...), &stdout, &stderr, false); code != exitOK {
			t.Fatalf("runDemo(%q) = %d, stderr:\n%s", args, code, stderr.String())
		}
		var sum demoJSON
		if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil {
			t.Fatalf("summary is not JSON: %v\n%s", err, stdout.String())
		}
		return sum, stderr.String()
	}
	sum, stderr := run("--spec", "default,tool_call", "--rollouts", "3", "--headless", "--json")
	if sum.SpansReceived != 0 || sum.Fleet.RolloutsCompleted != 3 {
		t.Errorf("G1 with an unknown group: %d spans, %d rollouts completed; want none, 3", sum.SpansReceived, sum.Fleet.RolloutsCompleted)
	}
	if !strings.Contains(stderr, "simple_agent: Unknown span group or preset: 'tool_call'. Valid options: ['agent', 'all',") {
		t.Errorf("no Gym warning on stderr:\n%s", stderr)
	}
	sum, stderr = run("--gym-variant", "G2", "--spec", "default,tool_call", "--rollouts", "3", "--headless", "--json")
	if sum.SpansReceived == 0 || !strings.Contains(stderr, "unknown span groups dropped: tool_call") {
		t.Errorf("G2 with an unknown group: %d spans; stderr:\n%s", sum.SpansReceived, stderr)
	}
}

// TestDemoProcessSpec: one process running its own span_groups breaks the
// join the others keep. With the model server not extracting traceparent,
// each model call starts a trace of its own, where the healthy fleet keeps
// the whole run in the job's one trace (beside the three health probes).
func TestDemoProcessSpec(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		traces func(int) bool
	}{
		{"healthy_default", nil, func(n int) bool { return n == 4 }},
		{"model_without_server", []string{"--process-spec", "policy_model=http_client,model_call"}, func(n int) bool { return n > 10 }},
		// Each /run a root, the probes, gym.job alone, /aggregate_metrics.
		{"driver_without_http_client", []string{"--process-spec", "orchestrator=job"}, func(n int) bool { return n == 6+3+1+1 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"--spec", "default", "--rollouts", "6", "--headless", "--json"}, tt.args...)
			var stdout, stderr bytes.Buffer
			sum := runDemoJSONOut(t, args, &stdout, &stderr)
			if !tt.traces(sum.Traces) {
				t.Errorf("%d traces for 6 rollouts", sum.Traces)
			}
			if len(tt.args) > 0 && !strings.Contains(stderr.String(), "except "+strings.SplitN(tt.args[1], "=", 2)[0]+"=") {
				t.Errorf("the start line does not name the overridden process:\n%s", stderr.String())
			}
		})
	}
}

// runDemoJSONOut is runDemoJSON that also hands back the output.
func runDemoJSONOut(t *testing.T, args []string, stdout, stderr *bytes.Buffer) demoJSON {
	t.Helper()
	code := runDemo(context.Background(), append(append([]string(nil), demoArgs...), args...), stdout, stderr, false)
	if code != exitOK {
		t.Fatalf("runDemo(%q) = %d, stderr:\n%s", args, code, stderr.String())
	}
	var sum demoJSON
	if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil {
		t.Fatalf("summary is not JSON: %v\n%s", err, stdout.String())
	}
	if sum.SpansReceived != sum.Fleet.SpansEmitted || sum.Fleet.ExportErrors != 0 {
		t.Fatalf("received %d, emitted %d, export errors %d", sum.SpansReceived, sum.Fleet.SpansEmitted, sum.Fleet.ExportErrors)
	}
	golden.Check(t, maskEvidenceDir(t, stdout.Bytes()))
	return sum
}

// TestDemoEvidenceOut: --evidence-out keeps Gym's rollout files where it
// says, one outcome per rollout, --rollouts-per-task rollouts of each task.
func TestDemoEvidenceOut(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "evidence")
	args := append(append([]string(nil), demoArgs...), "--spec", "all", "--observability", "--rollouts", "8", "--rollouts-per-task", "3",
		"--evidence-out", dir, "--headless", "--json")
	var stdout, stderr bytes.Buffer
	if code := runDemo(context.Background(), args, &stdout, &stderr, false); code != exitOK {
		t.Fatalf("demo exit %d:\n%s", code, stderr.String())
	}
	var sum struct {
		EvidenceDir string `json:"evidence_dir"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil || sum.EvidenceDir != dir {
		t.Fatalf("evidence_dir %q, want %q (%v)", sum.EvidenceDir, dir, err)
	}
	ids := map[string]bool{}
	for _, name := range []string{gymsim.EvidenceResults, gymsim.EvidenceFailures} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if l == "" {
				continue
			}
			var row struct {
				Task   *int `json:"_ng_task_index"`
				Repeat *int `json:"_ng_rollout_index"`
			}
			if err := json.Unmarshal([]byte(l), &row); err != nil || row.Task == nil || row.Repeat == nil || *row.Repeat >= 3 {
				t.Fatalf("%s: line %s (%v)", name, l, err)
			}
			ids[fmt.Sprintf("%d-%d", *row.Task, *row.Repeat)] = true
		}
	}
	if len(ids) != 8 || !ids["2-1"] {
		t.Errorf("outcomes of %v, want rollouts 0-0 to 2-1", ids)
	}
	if _, err := os.Stat(filepath.Join(dir, gymsim.EvidenceModelCalls, "0-0.capture.jsonl")); err != nil {
		t.Errorf("no model-call capture of rollout 0-0: %v", err)
	}
}

package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nemo-gym/gymtrace/internal/testfile"
)

// The fixture's README says which rollout fails where; --where must find
// exactly those, in preview and in check alike.
func TestWhere(t *testing.T) {
	capture := gateCaptures + "all.otlp.jsonl"
	tests := []struct {
		where string
		want  []string
	}{
		{"name=gym.verify status=error", []string{"s3-r0001"}},               // the verifier raises ValueError
		{"name=gym.sandbox.exec status=error", []string{"s3-r0000"}},         // SandboxError
		{"service=policy_model http.status_code>=500", []string{"s3-r0003"}}, // the model answers 503 twice
		{"name=\"POST /get_weather\" status=error", []string{"s3-r0002"}},    // get_weather answered 503 once
		{"-status=error", []string{"s3-r0004", "s3-r0005"}},
		{"", []string{"s3-r0000", "s3-r0001", "s3-r0002", "s3-r0003", "s3-r0004", "s3-r0005"}},
	}
	for _, tt := range tests {
		t.Run(tt.where, func(t *testing.T) {
			code, out, errOut := runGateCmd(t, previewCmd, "--json", "--spec", "all", "--where", tt.where, capture)
			if code != exitOK {
				t.Fatalf("preview exit %d: %s", code, errOut)
			}
			var p struct {
				Input      struct{ Rollouts int }
				PerRollout []struct {
					RolloutID string `json:"rollout_id"`
				} `json:"per_rollout"`
			}
			if err := json.Unmarshal([]byte(out), &p); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range p.PerRollout {
				got = append(got, r.RolloutID)
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.want) || p.Input.Rollouts != len(tt.want) {
				t.Errorf("preview --where %q: rollouts %v (input.rollouts %d), want %v", tt.where, got, p.Input.Rollouts, tt.want)
			}
			code, out, errOut = runGateCmd(t, checkCmd, "--json", "--spec", "all", "--where", tt.where, capture)
			if code != exitOK {
				t.Fatalf("check exit %d: %s", code, errOut)
			}
			var c struct {
				Rollouts       int `json:"rollouts"`
				RolloutsJoined int `json:"rollouts_joined"`
			}
			if err := json.Unmarshal([]byte(out), &c); err != nil {
				t.Fatal(err)
			}
			if c.Rollouts != len(tt.want) || c.RolloutsJoined != len(tt.want) {
				t.Errorf("check --where %q: %d rollouts, %d joined, want %d", tt.where, c.Rollouts, c.RolloutsJoined, len(tt.want))
			}
		})
	}
}

func TestWhereBad(t *testing.T) {
	for _, fn := range []func([]string, *bytes.Buffer, *bytes.Buffer) int{previewCmd, checkCmd} {
		code, _, errOut := runGateCmd(t, fn, "--spec", "all", "--where", "dur>soon", gateCaptures+"all.otlp.jsonl")
		want := `--where: filter term "dur>soon" (column 1): bad duration "soon"`
		if code != exitUsage || !strings.Contains(errOut, want) {
			t.Errorf("exit %d, stderr %q; want exit 2 and %q", code, errOut, want)
		}
	}
}

// On Gym's real capture (no rollout ids: rollouts found by structure),
// --where finds exactly the rollouts whose verify failed in the run's own
// truth. A structural id names one of the rollout's spans after its '/'.
func TestWhereRealGym(t *testing.T) {
	dir := realGym + "s41-obs0-iso/all"
	truth := map[string]int{} // span id -> the fleet's rollout index
	failed := map[int]bool{}
	files, _ := filepath.Glob(filepath.Join(dir, "truth", "*.jsonl.gz"))
	for _, name := range files {
		dec := json.NewDecoder(bytes.NewReader(testfile.Gunzip(t, name)))
		for dec.More() {
			var s struct {
				SpanID  string `json:"span_id"`
				Name    string `json:"name"`
				Status  string `json:"status"`
				Rollout *int   `json:"rollout"`
			}
			if err := dec.Decode(&s); err != nil {
				t.Fatal(err)
			}
			if s.Rollout != nil {
				truth[s.SpanID] = *s.Rollout
				if s.Name == "gym.verify" && s.Status == "ERROR" {
					failed[*s.Rollout] = true
				}
			}
		}
	}
	if len(failed) == 0 {
		t.Fatal("the truth has no failed verify")
	}
	code, out, errOut := runGateCmd(t, previewCmd, append([]string{"--json", "--spec", "all", "--where", "name=gym.verify status=error"}, realGymCase(t, "s41-obs0-iso/all")...)...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var p struct {
		PerRollout []struct {
			RolloutID string `json:"rollout_id"`
		} `json:"per_rollout"`
	}
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatal(err)
	}
	got := map[int]bool{}
	for _, r := range p.PerRollout {
		_, span, _ := strings.Cut(r.RolloutID, "/")
		idx, ok := truth[span]
		if !ok {
			t.Errorf("rollout %s names no rollout span of the truth", r.RolloutID)
		}
		got[idx] = true
	}
	if len(got) != len(failed) || len(p.PerRollout) != len(failed) {
		t.Errorf("--where found rollouts %v, the truth's failed verifies are in %v", got, failed)
	}
	for i := range failed {
		if !got[i] {
			t.Errorf("rollout %d failed its verify, --where missed it", i)
		}
	}
}

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPreviewMetric previews per_rollout over a capture whose metric lines
// hold the concurrency group's histogram: the group is reported at work, in
// text and JSON, and only when the spec has it.
func TestPreviewMetric(t *testing.T) {
	metrics := filepath.Join(t.TempDir(), "metrics.jsonl")
	line := `{"resourceMetrics":[{"scopeMetrics":[{"metrics":[` +
		`{"name":"gym.concurrency.queue_wait_duration_ms","histogram":{"dataPoints":[{"count":"2"},{"count":"1"}]}},` +
		`{"name":"http.server.active_requests","sum":{"dataPoints":[{"asInt":"1"}]}}]}]}]}` + "\n"
	if err := os.WriteFile(metrics, []byte(line+line), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		spec     string
		wantJSON map[string]int64
		wantText string // a line the text report must hold
		notText  string // a line it must not hold
	}{
		{"per_rollout sees it", "per_rollout", map[string]int64{"concurrency": 4},
			"concurrency: metric gym.concurrency.queue_wait_duration_ms, 4 points", "no spans (these groups never emit spans in Gym): concurrency"},
		{"default has no concurrency", "default", map[string]int64{}, "", "concurrency: metric"},
		{"all lists the training groups alone", "all", map[string]int64{"concurrency": 4},
			"no spans (these groups never emit spans in Gym): checkpoint, evaluate, forward_backward, load_checkpoint, model_init, optimizer, step", "concurrency, checkpoint"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runGateCmd(t, previewCmd, "--json", "--spec", tc.spec, gateCaptures+"per_rollout.console.jsonl", metrics)
			if code != exitOK {
				t.Fatalf("exit %d, stderr %s", code, errOut)
			}
			var got previewJSON
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatal(err)
			}
			if len(got.Metrics) != len(tc.wantJSON) || got.Metrics["concurrency"] != tc.wantJSON["concurrency"] {
				t.Errorf("metrics = %v, want %v", got.Metrics, tc.wantJSON)
			}
			code, out, errOut = runGateCmd(t, previewCmd, "--spec", tc.spec, gateCaptures+"per_rollout.console.jsonl", metrics)
			if code != exitOK {
				t.Fatalf("exit %d, stderr %s", code, errOut)
			}
			lines := "\n" + out
			if tc.wantText != "" && !strings.Contains(lines, "\n"+tc.wantText+"\n") {
				t.Errorf("text lacks %q:\n%s", tc.wantText, out)
			}
			if strings.Contains(out, tc.notText) {
				t.Errorf("text holds %q:\n%s", tc.notText, out)
			}
		})
	}
}

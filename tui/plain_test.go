package tui_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/nemo-gym/gymtrace/internal/golden"
	"github.com/nemo-gym/gymtrace/model"
	"github.com/nemo-gym/gymtrace/receiver"
	"github.com/nemo-gym/gymtrace/tui"
)

func TestPlainTree(t *testing.T) {
	tests := []struct {
		name, file               string
		rollouts, spans, errored int
	}{
		{"all", "all.console.jsonl", 6, 341, 0},
		{"all_otlp", "all.otlp.jsonl", 6, 341, 0},
		{"per_rollout", "per_rollout.console.jsonl", 6, 332, 0},
		{"python_sdk_real", "python-sdk-real.console.jsonl", 1, 6, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := model.NewStore(model.Options{})
			defer st.Close()
			if _, err := receiver.ReadFiles(st, []string{filepath.Join("..", "receiver", "testdata", tt.file)}, receiver.ReadOptions{}); err != nil {
				t.Fatal(err)
			}
			st.Sync()
			var b strings.Builder
			if err := tui.PlainTree(&b, st.Snapshot()); err != nil {
				t.Fatal(err)
			}
			got := b.String()
			if n := strings.Count(got, "\nrollout "); n != tt.rollouts {
				t.Errorf("%d rollouts printed, want %d", n, tt.rollouts)
			}
			// Every stored span is printed once: one line each under a
			// fragment or job, indented by at least two spaces plus one level.
			lines := 0
			for _, l := range strings.Split(got, "\n") {
				if strings.HasPrefix(l, "  ") && !strings.HasPrefix(l, "  fragment ") {
					lines++
				}
			}
			if lines != tt.spans {
				t.Errorf("%d span lines, want %d", lines, tt.spans)
			}
			golden.Check(t, []byte(got))
		})
	}
}

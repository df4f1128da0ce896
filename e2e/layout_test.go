package e2e

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLayout guards the one-way flow receiver → model → gate → tui (and,
// inside gate, groups → rollouts → filter → whatif): each
// package's non-test dependencies (transitive, from go list) stay within what
// it may import.
func TestLayout(t *testing.T) {
	const mod = "github.com/nemo-gym/gymtrace/"
	tests := []struct {
		pkg    string
		banned []string
	}{
		{"model", []string{"gate", "receiver", "tui", "gymsim", "google.golang.org/grpc", "go.opentelemetry.io/"}},
		// gate's stages point one way: groups ← rollouts ← filter ← whatif.
		{"gate/groups", []string{"gate/rollouts", "gate/filter", "gate/whatif", "receiver", "tui", "gymsim", "google.golang.org/grpc", "go.opentelemetry.io/"}},
		{"gate/rollouts", []string{"gate/filter", "gate/whatif", "receiver", "tui", "gymsim", "google.golang.org/grpc", "go.opentelemetry.io/"}},
		{"gate/filter", []string{"gate/whatif", "receiver", "tui", "gymsim", "google.golang.org/grpc", "go.opentelemetry.io/"}},
		// Gym's outcome files, joined to the rollouts the structure finds.
		{"gate/evidence", []string{"gate/filter", "gate/whatif", "receiver", "tui", "gymsim", "google.golang.org/grpc", "go.opentelemetry.io/"}},
		{"gate/whatif", []string{"receiver", "tui", "gymsim", "google.golang.org/grpc", "go.opentelemetry.io/"}},
		// The analyses built on the what-if engine, and nothing above it.
		{"gate/advise", []string{"receiver", "tui", "gymsim", "google.golang.org/grpc", "go.opentelemetry.io/"}},
		{"gate/contract", []string{"gate/advise", "gate/cohort", "gate/critpath", "receiver", "tui", "gymsim", "google.golang.org/grpc", "go.opentelemetry.io/"}},
		{"gate/cohort", []string{"gate/advise", "gate/contract", "gate/critpath", "receiver", "tui", "gymsim", "google.golang.org/grpc", "go.opentelemetry.io/"}},
		{"gate/critpath", []string{"gate/whatif", "gate/filter", "receiver", "tui", "gymsim", "google.golang.org/grpc", "go.opentelemetry.io/"}},
		{"receiver", []string{"gate", "tui", "gymsim"}},
		{"tui", []string{"receiver", "gymsim", "google.golang.org/grpc"}},
		// The MCP server is a face beside tui: the store and gate, never the
		// receivers, the TUI or the wiring.
		{"mcpserver", []string{"receiver", "tui", "gymsim", "cmd", "google.golang.org/grpc"}},
		{"gate/report", []string{"receiver", "tui", "gymsim", "mcpserver", "google.golang.org/grpc", "go.opentelemetry.io/", "github.com/modelcontextprotocol/"}},
		// gymsim resolves span_groups itself: it emits what it checks against.
		{"gymsim", []string{"gate", "model", "receiver", "tui"}},
	}
	for _, tt := range tests {
		t.Run(tt.pkg, func(t *testing.T) {
			out, err := exec.Command("go", "list", "-deps", mod+tt.pkg).Output()
			if err != nil {
				t.Fatalf("go list -deps %s: %v", tt.pkg, err)
			}
			for _, dep := range strings.Fields(string(out)) {
				for _, b := range tt.banned {
					if dep == mod+b || strings.HasPrefix(dep, mod+b+"/") || (strings.Contains(b, ".") && strings.HasPrefix(dep, b)) {
						t.Errorf("%s depends on %s", tt.pkg, dep)
					}
				}
			}
		})
	}
}

package tui

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// TestRealGymFacesMatchCLI opens every real-Gym capture in the TUI, under
// the spec it was captured with, and reads its figures off the screen: the
// header's spans and rollouts and the list's rollouts must be check --json's,
// the groups panel's traces and joining verdict (count and sign) preview
// --json's. One rollout rule, one verdict, whichever face is read.
func TestRealGymFacesMatchCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := cli(t)
	metas, _ := filepath.Glob(filepath.Join(realGym, "*", "*", "meta.json"))
	if len(metas) < 20 {
		t.Fatalf("%d real captures, want every shipped one", len(metas))
	}
	header := regexp.MustCompile(`spans (\d+) · rollouts (\d+)`)
	list := regexp.MustCompile(`Rollouts (\d+)`)
	traces := regexp.MustCompile(`traces(?: sent)?\s+(\d+)\s+(\d+)`)
	joining := regexp.MustCompile(`joining\s+(?:✓ intact (\d+)/(\d+)|✗ (\d+)/(\d+) split)`)
	for _, meta := range metas {
		dir := filepath.Dir(meta)
		name, _ := filepath.Rel(realGym, dir)
		t.Run(name, func(t *testing.T) {
			var m struct {
				Spec string `json:"spec"`
			}
			raw, err := os.ReadFile(meta)
			if err != nil || json.Unmarshal(raw, &m) != nil {
				t.Fatalf("%s: %v", meta, err)
			}
			files := realFiles(t, name)
			var chk struct {
				Spans, Rollouts int
			}
			var prev struct {
				Result struct {
					Traces int
					Joined int `json:"rollouts_joined"`
					Split  int `json:"rollouts_split"`
				}
			}
			for _, c := range []struct {
				args []string
				into any
			}{
				{append([]string{"check", "--spec", m.Spec, "--json"}, files...), &chk},
				{append([]string{"preview", "--spec", m.Spec, "--current", m.Spec, "--json"}, files...), &prev},
			} {
				out, _ := exec.Command(bin, c.args...).Output() // check exits 1 on a broken capture
				if err := json.Unmarshal(out, c.into); err != nil {
					t.Fatalf("%s: %v\n%s", c.args[0], err, out)
				}
			}
			scr := ansi.Strip(realModel(t, name, 200, 50, m.Spec).View())
			num := func(re *regexp.Regexp, what string) []int {
				mm := re.FindStringSubmatch(scr)
				if mm == nil {
					t.Fatalf("the screen shows no %s:\n%s", what, scr)
				}
				var out []int
				for _, x := range mm[1:] {
					n, _ := strconv.Atoi(x)
					out = append(out, n)
				}
				return out
			}
			h, l := num(header, "header"), num(list, "rollout list")
			if h[0] != chk.Spans || h[1] != chk.Rollouts || l[0] != chk.Rollouts {
				t.Errorf("header spans %d rollouts %d, list %d; check --json: %d spans, %d rollouts", h[0], h[1], l[0], chk.Spans, chk.Rollouts)
			}
			if tr := num(traces, "traces row"); tr[0] != prev.Result.Traces {
				t.Errorf("traces %d on screen, preview --json %d", tr[0], prev.Result.Traces)
			}
			j := num(joining, "joining verdict")
			joined, split, total := j[0], 0, j[1]
			if strings.Contains(joining.FindString(scr), "✗") {
				joined, split, total = j[3]-j[2], j[2], j[3]
			}
			if joined != prev.Result.Joined || split != prev.Result.Split || total != chk.Rollouts {
				t.Errorf("joining on screen: %d joined, %d split of %d; preview --json: %d joined, %d split; check: %d rollouts",
					joined, split, total, prev.Result.Joined, prev.Result.Split, chk.Rollouts)
			}
		})
	}
}

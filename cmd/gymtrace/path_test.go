package main

import (
	"bytes"
	"encoding/json"
	"github.com/nemo-gym/gymtrace/internal/golden"
	"math"
	"strings"
	"testing"
)

func pathCmd(args []string, o, e *bytes.Buffer) int { return runPath(args, o, e) }

// TestPathAddsUp: for every rollout of real Gym captures (joined, split by
// a broken hop, driven by NeMo-RL, G3), the path's segments add up to the
// rollout's duration as diff reports it, within 5 %, and its holders to
// the same.
func TestPathAddsUp(t *testing.T) {
	for _, c := range []string{"s41-obs1-iso/all", "s41-obs0-iso/broken-model", "s61-rl-iso/rl-all", "s52-g3-obs0-iso/all"} {
		t.Run(c, func(t *testing.T) {
			files := realGymCase(t, c)
			code, out, errOut := runGateCmd(t, previewCmd, append([]string{"--json", "--spec", "all"}, files...)...)
			if code != exitOK {
				t.Fatalf("preview: %s", errOut)
			}
			var p previewJSON
			if err := json.Unmarshal([]byte(out), &p); err != nil {
				t.Fatal(err)
			}
			if len(p.PerRollout) == 0 {
				t.Fatal("no rollouts")
			}
			for _, r := range p.PerRollout {
				code, out, errOut := runGateCmd(t, pathCmd, append([]string{"--json", r.RolloutID}, files...)...)
				if code != exitOK {
					t.Fatalf("path %s: exit %d: %s", r.RolloutID, code, errOut)
				}
				var path pathJSON
				if err := json.Unmarshal([]byte(out), &path); err != nil {
					t.Fatal(err)
				}
				_, dout, _ := runGateCmd(t, diffCmd, append([]string{"--json", r.RolloutID, r.RolloutID}, files...)...)
				var d diffJSON
				if err := json.Unmarshal([]byte(dout), &d); err != nil {
					t.Fatal(err)
				}
				var segs, held float64
				for _, s := range path.Segments {
					segs += s.SelfMS
				}
				for _, h := range path.Holders {
					held += h.MS
				}
				want := d.A.DurationMS
				if want <= 0 || math.Abs(segs-want) > 0.05*want || math.Abs(held-want) > 0.05*want {
					t.Errorf("rollout %s: segments %.3f ms, holders %.3f ms, rollout %.3f ms", r.RolloutID, segs, held, want)
				}
				if path.Segments[0].Holder != "driver" {
					t.Errorf("rollout %s: the path starts in %s (%s), not the driver's admission", r.RolloutID, path.Segments[0].Holder, path.Segments[0].Service)
				}
			}
		})
	}
}

// TestPathText: one rollout's path as the text report prints it.
func TestPathText(t *testing.T) {
	code, out, errOut := runGateCmd(t, pathCmd, append([]string{"3-0"}, realGymCase(t, "s41-obs1-iso/all")...)...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	golden.CheckNamed(t, "s41_obs1_3-0", []byte(out))
	code, _, errOut = runGateCmd(t, pathCmd, append([]string{"3-00"}, realGymCase(t, "s41-obs1-iso/all")...)...)
	if code != exitUsage || errOut != "gymtrace path: rollout \"3-00\": no such rollout among 20; nearest 3-0, 0-0, 1-0\n" {
		t.Errorf("unknown rollout: exit %d: %s", code, errOut)
	}
	// A unique prefix or suffix names the rollout; one shared by several
	// is refused, naming them.
	for _, id := range []string{"13", "3-0"} {
		if c, o, e := runGateCmd(t, pathCmd, append([]string{id}, realGymCase(t, "s41-obs1-iso/all")...)...); c != exitOK || !strings.Contains(o, "13-0") && id == "13" || o == "" {
			t.Errorf("path %s: exit %d, stderr %s", id, c, e)
		}
	}
	code, _, errOut = runGateCmd(t, pathCmd, append([]string{"1"}, realGymCase(t, "s41-obs1-iso/all")...)...)
	if code != exitUsage || !strings.Contains(errOut, `rollout "1" names 11 rollouts: 1-0, 10-0, 11-0,`) {
		t.Errorf("an ambiguous prefix: exit %d: %s", code, errOut)
	}
}

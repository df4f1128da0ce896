package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/gate/whatif"
	"github.com/nemo-gym/gymtrace/internal/testfile"
	"github.com/nemo-gym/gymtrace/model"
	"github.com/nemo-gym/gymtrace/receiver"
)

// TestRLPresetsMoveTheParent: NeMo-RL's own span_groups decide which of its
// spans sit above the rollouts' aiohttp calls. Under its `all` the parent is
// rl.gym.run_rollouts; under `default` (job, checkpoint, evaluate,
// model_init, setup) only rl.grpo.job is left, so the calls hang under it;
// with NeMo-RL's telemetry off each call is a root. A rollout is the
// agent's POST /run and all it causes whatever is above it: the same 20
// rollouts, joined, every time.
func TestRLPresetsMoveTheParent(t *testing.T) {
	dir := filepath.Join(realGym, "s61-rl-iso", "rl-all", "console")
	for _, tc := range []struct {
		name string
		keep map[string]bool // NeMo-RL span names kept; nil: none
	}{
		{"default", map[string]bool{"rl.grpo.job": true}},
		{"telemetry_off", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := t.TempDir()
			files, _ := filepath.Glob(filepath.Join(dir, "*.log.gz"))
			var paths []string
			for _, f := range files {
				lines := testfile.Lines(t, f)
				if strings.HasPrefix(filepath.Base(f), "rl.") {
					lines = reparentRL(t, lines, tc.keep)
				}
				p := filepath.Join(out, strings.TrimSuffix(filepath.Base(f), ".gz"))
				if err := os.WriteFile(p, []byte(strings.Join(bytesToStrings(lines), "\n")+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				paths = append(paths, p)
			}
			st := model.NewStore(model.Options{})
			defer st.Close()
			if _, err := receiver.ReadFiles(st, paths, receiver.ReadOptions{}); err != nil {
				t.Fatal(err)
			}
			st.Sync()
			rep := whatif.NewEngine(groups.Default()).Check(st.Snapshot(), time.Now(), 0)
			if rep.Rollouts != 20 || rep.Joined != 20 || rep.Split != 0 {
				t.Errorf("rollouts %d, joined %d, split %d; want 20 joined", rep.Rollouts, rep.Joined, rep.Split)
			}
			for _, r := range rep.Structure.Rollouts {
				if top := r.Fragments[0].Spans[0]; st.Snapshot().ServiceName(top.Resource) != "nemo-rl" || top.Kind != model.KindClient {
					t.Errorf("rollout %s starts at %s, want NeMo-RL's aiohttp call", r.ID, st.Snapshot().Str(top.Name))
				}
			}
		})
	}
}

// reparentRL keeps NeMo-RL's spans named in keep (and its aiohttp calls),
// hanging each call under the nearest kept ancestor, as NeMo-RL would have
// emitted them under a narrower spec.
func reparentRL(t *testing.T, lines [][]byte, keep map[string]bool) [][]byte {
	t.Helper()
	type span struct {
		raw    map[string]any
		id     string
		parent string
		name   string
	}
	var spans []span
	byID := map[string]*span{}
	for _, l := range lines {
		var m map[string]any
		if json.Unmarshal(l, &m) != nil || m["context"] == nil {
			continue
		}
		ctx := m["context"].(map[string]any)
		p, _ := m["parent_id"].(string)
		spans = append(spans, span{raw: m, id: ctx["span_id"].(string), parent: p, name: m["name"].(string)})
	}
	for i := range spans {
		byID[spans[i].id] = &spans[i]
	}
	var out [][]byte
	for _, s := range spans {
		if s.name != "POST" && !keep[s.name] {
			continue
		}
		p := s.parent
		for p != "" && byID[p] != nil && !keep[byID[p].name] {
			p = byID[p].parent
		}
		if p == "" || byID[p] == nil {
			s.raw["parent_id"] = nil
		} else {
			s.raw["parent_id"] = p
		}
		b, err := json.Marshal(s.raw)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

func bytesToStrings(bs [][]byte) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = string(b)
	}
	return out
}

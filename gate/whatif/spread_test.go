package whatif

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/internal/testfile"
	"github.com/nemo-gym/gymtrace/model"
	"github.com/nemo-gym/gymtrace/receiver"
)

// readReal reads one real capture's console logs into a snapshot.
func readReal(t *testing.T, dir string) *model.Snapshot {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "console", "*"))
	if len(files) == 0 {
		t.Fatalf("%s: no console logs", dir)
	}
	st := model.NewStore(model.Options{})
	t.Cleanup(st.Close)
	if _, err := receiver.ReadFiles(st, files, receiver.ReadOptions{}); err != nil {
		t.Fatalf("%s: %v", dir, err)
	}
	st.Sync()
	return st.Snapshot()
}

// TestTimingSpreadRealG3: previewing real G3's all capture under each spec
// a real run was made under, the spread counts the capture's listener
// requests and races as its console lines show them, and the real run's
// spans, in total and per rollout, fall within the stated range, though
// result.spans is the capture's projection (one real run differs from it).
func TestTimingSpreadRealG3(t *testing.T) {
	group := filepath.Join(realGymDir, "s52-g3-obs0-iso")
	all := filepath.Join(group, "all")
	snap := readReal(t, all)
	v, _ := groups.DetectVariant(snap)
	eng := NewEngine(v.Registry())
	// What the console lines show: requests with a disconnect listener
	// (a receive without an event type, or reading http.disconnect) and,
	// of the 200s, those whose listener heard the disconnect.
	listeners, races := consoleListeners(t, filepath.Join(all, "console"))
	if listeners == 0 || races == 0 {
		t.Fatalf("%d listener requests, %d races in %s: want some of each", listeners, races, all)
	}
	// rolloutOf maps the capture's span ids to their rollout (the truth).
	rolloutOf := map[string]int{}
	files, _ := filepath.Glob(filepath.Join(all, "truth", "*.jsonl.gz"))
	for _, f := range files {
		for _, line := range testfile.Lines(t, f) {
			var l struct {
				SpanID  string `json:"span_id"`
				Rollout *int   `json:"rollout"`
			}
			if err := json.Unmarshal(line, &l); err != nil {
				t.Fatal(err)
			}
			if l.Rollout != nil {
				rolloutOf[l.SpanID] = *l.Rollout
			}
		}
	}
	differs := 0
	for _, c := range []string{"spec-default", "spec-per_rollout", "spec-server+rollout+verify"} {
		t.Run(c, func(t *testing.T) {
			var real struct {
				Spans      int                            `json:"spans"`
				PerRollout map[string]struct{ Spans int } `json:"per_rollout"`
				Meta       struct{ Spec string }          `json:"meta"`
			}
			raw, err := os.ReadFile(filepath.Join(group, c, "summary.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(raw, &real); err != nil {
				t.Fatal(err)
			}
			rep := eng.PreviewResolution(snap, v.Registry().Resolve(real.Meta.Spec))
			s := eng.TimingSpread(snap, rep)
			if s == nil {
				t.Fatal("no spread for a G3 capture with server on")
			}
			if s.Requests != listeners || s.Fewer != races || s.More != 0 {
				t.Errorf("spread counts %d requests, %d fewer, %d more; the console shows %d, %d, 0", s.Requests, s.Fewer, s.More, listeners, races)
			}
			if s.SpansMin > real.Spans || real.Spans > s.SpansMax || s.SpansMin > rep.Result.Spans || rep.Result.Spans > s.SpansMax {
				t.Errorf("spans %d to %d; the real run has %d, the preview %d", s.SpansMin, s.SpansMax, real.Spans, rep.Result.Spans)
			}
			if real.Spans != rep.Result.Spans {
				differs++
			}
			for _, r := range rep.Structure.Rollouts {
				idx, ok := rolloutOf[r.Fragments[0].Spans[0].SpanID.String()]
				if !ok {
					t.Fatalf("rollout %s: no truth for its first span", r.ID)
				}
				want := real.PerRollout[strconv.Itoa(idx)].Spans
				rng := s.PerRollout[r.ID]
				if want < rng.Min || want > rng.Max {
					t.Errorf("rollout %s (truth %d): spans %d to %d, the real run has %d", r.ID, idx, rng.Min, rng.Max, want)
				}
			}
			if !strings.Contains(s.Sentence(), "http.disconnect") {
				t.Errorf("sentence %q does not say why", s.Sentence())
			}
		})
	}
	if differs == 0 {
		t.Log("every real run matched the capture's projection exactly")
	}
	// No spread where nothing is timing-dependent: server off, and G1.
	if s := eng.TimingSpread(snap, eng.PreviewResolution(snap, v.Registry().Resolve("job,http_client,rollout"))); s != nil {
		t.Errorf("spread %+v with server off", s)
	}
	g1 := readReal(t, filepath.Join(realGymDir, "s41-obs0-iso", "all"))
	gv, _ := groups.DetectVariant(g1)
	ge := NewEngine(gv.Registry())
	if s := ge.TimingSpread(g1, ge.PreviewResolution(g1, gv.Registry().Resolve("all"))); s != nil {
		t.Errorf("spread %+v over G1", s)
	}
}

// consoleListeners counts, in a capture's console logs, the requests with
// a disconnect listener and the 200 answers whose listener heard it.
func consoleListeners(t *testing.T, dir string) (listeners, races int) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.log.gz"))
	type span struct {
		Name    string `json:"name"`
		Context struct {
			SpanID string `json:"span_id"`
		} `json:"context"`
		Parent *string        `json:"parent_id"`
		Attrs  map[string]any `json:"attributes"`
	}
	byID := map[string]span{}
	var receives []span
	for _, f := range files {
		for _, line := range testfile.Lines(t, f) {
			if !strings.HasPrefix(string(line), `{"name"`) {
				continue
			}
			var s span
			if err := json.Unmarshal(line, &s); err != nil {
				t.Fatal(err)
			}
			byID[s.Context.SpanID] = s
			if strings.HasSuffix(s.Name, " http receive") {
				receives = append(receives, s)
			}
		}
	}
	for _, r := range receives {
		typ, typed := r.Attrs["asgi.event.type"]
		if typed && typ != "http.disconnect" {
			continue
		}
		listeners++
		if p, ok := byID[*r.Parent]; typed && ok && p.Attrs["http.status_code"] == float64(200) {
			races++
		}
	}
	return listeners, races
}

func TestPoissonBounds(t *testing.T) {
	for _, c := range []struct {
		x    int
		want float64
	}{{0, 2.9957}, {1, 4.7439}, {2, 6.2958}, {5, 10.5130}} {
		if got := poissonUpper95(c.x); math.Abs(got-c.want) > 1e-3 {
			t.Errorf("poissonUpper95(%d) = %.4f, want %.4f", c.x, got, c.want)
		}
	}
	for _, c := range []struct {
		lambda float64
		want   int
	}{{0, 0}, {0.05, 0}, {0.06, 1}, {0.24, 1}, {1, 3}, {3, 6}} {
		if got := poissonQuantile95(c.lambda); got != c.want {
			t.Errorf("poissonQuantile95(%g) = %d, want %d", c.lambda, got, c.want)
		}
	}
}

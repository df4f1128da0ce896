package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/gate/whatif"
	"github.com/nemo-gym/gymtrace/internal/testfile"
	"github.com/nemo-gym/gymtrace/model"
	"github.com/nemo-gym/gymtrace/receiver"
)

// Captures of NeMo Gym's real telemetry code with the fleet's own truth
// (testdata/real-gym/README.md): the check over each capture, and the preview
// of each spec over the same seed's `all` capture, must give the truth's
// answers — the same rules the project's acceptance grades by.

const realGym = "../testdata/real-gym"

type realSummary struct {
	Spans          int `json:"spans"`
	Traces         int `json:"traces"`
	Rollouts       int `json:"rollouts"`
	Joined         int `json:"rollouts_joined"`
	Split          int `json:"rollouts_split"`
	Leaked         int `json:"leaked_server_spans"`
	SpansPerRollut struct {
		P50 int `json:"p50"`
		P99 int `json:"p99"`
		Max int `json:"max"`
	} `json:"spans_per_rollout"`
	PerRollout map[string]struct {
		Spans  int  `json:"spans"`
		Joined bool `json:"joined"`
	} `json:"per_rollout"`
	Meta struct {
		Spec       string `json:"spec"`
		AIOHTTP    int    `json:"aiohttp"`
		Isolate    int    `json:"isolate_context"`
		GymVariant string `json:"gym_variant"`
	} `json:"meta"`
}

type realTruthSpan struct {
	SpanID   string `json:"span_id"`
	ParentID string `json:"parent_span_id"`
	Name     string `json:"name"`
	Kind     string `json:"kind"`
	Group    string `json:"group"`
	Rollout  *int   `json:"rollout"`
}

// readTruth returns every span of a case's truth.
func readTruth(t *testing.T, dir string) []realTruthSpan {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "truth", "*.jsonl.gz"))
	var out []realTruthSpan
	for _, name := range files {
		for _, line := range testfile.Lines(t, name) {
			var s realTruthSpan
			if err := json.Unmarshal(line, &s); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			out = append(out, s)
		}
	}
	return out
}

func realCases(t *testing.T) []string {
	cases, err := filepath.Glob(filepath.Join(realGym, "*", "*", "summary.json"))
	if err != nil || len(cases) == 0 {
		t.Fatalf("no real-Gym captures under %s: %v", realGym, err)
	}
	for i, c := range cases {
		cases[i] = filepath.Dir(c)
	}
	return cases
}

func loadSummary(t *testing.T, dir string) realSummary {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s realSummary
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("%s: %v", dir, err)
	}
	return s
}

// truthRollouts maps span ids to the truth's rollout index (-1: run-level).
func truthRollouts(t *testing.T, dir string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, s := range readTruth(t, dir) {
		out[s.SpanID] = -1
		if s.Rollout != nil {
			out[s.SpanID] = *s.Rollout
		}
	}
	return out
}

// mapRollout maps a gymtrace rollout id to the truth's index: a Gym id N-M is
// task N; a synthetic id names one of the rollout's spans.
func mapRollout(id string, bySpan map[string]int) int {
	if i := strings.LastIndexByte(id, '/'); strings.HasPrefix(id, "~") && i >= 0 {
		if r, ok := bySpan[id[i+1:]]; ok {
			return r
		}
		return -2
	}
	if n, _, ok := strings.Cut(id, "-"); ok {
		if v, err := strconv.Atoi(n); err == nil {
			return v
		}
	}
	return -2
}

func loadCase(t *testing.T, dir string) *model.Snapshot {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "console", "*"))
	if len(files) == 0 {
		files, _ = filepath.Glob(filepath.Join(dir, "otlp", "*"))
	}
	st := model.NewStore(model.Options{})
	t.Cleanup(st.Close)
	if _, err := receiver.ReadFiles(st, files, receiver.ReadOptions{}); err != nil {
		t.Fatalf("%s: %v", dir, err)
	}
	st.Sync()
	return st.Snapshot()
}

func TestRealGymCheck(t *testing.T) {
	reg := groups.Default()
	for _, dir := range realCases(t) {
		name, _ := filepath.Rel(realGym, dir)
		t.Run(name, func(t *testing.T) {
			want := loadSummary(t, dir)
			snap := loadCase(t, dir)
			if _, err := reg.Parse(want.Meta.Spec); err != nil {
				t.Fatal(err)
			}
			rep := whatif.NewEngine(reg).Check(snap, time.Now(), 0)
			if rep.Spans != want.Spans || rep.Traces != want.Traces || rep.Rollouts != want.Rollouts ||
				rep.Joined != want.Joined || rep.Split != want.Split || rep.Intact != (want.Split == 0) {
				t.Errorf("spans %d traces %d rollouts %d joined %d split %d intact %v; truth %d %d %d %d %d %v",
					rep.Spans, rep.Traces, rep.Rollouts, rep.Joined, rep.Split, rep.Intact,
					want.Spans, want.Traces, want.Rollouts, want.Joined, want.Split, want.Split == 0)
			}
			bySpan := truthRollouts(t, dir)
			var got, truly []int
			for id, rc := range rep.ByRollout {
				if rc.Status == whatif.Split {
					got = append(got, mapRollout(id, bySpan))
				}
			}
			for id, r := range want.PerRollout {
				if !r.Joined {
					n, _ := strconv.Atoi(id)
					truly = append(truly, n)
				}
			}
			sort.Ints(got)
			sort.Ints(truly)
			if !equalInts(got, truly) {
				t.Errorf("split rollouts map to %v, truly split %v", got, truly)
			}
			// Leaks: each carried-over request span is found (only leak
			// captures have them).
			if len(rep.Structure.Leaks) != want.Leaked {
				t.Errorf("context leaks %d, truth %d", len(rep.Structure.Leaks), want.Leaked)
			}
		})
	}
}

func TestRealGymPreview(t *testing.T) {
	reg := groups.Default()
	for _, dir := range realCases(t) {
		name, _ := filepath.Rel(realGym, dir)
		base := filepath.Base(dir)
		if !strings.HasPrefix(base, "spec-") && !strings.HasPrefix(base, "aiohttp-spec-") && !strings.HasPrefix(base, "rl-gym-") {
			continue
		}
		want := loadSummary(t, dir)
		if want.Meta.Isolate == 0 {
			continue // which spans a carry-over moves depends on timing: only the check is exact
		}
		all := filepath.Join(filepath.Dir(dir), "all")
		switch {
		case want.Meta.AIOHTTP == 1:
			all = filepath.Join(filepath.Dir(dir), "aiohttp-all")
		case strings.HasPrefix(base, "rl-gym-"):
			all = filepath.Join(filepath.Dir(dir), "rl-all")
		}
		t.Run(name, func(t *testing.T) {
			snap := loadCase(t, all)
			reg := reg
			if want.Meta.GymVariant != "" {
				v, _ := groups.DetectVariant(snap)
				if v.Name != want.Meta.GymVariant {
					t.Fatalf("variant %s, the capture is %s", v.Name, want.Meta.GymVariant)
				}
				reg = v.Registry()
			}
			spec, err := reg.Parse(want.Meta.Spec)
			if err != nil {
				t.Fatal(err)
			}
			if want.Meta.GymVariant == "G3" {
				// G3's disconnect middleware reads the request stream a
				// timing-dependent number of times: the real run under the
				// spec has its own count of `http receive` spans. Spans are
				// compared with the capture's truth projected onto the spec.
				projectSpans(t, all, reg, spec, &want)
			}
			eng := whatif.NewEngine(reg)
			rep := eng.Preview(snap, spec)
			r := rep.Result
			// What each group costs and buys, over every real shape
			// (aiohttp's ungated spans included).
			worth := eng.Worth(snap, spec, 50*time.Microsecond)
			if len(worth) < len(reg.Groups()) {
				t.Errorf("worth of %d groups, want at least %d", len(worth), len(reg.Groups()))
			}
			if r.Spans != want.Spans || r.Traces != want.Traces || rep.Input.Rollouts != want.Rollouts ||
				r.RolloutsJoined != want.Joined || r.RolloutsSplit != want.Split ||
				r.P50 != want.SpansPerRollut.P50 || r.P99 != want.SpansPerRollut.P99 || r.Max != want.SpansPerRollut.Max {
				t.Errorf("spans %d traces %d rollouts %d joined %d split %d p50/p99/max %d/%d/%d; the real run: %d %d %d %d %d %d/%d/%d",
					r.Spans, r.Traces, rep.Input.Rollouts, r.RolloutsJoined, r.RolloutsSplit, r.P50, r.P99, r.Max,
					want.Spans, want.Traces, want.Rollouts, want.Joined, want.Split, want.SpansPerRollut.P50, want.SpansPerRollut.P99, want.SpansPerRollut.Max)
			}
			bySpan := truthRollouts(t, all)
			kept := map[int]int{}
			entries := map[int]int{}
			for _, pr := range rep.PerRollout {
				m := mapRollout(pr.ID, bySpan)
				kept[m] += pr.Spans
				entries[m]++
			}
			for id, r := range want.PerRollout {
				n, _ := strconv.Atoi(id)
				if kept[n] != r.Spans || entries[n] != 1 {
					t.Errorf("rollout %d: %d spans in %d entries, the real run %d in one", n, kept[n], entries[n], r.Spans)
				}
			}
		})
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestRealGymJobStillOpen: in a live `all` capture the run's gym.job span
// arrives last. Until it does, every rollout is joined (its spans carry the
// job's trace id), the traces are not over-counted, and a preview under a spec
// with and without job gives what the finished run gives.
func TestRealGymJobStillOpen(t *testing.T) {
	dir := filepath.Join(realGym, "s41-obs0-iso", "all")
	full := loadCase(t, dir)
	st := model.NewStore(model.Options{})
	t.Cleanup(st.Close)
	files, _ := filepath.Glob(filepath.Join(dir, "console", "*.log.gz"))
	dropped := 0
	for _, name := range files {
		var kept strings.Builder
		for _, line := range testfile.Lines(t, name) {
			if bytes.Contains(line, []byte(`"name": "gym.job"`)) {
				dropped++
				continue
			}
			kept.Write(line)
			kept.WriteByte('\n')
		}
		if _, err := receiver.ReadStream(st, filepath.Base(name), strings.NewReader(kept.String()), receiver.ReadOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if dropped != 1 {
		t.Fatalf("dropped %d gym.job spans, want the run's one", dropped)
	}
	st.Sync()
	live := st.Snapshot()
	reg := groups.Default()
	rep := whatif.NewEngine(reg).Check(live, time.Now(), 0)
	if rep.Rollouts != 20 || rep.Joined != 20 || rep.Split != 0 || len(rep.Hops) != 0 {
		t.Errorf("job still open: %d rollouts, %d joined, %d split, hops %v; want 20 joined", rep.Rollouts, rep.Joined, rep.Split, rep.Hops)
	}
	for _, spec := range []string{"all", "default", "per_rollout"} {
		set, _ := reg.Parse(spec)
		a := whatif.NewEngine(reg).Preview(live, set).Result
		b := whatif.NewEngine(reg).Preview(full, set).Result
		if a.Traces != b.Traces || a.RolloutsJoined != b.RolloutsJoined || a.RolloutsSplit != b.RolloutsSplit || a.P50 != b.P50 {
			t.Errorf("%s: job still open gives %d traces, %d/%d joined/split, p50 %d; the finished run %d, %d/%d, %d",
				spec, a.Traces, a.RolloutsJoined, a.RolloutsSplit, a.P50, b.Traces, b.RolloutsJoined, b.RolloutsSplit, b.P50)
		}
	}
}

// TestRealGymPreviewCarryOver: in a capture with the keep-alive carry-over,
// a leaked request span sits in the trace its context came from. Without the
// job span over every rollout, a rollout with a span leaked under another
// rollout's context is split, whatever the spec; the trace count is the real
// run's. The split rollouts are told from the truth's own parent links.
func TestRealGymPreviewCarryOver(t *testing.T) {
	reg := groups.Default()
	for _, dir := range realCases(t) {
		want := loadSummary(t, dir)
		if want.Meta.Isolate != 0 || filepath.Base(dir) != "spec-per_rollout" {
			continue
		}
		all := filepath.Join(filepath.Dir(dir), "all")
		name, _ := filepath.Rel(realGym, all)
		t.Run(name, func(t *testing.T) {
			truth := readTruth(t, all)
			rollOf := map[string]int{}
			for _, s := range truth {
				rollOf[s.SpanID] = -1
				if s.Rollout != nil {
					rollOf[s.SpanID] = *s.Rollout
				}
			}
			carried := map[int]bool{}
			for _, s := range truth {
				leaked := s.Group == "server" && s.Kind == "INTERNAL" &&
					!strings.HasSuffix(s.Name, " http send") && !strings.HasSuffix(s.Name, " http receive")
				if host, ok := rollOf[s.ParentID]; leaked && s.Rollout != nil && ok && host != *s.Rollout {
					carried[*s.Rollout] = true
				}
			}
			if len(carried) == 0 {
				t.Fatal("no rollout has a span carried over from another: not a carry-over capture")
			}
			snap := loadCase(t, all)
			for _, tc := range []struct {
				spec  string
				split int
			}{{"all", 0}, {"per_rollout", len(carried)}} {
				spec, err := reg.Parse(tc.spec)
				if err != nil {
					t.Fatal(err)
				}
				r := whatif.NewEngine(reg).Preview(snap, spec).Result
				if r.RolloutsSplit != tc.split || r.RolloutsJoined != want.Rollouts-tc.split {
					t.Errorf("%s: %d joined, %d split; want %d split (rollouts with a span carried over from another)",
						tc.spec, r.RolloutsJoined, r.RolloutsSplit, tc.split)
				}
				if tc.spec == "per_rollout" && (r.Traces != want.Traces || r.Spans != want.Spans) {
					t.Errorf("per_rollout: %d spans in %d traces, the real run %d in %d", r.Spans, r.Traces, want.Spans, want.Traces)
				}
			}
		})
	}
}

// projectSpans replaces want's span counts (total and per rollout) by those
// of the capture's truth kept under spec: the spans the capture would have
// had under it, free of the run-to-run spread of G3's receive spans.
func projectSpans(t *testing.T, dir string, reg *groups.Registry, spec groups.Set, want *realSummary) {
	t.Helper()
	want.Spans = 0
	per := map[string]int{}
	var counts []int
	for _, s := range readTruth(t, dir) {
		g, ok := reg.Lookup(s.Group)
		if s.Group != "aiohttp" && (!ok || !spec.Has(g)) {
			continue
		}
		want.Spans++
		if s.Rollout != nil {
			per[strconv.Itoa(*s.Rollout)]++
		}
	}
	for id, r := range want.PerRollout {
		r.Spans = per[id]
		want.PerRollout[id] = r
		counts = append(counts, r.Spans)
	}
	sort.Ints(counts)
	rank := func(q int) int { return counts[max(0, (q*len(counts)+99)/100-1)] }
	want.SpansPerRollut.P50, want.SpansPerRollut.P99, want.SpansPerRollut.Max = rank(50), rank(99), counts[len(counts)-1]
}

package whatif

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/nemo-gym/gymtrace/gate/groups"
)

// TestEstimateIsPreview: on real captures (rollouts, run-level traffic,
// gym.job spans, a leak, an RL run), every spec over the variant's groups
// costs in Estimate what Preview counts, spans, bytes, wall time and the
// spans of each group.
func TestEstimateIsPreview(t *testing.T) {
	for _, dir := range []string{"s41-obs0-iso/all", "s41-obs0-leak/all", "s52-g3-obs0-iso/all", "s61-rl-iso/rl-all", "s41-obs0-iso/standalone-default"} {
		snap, reg := realSnap(t, filepath.Join(realGymDir, dir))
		var gs []groups.Group
		for _, info := range reg.Groups() {
			gs = append(gs, info.Group)
		}
		if len(gs) > 10 {
			gs = gs[:10]
		}
		eng, fresh := NewEngine(reg), NewEngine(reg)
		checked := 0
		for mask := 0; mask < 1<<len(gs); mask++ {
			var spec groups.Set
			for i, g := range gs {
				if mask&(1<<i) != 0 {
					spec = spec.With(g)
				}
			}
			// One engine previews and estimates alike; another only
			// estimates, its table from nothing.
			want, got, again := eng.Preview(snap, spec), eng.Estimate(snap, spec), fresh.Estimate(snap, spec)
			for _, e := range []*Report{got, again} {
				if e.Result.Spans != want.Result.Spans || e.Result.Bytes != want.Result.Bytes || e.WallSeconds != want.WallSeconds || e.Input != want.Input ||
					!reflect.DeepEqual(e.PerGroup, want.PerGroup) {
					t.Fatalf("%s, spec %s: estimate %d spans %d B %v s %+v, preview %d spans %d B %v s %+v", dir, reg.Spec(spec),
						e.Result.Spans, e.Result.Bytes, e.WallSeconds, e.Input, want.Result.Spans, want.Result.Bytes, want.WallSeconds, want.Input)
				}
			}
			checked++
		}
		if snap.Stats.Stored == 0 || checked < 2 {
			t.Fatalf("%s: %d spans, %d specs", dir, snap.Stats.Stored, checked)
		}
	}
}

// TestWorthKeptIsFresh: an engine that already answered Worth, Preview and
// Estimate for other specs of a snapshot (its counts and joins kept) gives
// each spec's worth as a fresh engine does.
func TestWorthKeptIsFresh(t *testing.T) {
	for _, dir := range []string{"s41-obs0-iso/all", "s61-rl-iso/rl-all"} {
		snap, reg := realSnap(t, filepath.Join(realGymDir, dir))
		eng := NewEngine(reg)
		for _, text := range []string{"default", "all", "per_rollout", "default,sandbox", "none", "default"} {
			spec := reg.Resolve(text).Set
			eng.Estimate(snap, spec.Without(groups.Server))
			got, want := eng.Worth(snap, spec, 0), NewEngine(reg).Worth(snap, spec, 0)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s, spec %s: kept %+v\nfresh %+v", dir, text, got, want)
			}
			eng.Preview(snap, spec.With(groups.HTTPClient))
		}
	}
}

// TestTracesIsPreview: each rollout's traces under every spec over the
// variant's groups, asked of one engine one spec after another (its
// counts kept far past what Preview's results keep, shared by rollouts
// alike), are a fresh preview's.
func TestTracesIsPreview(t *testing.T) {
	var shared []string
	for _, dir := range []string{"s41-obs0-iso/all", "s41-obs0-leak/all", "s61-rl-iso/rl-all"} {
		snap, reg := realSnap(t, filepath.Join(realGymDir, dir))
		var gs []groups.Group
		for _, info := range reg.Groups() {
			gs = append(gs, info.Group)
		}
		if len(gs) > 8 {
			gs = gs[:8]
		}
		eng := NewEngine(reg)
		var got []int32
		split := 0
		for round := 0; round < 2; round++ {
			for mask := 0; mask < 1<<len(gs); mask++ {
				var spec groups.Set
				for i, g := range gs {
					if mask&(1<<i) != 0 {
						spec = spec.With(g)
					}
				}
				got = eng.Traces(snap, spec, got)
				want := NewEngine(reg).Preview(snap, spec)
				if len(got) != len(want.PerRollout) {
					t.Fatalf("%s, spec %s: %d rollouts, preview %d", dir, reg.Spec(spec), len(got), len(want.PerRollout))
				}
				for i := range got {
					if int(got[i]) != want.PerRollout[i].Traces {
						t.Fatalf("%s, spec %s, round %d: rollout %s %d traces, preview %d", dir, reg.Spec(spec), round,
							want.PerRollout[i].ID, got[i], want.PerRollout[i].Traces)
					}
					if got[i] > 1 {
						split++
					}
				}
			}
		}
		if len(got) == 0 || split == 0 {
			t.Fatalf("%s: %d rollouts, none split under any spec", dir, len(got))
		}
		if len(eng.tr.list) >= len(got) {
			shared = append(shared, dir)
		}
	}
	if len(shared) == 3 {
		t.Errorf("in every capture each rollout is a shape of its own: the counts shared were not tested")
	}
}

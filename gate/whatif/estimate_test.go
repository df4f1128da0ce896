package whatif

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/nemo-gym/gymtrace/gate/groups"
)

// TestEstimateIsPreview: on real captures (rollouts, run-level traffic,
// gym.job spans, a leak, an RL run), every spec over the variant's groups
// costs in Estimate what Preview counts, spans, bytes and wall time.
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
				if e.Result.Spans != want.Result.Spans || e.Result.Bytes != want.Result.Bytes || e.WallSeconds != want.WallSeconds || e.Input != want.Input {
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

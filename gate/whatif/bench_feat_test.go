package whatif

import (
	"github.com/nemo-gym/gymtrace/gate/filter"
	"github.com/nemo-gym/gymtrace/gate/groups"
	"testing"
	"time"
)

// BenchmarkFeatures measures the per-capture reports of filters, latency,
// cost and worth, export shaping and comparison over 1000 Gym-shaped
// rollouts under one job.
func BenchmarkFeatures(b *testing.B) {
	start := time.Now()
	snap := gymCapture(b, 1000, 5, 5, true, func(f *fleet) { f.Eager = true })
	b.Logf("capture: %d spans in %d rollouts, built in %v", snap.Stats.Stored, len(snap.Rollouts), time.Since(start))
	per := mustParse(b, "per_rollout")
	b.Run("filter", func(b *testing.B) {
		f := filter.MustParse("service=model dur>0s name~responses -status=error")
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if n := len(f.Rollouts(snap)); n != 1000 {
				b.Fatalf("%d rollouts match", n)
			}
		}
	})
	b.Run("latency", func(b *testing.B) {
		eng := NewEngine(groups.Default())
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			eng.Latency(snap, snap.Rollouts)
		}
	})
	b.Run("worth", func(b *testing.B) {
		eng := NewEngine(groups.Default())
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			eng.Worth(snap, per, 0)
		}
	})
	b.Run("export_spec", func(b *testing.B) {
		eng := NewEngine(groups.Default())
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			eng.ExportAll(snap, &per)
		}
	})
	b.Run("compare", func(b *testing.B) {
		ra, rb := snap.Rollouts[0], snap.Rollouts[1]
		a, c := RolloutSide(snap, ra), RolloutSide(snap, rb)
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			CompareRollouts(a, c)
		}
	})
}

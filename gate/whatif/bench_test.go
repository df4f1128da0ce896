package whatif

import (
	"context"
	"testing"
	"time"

	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/internal/cputime"
	"github.com/nemo-gym/gymtrace/model"
	"go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// BenchmarkGate compares what a span site costs with its group off (one
// Set.Has) and on (a span started and ended with the OTel Go SDK, recorded
// by an in-memory exporter through a simple processor).
func BenchmarkGate(b *testing.B) {
	spec := mustParse(b, "default")
	b.Run("disabled", func(b *testing.B) {
		b.ReportAllocs()
		n := 0
		for i := 0; i < b.N; i++ {
			if spec.Has(groups.Sandbox) {
				n++
			}
		}
		if n != 0 {
			b.Fatal("sandbox is not in default")
		}
	})
	b.Run("enabled", func(b *testing.B) {
		exp := tracetest.NewInMemoryExporter()
		tp := trace.NewTracerProvider(trace.WithSyncer(exp))
		defer tp.Shutdown(context.Background())
		tr := tp.Tracer("gym")
		ctx := context.Background()
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if spec.Has(groups.Server) {
				_, sp := tr.Start(ctx, "gym.sandbox.exec")
				sp.End()
			}
			if i%4096 == 0 {
				exp.Reset()
			}
		}
	})
}

func BenchmarkPreview(b *testing.B) {
	n := 10_000
	if testing.Short() {
		n = 1_000
	}
	start := time.Now()
	snap := gymCapture(b, n, 5, 5, true, func(f *fleet) { f.Eager = true })
	b.Logf("capture: %d spans in %d rollouts, built in %v", snap.Stats.Stored, len(snap.Rollouts), time.Since(start))
	all := mustParse(b, "all")
	b.Run("full", func(b *testing.B) {
		b.ReportAllocs()
		defer cputime.Timer(b)()
		for i := 0; i < b.N; i++ {
			NewEngine(g1c()).Preview(snap, all)
		}
	})
	// One toggle of a group every rollout holds: each step flips a different
	// group, more than the per-rollout cache remembers, so every rollout is
	// simulated again; classification stays cached.
	b.Run("toggle", func(b *testing.B) {
		e := NewEngine(g1c())
		e.Preview(snap, all)
		toggles := []groups.Group{groups.Agent, groups.ModelCall, groups.Verify, groups.Sandbox, groups.Rollout, groups.Job}
		b.ReportAllocs()
		b.ResetTimer()
		defer cputime.Timer(b)()
		for i := 0; i < b.N; i++ {
			e.Preview(snap, all.Toggle(toggles[i%len(toggles)]))
		}
	})
	// Toggling a group no rollout holds costs only the aggregation.
	b.Run("toggle_absent", func(b *testing.B) {
		e := NewEngine(g1c())
		e.Preview(snap, all)
		b.ReportAllocs()
		b.ResetTimer()
		defer cputime.Timer(b)()
		for i := 0; i < b.N; i++ {
			e.Preview(snap, all.Toggle(groups.Step))
		}
	})
}

func BenchmarkCheck(b *testing.B) {
	n := 10_000
	if testing.Short() {
		n = 1_000
	}
	snap := gymCapture(b, n, 5, 5, true, func(f *fleet) { f.Eager = true })
	now := time.Now()
	b.Run("full", func(b *testing.B) {
		b.ReportAllocs()
		defer cputime.Timer(b)()
		for i := 0; i < b.N; i++ {
			if rep := NewEngine(g1c()).Check(snap, now, 0); !rep.Intact {
				b.Fatal("healthy capture reported broken")
			}
		}
	})
	b.Run("cached", func(b *testing.B) {
		e := NewEngine(g1c())
		e.Check(snap, now, 0)
		b.ReportAllocs()
		b.ResetTimer()
		defer cputime.Timer(b)()
		for i := 0; i < b.N; i++ {
			e.Check(snap, now, 0)
		}
	})
}

// BenchmarkStructure finds the rollouts of a 1M-span capture by structure:
// from nothing (what check and a first preview pay), and again for a new
// snapshot in which one rollout changed (the live case: units cached per
// fragment version).
func BenchmarkStructure(b *testing.B) {
	n := 10_000
	if testing.Short() {
		n = 1_000
	}
	snap := gymCapture(b, n, 5, 5, true, func(f *fleet) { f.Eager = true })
	b.Run("fresh", func(b *testing.B) {
		b.ReportAllocs()
		defer cputime.Timer(b)()
		for i := 0; i < b.N; i++ {
			if st := NewEngine(groups.Default()).Structure(snap); len(st.Rollouts) == 0 {
				b.Fatal("no rollouts")
			}
		}
	})
	b.Run("cached_units", func(b *testing.B) {
		e := NewEngine(groups.Default())
		e.Structure(snap)
		b.ReportAllocs()
		b.ResetTimer()
		defer cputime.Timer(b)()
		for i := 0; i < b.N; i++ {
			// A copy of the snapshot is a new one to the engine; its
			// fragments keep their versions.
			s2 := *snap
			e.Structure(&s2)
		}
	})
	// The live case: each snapshot, ten rollouts changed (their fragments
	// at new versions, as when spans arrive for them).
	b.Run("changed_10", func(b *testing.B) {
		e := NewEngine(groups.Default())
		e.Structure(snap)
		b.ReportAllocs()
		b.ResetTimer()
		defer cputime.Timer(b)()
		for i := 0; i < b.N; i++ {
			e.Structure(changed(snap, 10, uint64(i+1)))
		}
	})
}

// changed returns a copy of snap in which n rollouts, spread over it, hold
// copies of their fragments at new versions (round tells the copies of
// successive calls apart).
func changed(snap *model.Snapshot, n int, round uint64) *model.Snapshot {
	s2 := *snap
	s2.Rollouts = append([]*model.Rollout(nil), snap.Rollouts...)
	for k := 0; k < n && len(s2.Rollouts) > 0; k++ {
		i := (k*len(s2.Rollouts)/n + int(round)) % len(s2.Rollouts)
		r := s2.Rollouts[i].Clone()
		r.Fragments = append([]*model.Fragment(nil), r.Fragments...)
		for j, f := range r.Fragments {
			g := *f
			g.Version ^= round<<40 | uint64(k+1)<<20
			r.Fragments[j] = &g
		}
		r.Version ^= round<<40 | uint64(k+1)<<20
		s2.Rollouts[i] = r
	}
	return &s2
}

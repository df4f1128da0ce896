package main

import (
	"io"
	"os"
	"testing"
	"time"

	"github.com/nemo-gym/gymtrace/gate/whatif"
	"github.com/nemo-gym/gymtrace/internal/cputime"
)

// BenchmarkCaptureFile runs what `check` and `preview` do to one large
// capture file, named by GYMTRACE_BENCH_CAPTURE (scripts/bigcapture.sh
// writes a 1M-span record of the simulated fleet): the whole commands, and
// their stages apart (reading the file into a store, the structure, the
// join check, the previews).
func BenchmarkCaptureFile(b *testing.B) {
	path := os.Getenv("GYMTRACE_BENCH_CAPTURE")
	if path == "" {
		b.Skip("GYMTRACE_BENCH_CAPTURE names no capture file (scripts/bigcapture.sh writes one)")
	}
	b.Run("check", func(b *testing.B) {
		b.ReportAllocs()
		defer cputime.Timer(b)()
		for i := 0; i < b.N; i++ {
			if code := runCheck([]string{path}, io.Discard, io.Discard); code != exitOK {
				b.Fatalf("check exited %d", code)
			}
		}
	})
	b.Run("preview", func(b *testing.B) {
		b.ReportAllocs()
		defer cputime.Timer(b)()
		for i := 0; i < b.N; i++ {
			if code := runPreview([]string{"--spec", "all", path}, io.Discard, io.Discard); code != exitOK {
				b.Fatalf("preview exited %d", code)
			}
		}
	})
	b.Run("read", func(b *testing.B) {
		b.ReportAllocs()
		defer cputime.Timer(b)()
		for i := 0; i < b.N; i++ {
			store, snap, _, err := loadCaptures([]string{path})
			if err != nil {
				b.Fatal(err)
			}
			if snap.Stats.Stored == 0 {
				b.Fatal("no spans")
			}
			store.Close()
		}
	})
	store, snap, _, err := loadCaptures([]string{path})
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	vc, err := chooseVariant("", snap)
	if err != nil {
		b.Fatal(err)
	}
	reg, err := loadRegistry(vc, "")
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("capture: %d spans, %d stored rollouts", snap.Stats.Stored, len(snap.Rollouts))
	b.Run("structure", func(b *testing.B) {
		b.ReportAllocs()
		defer cputime.Timer(b)()
		for i := 0; i < b.N; i++ {
			whatif.NewEngine(reg).Structure(snap)
		}
	})
	b.Run("engine_check", func(b *testing.B) {
		b.ReportAllocs()
		defer cputime.Timer(b)()
		for i := 0; i < b.N; i++ {
			whatif.NewEngine(reg).Check(snap, time.Now(), 0)
		}
	})
	all := reg.Resolve("all").Set
	b.Run("engine_preview_check", func(b *testing.B) {
		b.ReportAllocs()
		defer cputime.Timer(b)()
		for i := 0; i < b.N; i++ {
			e := whatif.NewEngine(reg)
			e.Preview(snap, all)
			e.Check(snap, time.Now(), 0)
		}
	})
	// What preview asks of its engine once the capture is read.
	def := reg.Resolve("")
	b.Run("preview_analysis", func(b *testing.B) {
		b.ReportAllocs()
		defer cputime.Timer(b)()
		for i := 0; i < b.N; i++ {
			e := whatif.NewEngine(reg)
			e.PreviewResolution(snap, def)
			rep := e.PreviewResolution(snap, reg.Resolve("all"))
			e.Check(snap, time.Now(), 0)
			e.TimingSpread(snap, rep)
			e.Worth(snap, all, whatif.DefaultSpanCost)
		}
	})
}
